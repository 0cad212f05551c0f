"""What the order-aware metamorphic baseline costs: policies never / auto / order / always.

Generates cases with the default generator (seed, count), then runs each case under the three
baseline policies in one process (policy order rotated per case, so that machine noise spreads
evenly) and prints, per policy, the mean wall time per case, how often the unscheduled
baseline was built, and what it found.  Timings on a shared machine are noisy: compare the
policies within one run, and note the load average printed with it.

    PYTHONPATH=. python benchmarks/baseline_cost.py [--cases 150] [--seed 7]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzzharness.execution.stages import execute  # noqa: E402
from fuzzharness.generators.cases import GenSettings, generate_case  # noqa: E402

POLICIES = ("never", "auto", "order", "always")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    cases = [generate_case(args.seed, i, GenSettings()) for i in range(args.cases)]
    for c in cases[:3]:  # warm up TVM outside the measurement
        execute(c)
    from fuzzharness.execution import tir_run as ex  # its cache of unscheduled builds

    def fresh():  # every policy pays for its own baseline builds
        ex.clear_baseline_cache()
    total = collections.Counter()
    built = collections.Counter()
    statuses = {p: collections.Counter() for p in POLICIES}
    baseline_time = collections.Counter()
    for i, case in enumerate(cases):
        k = i % len(POLICIES)
        order = POLICIES[k:] + POLICIES[:k]
        for policy in order:
            fresh()
            t0 = time.perf_counter()
            v = execute(case, baseline=policy).verdict
            total[policy] += time.perf_counter() - t0
            statuses[policy][v.status.value] += 1
            if "baseline" in v.timings:
                built[policy] += 1
                baseline_time[policy] += v.timings["baseline"]
    n = len(cases)
    print(f"{n} cases, seed {args.seed}, load average {os.getloadavg()[0]:.2f}")
    print(f"{'policy':<8}{'ms/case':>10}{'cases/s':>10}{'vs never':>10}{'built':>8}{'baseline ms':>13}  statuses")
    for p in POLICIES:
        per = total[p] / n
        print(f"{p:<8}{per * 1e3:>10.0f}{1 / per:>10.2f}{total[p] / total['never']:>10.2f}"
              f"{built[p]:>8}{baseline_time[p] / max(built[p], 1) * 1e3:>13.0f}  "
              + ", ".join(f"{k} {v}" for k, v in sorted(statuses[p].items())))


if __name__ == "__main__":
    main()
