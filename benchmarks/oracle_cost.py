"""What judging a case costs: per-stage time of two harness trees on the same cases, interleaved.

Compares two checkouts (e.g. the commit before a change of the oracle and after it) on the
same stream of default-generator cases: batch after batch, each tree runs the batch in a fresh
process (TVM imported and warmed up on two cases first, not timed), alternating which tree
goes first, so that the load of a shared machine falls on both alike.  Per tree it prints the
mean time per case of every stage (:attr:`fuzzharness.core.verdict.Verdict.timings`: generate,
schedule, lower, codegen, build, run, verify, baseline) and the total, and the ratio after /
before — the cost per case the change adds.  Graph cases are excluded (their pipeline is
another one).

    python benchmarks/oracle_cost.py --before /tmp/old-tree --after . [--cases 200] [--batch 20]

The trees must generate the same cases (the case ids are compared).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, time
from fuzzharness.execution.stages import execute
from fuzzharness.generators.cases import GenSettings, generate_case
seed, start, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
settings = GenSettings(graph_fraction=0.0)
for i in range(2):  # warm-up: TVM, LLVM, the emulation's helper kernels
    execute(generate_case(seed + 1, i, settings))
out = []
for i in range(start, start + n):
    try:  # a schedule that fails while it is drawn raises here (the same in both trees)
        case = generate_case(seed, i, settings)
    except Exception:
        continue
    v = execute(case).verdict
    out.append({"id": case.id, "status": v.status.value, "timings": v.timings})
print(json.dumps(out))
"""


def run(tree: str, seed: int, start: int, n: int) -> list[dict] | None:
    """The batch's results, or None when the process died (a case that crashes TVM)."""
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
    r = subprocess.run([sys.executable, "-c", _CHILD, str(seed), str(start), str(n)],
                       capture_output=True, text=True, env=env, cwd=tree)
    if r.returncode != 0:
        print(f"batch {start}..{start + n} in {tree}: exit {r.returncode}, dropped", file=sys.stderr)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    trees = {"before": args.before, "after": args.after}
    stages: dict[str, collections.Counter] = {k: collections.Counter() for k in trees}
    ids: dict[str, list[str]] = {k: [] for k in trees}
    statuses: dict[str, collections.Counter] = {k: collections.Counter() for k in trees}
    for b, start in enumerate(range(0, args.cases, args.batch)):
        n = min(args.batch, args.cases - start)
        order = ["before", "after"] if b % 2 == 0 else ["after", "before"]
        batch = {name: run(trees[name], args.seed, start, n) for name in order}
        if any(v is None for v in batch.values()):
            continue  # dropped for both trees alike
        for name in order:
            for r in batch[name]:
                ids[name].append(r["id"])
                statuses[name][r["status"]] += 1
                for stage, t in r["timings"].items():
                    stages[name][stage] += t
                stages[name]["total"] += sum(r["timings"].values())
    assert ids["before"] == ids["after"], "the trees generate different cases"
    n = len(ids["before"])
    load = os.getloadavg()[0]
    print(f"{n} cases (seed {args.seed}), batches of {args.batch} interleaved; load average {load:.1f}")
    names = ["generate", "schedule", "lower", "codegen", "build", "run", "verify", "baseline", "total"]
    print(f"{'stage':<10}{'before ms':>12}{'after ms':>12}{'after/before':>14}")
    for s in names:
        a, b = stages["before"][s] / n * 1e3, stages["after"][s] / n * 1e3
        ratio = f"{b / a:.2f}" if a > 0 else "-"
        print(f"{s:<10}{a:>12.1f}{b:>12.1f}{ratio:>14}")
    for name in trees:
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses[name].items())))


if __name__ == "__main__":
    main()
