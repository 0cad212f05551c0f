"""generate_case per case, this checkout against another one, side by side.

    python benchmarks/generation_cost.py --tree DIR [--cases 200] [--rounds 3] [--seed 1]
        [--no-hygiene]
    python benchmarks/generation_cost.py --parts [--cases 200] [--seed 1]

Each round starts two fresh processes at once, one core each: one generates with this
checkout, the other with the checkout ``DIR`` (e.g. ``git worktree add /tmp/base HEAD~1``).
Both generate cases ``0 .. N-1`` of one seed (the stream of ``benchmarks/throughput.py``:
llvm, no graph cases) after a warm-up (ten other cases, and TVM's tensor intrinsics, which a
worker registers once, off the case's clock), and time each ``generate_case``
call end to end (drawing, parsing the workload's TVMScript, scheduling, the trace's JSON).
Running the two at once cancels the host's drift (±15 % within minutes on the shared 2-core
machine), which sequential runs do not.  The children start with a worker's environment
(glibc's checking allocator and perturbation, as :mod:`fuzzharness.core.hygiene` sets it)
unless ``--no-hygiene``.

Printed: per round, each side's median and mean ms per case; then the median over rounds,
with min and max, and the ratio this/other.  Whether the two streams are the same cases is
``benchmarks/case_stream_digest.py``'s question, not this one's.

``--parts`` says where one ``generate_case`` goes, in this process (this checkout, the
environment it was started with): the same stream, each part's median and mean ms per case —
parsing the workload's TVMScript, drawing the schedule (TVM's primitives and the sites they
act on), the compiler options, the trace's JSON, the error model's reading of the program —
and the rest (the workload, its parameters, the inputs, the case record).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def child(tree: Path, seed: int, n: int) -> None:
    """Generate the stream with the code in ``tree``; print per-case ms as one JSON line."""
    from case_stream_digest import use_tree

    use_tree(tree)
    from fuzzharness.core import warmup
    from fuzzharness.generators.cases import GenSettings, generate_case

    settings = GenSettings(graph_fraction=0.0)

    def timed(index: int) -> float:
        t = time.perf_counter()
        try:
            generate_case(seed, index, settings)
        except Exception:  # noqa: BLE001 - a case whose scheduling fails costs time too
            pass
        return (time.perf_counter() - t) * 1000

    for i in range(10_000, 10_010):
        timed(i)
    warmup.tensor_intrinsics()  # a worker's one-time setup, off the case's clock there too
    print(json.dumps([timed(i) for i in range(n)]))


def parts(seed: int, n: int) -> None:
    """Time the parts of generate_case in this process (wrappers around the functions that
    ``generators/cases.py`` and the workloads call by name)."""
    import collections

    import fuzzharness.generators.cases as cases
    import fuzzharness.generators.workloads.base as workload_base

    spent: dict[str, float] = collections.defaultdict(float)

    def timed(module, name: str, label: str) -> None:
        fn = getattr(module, name)

        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[label] += time.perf_counter() - t
        setattr(module, name, wrapper)

    timed(workload_base, "parse_prim_func", "parse TVMScript")
    timed(cases, "draw_schedule", "draw the schedule")
    timed(cases, "draw_options", "compiler options")
    timed(cases, "trace_to_json", "trace JSON")
    timed(cases, "Numerics", "error model")
    from fuzzharness.core import warmup

    warmup.tensor_intrinsics()  # a worker's one-time setup, off the case's clock there too
    settings = cases.GenSettings(graph_fraction=0.0)
    per: dict[str, list[float]] = collections.defaultdict(list)
    for i in [*range(10_000, 10_010), *range(n)]:
        before = dict(spent)
        t = time.perf_counter()
        try:
            cases.generate_case(seed, i, settings)
        except Exception:  # noqa: BLE001 - a case whose scheduling fails costs time too
            pass
        if i >= 10_000:
            continue  # warm-up
        total = time.perf_counter() - t
        per["generate_case"].append(total)
        for label in spent:
            per[label].append(spent[label] - before.get(label, 0.0))
        per["the rest"].append(total - sum(spent[k] - before.get(k, 0.0) for k in spent))
    print(f"generate_case in one process, {n} cases of seed {seed} (ms per case):")
    for label, values in per.items():
        print(f"  {label:18s} median {1000 * statistics.median(values):6.2f}   "
              f"mean {1000 * statistics.mean(values):6.2f}")


def start(tree: Path, args: argparse.Namespace) -> subprocess.Popen:
    from hygiene_cost import environment

    env = environment("neither" if args.no_hygiene else "checks+zones")
    return subprocess.Popen([sys.executable, __file__, "--child", str(tree), "--seed",
                             str(args.seed), "--cases", str(args.cases)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT)


def finish(name: str, proc: subprocess.Popen) -> list[float]:
    out, err = proc.communicate()
    lines = [ln for ln in out.splitlines() if ln.startswith("[")]
    if proc.returncode or not lines:
        raise SystemExit(f"{name}: the child failed (exit {proc.returncode}):\n{err[-2000:]}")
    return json.loads(lines[-1])


def spread(values: list[float]) -> str:
    v = sorted(values)
    return f"{statistics.median(v):.2f} ({v[0]:.2f}–{v[-1]:.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, help="the other checkout (required)")
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-hygiene", action="store_true",
                    help="children without the checking allocator and perturbation")
    ap.add_argument("--parts", action="store_true",
                    help="where generate_case goes, part by part, in this process")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.parts:
        parts(args.seed, args.cases)
        return 0
    if args.child:
        child(args.child.resolve(), args.seed, args.cases)
        return 0
    if args.tree is None:
        ap.error("--tree DIR is required: the checkout to compare with")
    other = args.tree.resolve()
    if not (other / "fuzzharness").is_dir():
        print(f"generation_cost: {other} is not a checkout of this project (no fuzzharness/)",
              file=sys.stderr)
        return 2
    sides = {"this": ROOT, "other": other}
    medians: dict[str, list[float]] = {name: [] for name in sides}
    ratios = []
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))  # who starts first
        procs = {name: start(sides[name], args) for name in order}
        got = {name: finish(name, procs[name]) for name in order}
        for name in sides:
            medians[name].append(statistics.median(got[name]))
        ratios.append(medians["this"][-1] / medians["other"][-1])
        print(f"round {r + 1}: " + "   ".join(
            f"{name} median {statistics.median(got[name]):.2f} ms, mean "
            f"{statistics.mean(got[name]):.2f}" for name in sides), flush=True)
    print(f"generate_case median ms per case over {args.rounds} rounds of {args.cases} cases "
          f"(seed {args.seed}, {'no hygiene' if args.no_hygiene else 'worker hygiene'}):")
    print(f"  this  ({ROOT}): {spread(medians['this'])}")
    print(f"  other ({other}): {spread(medians['other'])}")
    print(f"  this/other: {spread(ratios)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
