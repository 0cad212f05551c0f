"""Zero false alarms on graph cases: run default graph cases and count every verdict.

    python benchmarks/graph_false_alarms.py [--cases 300] [--seed 1] [--target llvm|adreno]

Every case is a correct compilation of a correct graph unless TVM is wrong, so every
``wrong_result`` / ``nan_inf`` must be explained by a TVM bug (the script prints each with
its graph) — a reference or bound that fails a correct TVM is a false alarm.  Prints the
status counts per mode, how often an output element was unbounded (inconclusive), the
distribution of the worst error/bound ratio of passing cases (how much room the bound
leaves), and the seconds per case (generation and execution, in-process, 1 core).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--target", default="llvm")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    from fuzzharness.engine.tasks import _generation_failure
    from fuzzharness.execute import execute
    from generators.cases import TARGET_PRESETS, GenSettings, generate_case

    settings = GenSettings(workloads=("graph",), target=dict(TARGET_PRESETS[args.target]))
    by_mode: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    ratios: list[float] = []
    alarms = []
    gen_s = run_s = 0.0
    t_all = time.perf_counter()
    for i in range(args.cases):
        t0 = time.perf_counter()
        try:
            case = generate_case(args.seed, i, settings)
        except Exception as e:  # noqa: BLE001 - TVM failing while schedules are drawn
            v = _generation_failure(e)
            by_mode["(generation)"][v.status.value] += 1
            if not args.quiet:
                print(f"#{i} generation: {v.line()[:200]}")
            continue
        t1 = time.perf_counter()
        v = execute(case).verdict
        t2 = time.perf_counter()
        gen_s += t1 - t0
        run_s += t2 - t1
        mode = case.schedule["source"] + ("+" + case.schedule["layout"] if case.schedule.get("layout") else "")
        by_mode[mode][v.status.value] += 1
        by_mode["(all)"][v.status.value] += 1
        if v.status.value == "pass" and v.ratio is not None:
            ratios.append(v.ratio)
        if v.status.value in ("wrong_result", "nan_inf", "harness_error", "reference_mismatch"):
            alarms.append((i, case, v))
            print(f"#{i} {mode} {case.params['dtype']} {case.origin.get('ops')}: {v.line()[:300]}")
        elif not args.quiet and v.status.value != "pass":
            print(f"#{i} {mode}: {v.line()[:200]}")
    total = time.perf_counter() - t_all
    print(f"\n{args.cases} graph cases, seed {args.seed}, target {args.target}: {total:.1f} s "
          f"({gen_s / max(args.cases, 1):.3f} s generate + {run_s / max(args.cases, 1):.3f} s "
          f"execute per case); load average {os.getloadavg()[0]:.2f}")
    for mode in sorted(by_mode):
        print(f"  {mode:<34} " + "  ".join(f"{k} {n}" for k, n in sorted(by_mode[mode].items())))
    if ratios:
        qs = sorted(ratios)
        pick = [qs[int(q * (len(qs) - 1))] for q in (0.5, 0.9, 0.99)] + [qs[-1]]
        print("  worst error/bound of passing cases: median {:.3g}, p90 {:.3g}, p99 {:.3g}, "
              "max {:.3g}".format(*pick))
    print(f"  alarms (wrong_result / nan_inf / harness_error): {len(alarms)}")
    return 1 if alarms else 0


if __name__ == "__main__":
    sys.exit(main())
