"""How often the pass probe's culprit is confirmed by a fix test, on a campaign's verified repros.

    python benchmarks/culprit_confirmation.py CAMPAIGN_DIR [--limit N] [--budget 90]

For every verified TIR repro under ``CAMPAIGN_DIR/repros`` (``finding.json`` + ``case.json``
+ ``repro.py``) this runs the current pass probe (:func:`fuzzharness.kinds.tir.pass_bisect.triage`)
on the minimized case again, takes the culprit it names
(:func:`fuzzharness.buckets.root_causes.culprit_of`) and runs the fix test
(:func:`fuzzharness.repro.package.fix_test_outcome`, as the harness records it: the repro
script with that pass disabled must say fixed).  It prints, beside what the campaign stored in ``finding.json`` when it ran: how many
repros named a culprit pass (neither "schedule" nor unknown), how many of those a fix test
confirmed (a pass that raised is its own evidence), and the ones it did not.  Issue 25's goal:
≥ 80 % of named culprits confirmed, titles name only confirmed ones.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def expect_of(script: str) -> dict:
    """The ``EXPECT = {...}`` literal a repro script states (symptom, error pattern)."""
    m = re.search(r"^EXPECT = (\{.*\})$", script, re.M)
    return ast.literal_eval(m.group(1)) if m else {}


def probe(d: Path, budget: float) -> tuple[str, str]:
    """(culprit, fix-test outcome) of the current probe on repro dir ``d``."""
    from fuzzharness.buckets.root_causes import culprit_of
    from fuzzharness.core.case import Case
    from fuzzharness.core.verdict import Verdict
    from fuzzharness.kinds.tir.pass_bisect import triage
    from fuzzharness.repro.package import fix_test_outcome

    case = Case.from_json((d / "case.json").read_text())
    expect = expect_of((d / "repro.py").read_text())
    symptom = expect.get("symptom", "")
    verdict = None  # the minimized case's verdict (the probe takes the deciding check's inputs)
    r = subprocess.run([sys.executable, "-m", "fuzzharness", "replay", str(d / "case.json"), "--json"],
                       capture_output=True, text=True, cwd=ROOT)
    try:
        verdict = Verdict.from_dict(json.loads(r.stdout))
    except (json.JSONDecodeError, KeyError, ValueError):
        pass
    with tempfile.TemporaryDirectory() as work:
        t = triage(case, symptom=symptom, pattern=expect.get("error"), workdir=Path(work),
                   budget=budget, verdict=verdict)
    culprit = culprit_of(t, symptom)
    return culprit, fix_test_outcome(d / "repro.py", culprit, t)  # what the harness records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaign", type=Path)
    ap.add_argument("--limit", type=int, default=0, help="at most this many repros (0: all)")
    ap.add_argument("--budget", type=float, default=90.0, help="seconds per probe (the harness's)")
    args = ap.parse_args(argv)
    from fuzzharness.core.kinds import kind_of
    from fuzzharness.core.plugins import load_plugins

    load_plugins()
    dirs = []
    for f in sorted((args.campaign / "repros").glob("*/finding.json")):
        d = f.parent
        finding = json.loads(f.read_text())
        if (d / "case.json").exists() and (d / "repro.py").exists() and \
                kind_of(json.loads((d / "case.json").read_text())).name == "tir":
            dirs.append((d, finding))
    if args.limit:
        dirs = dirs[: args.limit]
    if not dirs:
        print(f"no verified TIR repros under {args.campaign / 'repros'}", file=sys.stderr)
        return 2
    stored, now = Counter(), Counter()
    unconfirmed = []
    for d, finding in dirs:
        old = finding.get("culprit") or ""
        named_then = old not in ("", "schedule")
        stored["named"] += named_then
        stored["confirmed"] += named_then and bool(finding.get("culprit_confirmed"))
        culprit, test = probe(d, args.budget)
        now[culprit if culprit in ("", "schedule") else "named"] += 1
        now["confirmed"] += test in ("confirmed", "raised in it")
        if test == "not confirmed":
            unconfirmed.append(f"{d.name} {culprit}")
        print(f"  {d.name}  stored: {old or '-'}{' (confirmed)' if finding.get('culprit_confirmed') else ''}"
              f"  now: {culprit or '-'} {test}", flush=True)
    n = len(dirs)
    print(f"{n} verified TIR repros under {args.campaign}")
    for label, c in (("stored (when the campaign ran)", stored), ("current probe", now)):
        share = f"{100 * c['confirmed'] / c['named']:.0f} %" if c["named"] else "-"
        print(f"  {label}: culprit passes named {c['named']}, confirmed by a fix test "
              f"{c['confirmed']} ({share}; goal >= 80 %)")
    print(f"  current probe: 'schedule' {now['schedule']}, unknown {now['']}")
    for line in unconfirmed:
        print(f"    not confirmed: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
