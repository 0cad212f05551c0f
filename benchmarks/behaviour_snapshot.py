"""Same seed, same behaviour?  A snapshot of a campaign's cases and verdicts, and a diff of two.

Runs ``fuzzharness run`` (the installed harness, or whatever ``--python``/``PYTHONPATH``
select) with a fixed seed and case count, then writes, per case index: the case id, the
status, the stage and the bucket key.  Two snapshots — say, before and after a refactoring,
or two runs of the same code — are compared with ``--diff A.json B.json``, which prints how
many case ids, statuses and bucket keys agree and lists the differences.

    python benchmarks/behaviour_snapshot.py --seed 20261124 --cases 250 --out before.json
    python benchmarks/behaviour_snapshot.py --diff before.json after.json

This prints numbers; it is not a test (a campaign with a persistent worker can carry heap
damage from one case into the next, so a few verdicts may differ between two runs of the
same code: run the same snapshot twice to see that noise).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from fuzzharness import store


def snapshot(seed: int, cases: int, workers: int, python: str, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "campaign"
        cmd = [python, "-m", "fuzzharness", "run", "--seed", str(seed), "--max-cases", str(cases),
               "--time-budget", "0", "--workers", str(workers), "--no-minimize",
               "--out", str(out), *extra]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode not in (0, 1):
            sys.exit(f"campaign failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
        db = next(out.rglob("results.sqlite"))
        con = sqlite3.connect(db)
        rows = store.result_rows(con, ("idx", "case_id", "status", "stage", "bucket"))
        result = {str(i): {"case_id": c, "status": s, "stage": st, "bucket": b}
                  for i, c, s, st, b in rows}
        con.close()
    return {"seed": seed, "cases": cases, "workers": workers, "results": result}


def diff(a: dict, b: dict) -> int:
    ra, rb = a["results"], b["results"]
    common = sorted(set(ra) & set(rb), key=int)
    print(f"indices: {len(ra)} vs {len(rb)}, {len(common)} in both")
    bad = 0
    for field in ("case_id", "status", "stage", "bucket"):
        differ = [i for i in common if ra[i][field] != rb[i][field]]
        print(f"  {field:8s} equal in {len(common) - len(differ)} of {len(common)}")
        for i in differ[:20]:
            print(f"      #{i}: {ra[i][field]} -> {rb[i][field]}   ({ra[i]['status']} / {rb[i]['status']})")
        bad += len(differ)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20261124)
    ap.add_argument("--cases", type=int, default=250)
    ap.add_argument("--workers", type=int, default=1, help="1: each case follows the same ones")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--diff", nargs=2, type=Path, metavar=("A", "B"))
    ap.add_argument("extra", nargs="*", help="further `fuzzharness run` arguments (after --)")
    args = ap.parse_args()
    if args.diff:
        return diff(*(json.loads(p.read_text()) for p in args.diff))
    snap = snapshot(args.seed, args.cases, args.workers, args.python, args.extra)
    text = json.dumps(snap, indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text + "\n")
    statuses: dict[str, int] = {}
    for r in snap["results"].values():
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print(f"{len(snap['results'])} cases: {json.dumps(statuses, sort_keys=True)}"
          + (f" -> {args.out}" if args.out else ""))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("FUZZHARNESS_MINIMIZE_BUDGET", "0")
    sys.exit(main())
