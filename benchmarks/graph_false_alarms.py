"""Zero false alarms on graph cases: a campaign of default graph cases, every verdict counted.

    python benchmarks/graph_false_alarms.py [--cases 300] [--seed 1] [--workers 2]
                                            [--target llvm|adreno] [--out DIR]

Runs a real campaign restricted to graph cases (``--workloads graph``: worker processes, so
a miscompiled kernel that corrupts memory or crashes only costs its own case) and prints, per
mode, the status counts; how many cases had elements the error model could not judge
(inconclusive); the worst error/bound of passing cases (the room the bound leaves); and every
alarm — ``wrong_result``, ``nan_inf``, ``harness_error`` — with its graph, mode and bucket
(known TVM bug or new).  Each alarm must be explained by a TVM bug (the known-bugs file, or
a minimized repro); an alarm on a correct compilation is a false alarm of the reference or
its bound.  Seconds per case and the load average are printed (the machine may be shared).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from fuzzharness import store

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ALARMS = ("wrong_result", "nan_inf", "harness_error")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--target", default="llvm")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.campaign.driver import Campaign
    from fuzzharness.campaign.settings import CampaignSettings
    from fuzzharness.core.tvm_support import versions
    from fuzzharness.core.verdict import Verdict
    from fuzzharness.generators.cases import TARGET_PRESETS, GenSettings

    gen = GenSettings(workloads=("graph",), target=dict(TARGET_PRESETS[args.target]))
    settings = CampaignSettings(seed=args.seed, time_budget=0.0, max_cases=args.cases,
                                workers=args.workers, generation=gen)
    tmp = tempfile.TemporaryDirectory()
    out = args.out or Path(tmp.name) / "run"
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    Campaign(out, settings, progress=False).run()
    wall = time.perf_counter() - t0
    con = sqlite3.connect(out / "results.sqlite")
    rows = store.result_rows(con, ("idx", "case_json", "verdict_json")).fetchall()
    con.close()
    known = KnownBugs.load()
    tvm_version = versions()["tvm"]
    by_mode: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    ratios: list[float] = []
    unjudged = 0
    alarms = []
    for idx, case_json, verdict_json in rows:
        v = Verdict.from_dict(json.loads(verdict_json))
        case = json.loads(case_json) if case_json else None
        if case is None:
            mode = "(generation failed)"
        else:
            s = case["schedule"]
            mode = s["source"] + (f"+{s['layout']}" if s.get("layout") else "")
        by_mode[mode][v.status.value] += 1
        by_mode["(all)"][v.status.value] += 1
        if v.details.get("inconclusive"):
            unjudged += 1
        if v.status.value == "pass" and v.ratio is not None:
            ratios.append(v.ratio)
        if v.status.value in ALARMS:
            sig = signature(case, v)
            bug = known.match(sig, tvm_version) if sig is not None else None
            alarms.append((idx, case, v, bug))
    print(f"{len(rows)} graph cases, seed {args.seed}, target {args.target}, {args.workers} "
          f"workers: {wall:.1f} s ({len(rows) / wall:.2f} cases/s); load average "
          f"{load0:.2f} → {os.getloadavg()[0]:.2f}")
    for mode in sorted(by_mode):
        print(f"  {mode:<34} " + "  ".join(f"{k} {n}" for k, n in sorted(by_mode[mode].items())))
    print(f"  cases with elements the error model could not judge: {unjudged}")
    if ratios:
        qs = sorted(ratios)
        pick = [qs[int(q * (len(qs) - 1))] for q in (0.5, 0.9, 0.99)] + [qs[-1]]
        print("  worst error/bound of passing cases: median {:.3g}, p90 {:.3g}, p99 {:.3g}, "
              "max {:.3g}".format(*pick))
    print(f"  alarms: {len(alarms)} ({sum(1 for a in alarms if a[3])} match known TVM bugs)")
    for idx, case, v, bug in alarms:
        ops = ",".join(case["origin"].get("ops") or []) if case else "?"
        mode = case["schedule"]["source"] if case else "?"
        label = f"known: {bug.id}" if bug else "NEW"
        print(f"    #{idx} [{label}] {mode} {case['workload']['params']['dtype'] if case else ''} "
              f"{ops}: {v.line()[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
