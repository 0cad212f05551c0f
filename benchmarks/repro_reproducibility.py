"""Done-when numbers for minimized repros: trace lengths, minimization time, N-of-N runs.

    python benchmarks/repro_reproducibility.py CAMPAIGN_DIR [--python /path/to/clean/venv/python] [--runs 10]

For every verified repro recorded in the campaign's database it prints the original and the
minimized trace length, the ratio, the minimization time and how many of ``--runs`` fresh,
isolated runs (``python -I repro.py``) of the script exited 1 (the bug reproduces) — with
``--python`` pointing at a virtual environment that has only apache-tvm, apache-tvm-ffi and
numpy installed, this is the "standalone in a clean venv" check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzzharness.campaign.db import ResultsDB  # noqa: E402
from fuzzharness.repro.verify import run_script  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("campaign", type=Path)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    db = ResultsDB(args.campaign)
    rows = [r for r in db.repros() if r["reproduced"]]
    db.close()
    print(f"{'bucket':<17} {'symptom':<14} {'orig':>4} {'min':>4} {'ratio':>6} {'min s':>6} "
          f"{'reproduced':>10}  title")
    for r in rows:
        script = Path(r["path"]) / "repro.py"
        ok = sum(run_script(script, python=args.python).exit_code == 1 for _ in range(args.runs))
        orig, length = r["original_length"], r["length"]
        ratio = f"{length / orig:.2f}" if orig and orig > 0 and length is not None else "-"
        sym = (r["signature"] or {}).get("symptom", "?")
        print(f"{r['bucket']:<17} {sym:<14} {orig if orig is not None else '-':>4} "
              f"{length if length is not None else '-':>4} {ratio:>6} "
              f"{(r['minimize_seconds'] or 0):>6.1f} {ok:>4}/{args.runs:<5}  {r['title'][:70]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
