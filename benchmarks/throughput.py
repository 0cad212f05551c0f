"""Harness throughput vs a bare in-process loop, on the same stream of cases.

    python benchmarks/throughput.py [--cases 400] [--seed 1] [--workers 1,2] [--warmup 10]
        [--repeats 3] [--two-bare]

The stream: cases ``0 .. N-1`` of one campaign seed (default generation settings, llvm,
without whole-graph cases — the bare loop compiles single PrimFuncs; what the graph share
costs a campaign is measured by ``benchmarks/graph_mix.py``).

*bare*     one process, no isolation, no database, no oracle model: for each case, generate
           it, parse its workload, replay its trace, ``tvm.compile``, run on numpy inputs and
           compare with a float64 numpy reference (``np.allclose``).  The least work a fuzz
           loop over these cases can do.
*harness*  a real campaign (``fuzzharness.campaign.driver.Campaign``) with 1 and 2 worker
           processes: generation and execution in the workers, the stage split, poisoned
           outputs, error-bound oracle, crash isolation, a SQLite commit per case, buckets.

Rates are steady-state: the bare loop is timed after ``--warmup`` cases (TVM import and
first compiles excluded); the harness rate is taken from the commit times stored in the
database, from the result after the first one per worker to the last (worker start-up —
importing TVM — excluded; it is printed separately as the end-to-end rate).  One-time setups
that a process pays on its first MetaSchedule case (importing TVM's tensor intrinsics:
seconds, see ``fuzzharness/warmup.py``) are paid before timing on both sides — by the bare
process during its warm-up, by each worker at start-up (``$FUZZHARNESS_WARM_START``; the
same fast path, :func:`fuzzharness.core.warmup.tensor_intrinsics`) — as they would otherwise land inside the harness's window alone, once per worker
(``--cold-setups`` leaves them where they fall).  Each run prints
the 1-minute load average before and after: the machine may be shared, and a ratio is only
meaningful when the load did not change under it.  The bare loop runs first and last; the
difference between the two is the noise floor.

``--repeats R`` runs the round (bare, harness per worker count, bare again) R times and the
summary gives each ratio's median with its min and max: one round's ratio is not a result on
a machine whose speed drifts by ±15 % within minutes.  ``--two-bare`` adds the reference for
scaling: one bare loop in a fresh process, then two side by side (fresh processes
started together, taking the cases from one queue: :func:`bare_loops`): the harness's
1 → 2 worker scaling is compared with theirs.

Last, an *interleaved* in-process comparison that shrugs off load changes: case by case,
the bare loop's work and the worker's own task function (``run_task``: generate, replay,
stage-split build, run, oracle) alternate in one process.  It isolates the per-case work
of the harness from its process and database machinery.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def bare_loop(seed: int, indices: range, per_case: dict[int, float] | None = None
              ) -> tuple[float, dict[str, int]]:
    """Seconds for the bare loop over ``indices``; outcome counts (``per_case``: filled with
    each case's seconds)."""
    import tvm

    from fuzzharness.core.tvm_support import replay_trace
    from fuzzharness.generators.cases import GenSettings, generate_case
    from fuzzharness.generators.inputs import make_inputs
    from fuzzharness.generators.workloads import workloads
    from fuzzharness.oracles.numerics import numpy_dtype
    from fuzzharness.oracles.program import Numerics

    settings = GenSettings(graph_fraction=0.0)
    outcomes = {"ok": 0, "mismatch": 0, "error": 0}
    t0 = time.perf_counter()
    for i in indices:
        t_case = time.perf_counter()
        try:  # a TVM error while the schedule is drawn is a failure the harness records too
            case = generate_case(seed, i, settings)
            wl = workloads[case.workload_name]
            func = wl.prim_func(case.params)
            sch = replay_trace(func, case.trace)
            lib = tvm.compile(sch.mod, target=case.target)
            specs, outs = wl.inputs(case.params), wl.outputs(case.params)
            inputs = make_inputs(specs, case.inputs["distribution"], case.inputs["seed"])
            args = [tvm.runtime.tensor(inputs[s.name]) for s in specs]
            args += [tvm.runtime.tensor(np.zeros(o.shape, numpy_dtype(o.dtype))) for o in outs]
            lib["main"](*args)
            ref = wl.reference(case.params, inputs, Numerics(func))
            ok = all(np.allclose(a.numpy().astype(np.float64), ref[o.name].value,
                                 rtol=1e-2, atol=1e-2)
                     for o, a in zip(outs, args[len(specs):], strict=True))
            outcomes["ok" if ok else "mismatch"] += 1
        except Exception:  # noqa: BLE001 - schedule rejections and compile errors are cases too
            outcomes["error"] += 1
        if per_case is not None:
            per_case[i] = time.perf_counter() - t_case
    return time.perf_counter() - t0, outcomes


#: set for the workers: they pay the one-time setups of fuzzharness/core/warmup.py before they
#: say "ready", the same way the bare process does in its warm-up
from fuzzharness import store  # noqa: E402
from fuzzharness.engine.worker import WARM_START_ENV  # noqa: E402


def harness_run(seed: int, n: int, workers: int, out: Path, *, cold_setups: bool = False) -> dict:
    import sqlite3

    saved = os.environ.get(WARM_START_ENV)
    if not cold_setups:  # the workers inherit the driver's environment
        os.environ[WARM_START_ENV] = "1"

    from fuzzharness.campaign.driver import Campaign
    from fuzzharness.campaign.settings import CampaignSettings
    from fuzzharness.generators.cases import GenSettings

    settings = CampaignSettings(seed=seed, time_budget=0.0, max_cases=n, workers=workers,
                                generation=GenSettings(graph_fraction=0.0))
    t0 = time.perf_counter()
    try:
        summary = Campaign(out, settings, progress=False).run()
    finally:
        if saved is None:
            os.environ.pop(WARM_START_ENV, None)
        else:
            os.environ[WARM_START_ENV] = saved
    wall = time.perf_counter() - t0
    con = sqlite3.connect(out / "results.sqlite")
    finished = sorted(r[0] for r in store.result_rows(con, ("finished",)))
    timings: dict[str, list[float]] = {}

    for (vj,) in store.result_rows(con, ("verdict_json",)):
        for k, v in json.loads(vj).get("timings", {}).items():
            timings.setdefault(k, []).append(v)
    con.close()
    steady = (len(finished) - workers) / (finished[-1] - finished[workers - 1])
    return {"wall": wall, "rate_e2e": n / wall, "rate": steady, "counts": summary.counts,
            "timings": dict(sorted(timings.items()))}


def interleaved(seed: int, n: int) -> tuple[float, float]:
    """Seconds of bare work and of ``run_task`` work over the same cases, alternated."""
    from fuzzharness.engine.tasks import run_task
    from fuzzharness.generators.cases import GenSettings

    gen = GenSettings(graph_fraction=0.0).to_dict()
    bare = task = 0.0
    for i in range(n):
        t = time.perf_counter()
        bare_loop(seed, range(i, i + 1))
        bare += time.perf_counter() - t
        t = time.perf_counter()
        run_task({"task": i, "generate": {"seed": seed, "index": i, "settings": gen}},
                 lambda msg: None)
        task += time.perf_counter() - t
    return bare, task


def side_by_side(seed: int, n: int, warmup_cases: int) -> None:
    """The harness (a real ``fuzzharness run``, 1 worker, hygiene and confirmation on) and the
    bare loop at the same time, one core each, over the same cases: both see the same machine,
    so a shared host's speed drifting under a run (±20 % within minutes here) cancels out.
    Compared per case over the cases both ran after ``warmup_cases``: the bare loop's time
    against the worker's (``results.elapsed``, the case's time in the worker); the CPU that
    confirming failures took is printed beside it (it runs in other processes).  Bias: the
    campaign's driver and its confirmation re-runs share the bare loop's core, so on a 2-core
    machine this flatters the harness; read it with the sequential ratios."""
    import resource
    import sqlite3
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "campaign"
        env = dict(os.environ, **{WARM_START_ENV: "1"})
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen(
            [sys.executable, "-m", "fuzzharness", "run", "--seed", str(seed), "--max-cases", str(n),
             "--workers", "1", "--target", "llvm", "--graph-fraction", "0", "--no-minimize",
             "--no-progress", "-q", "--out", str(out)], env=env, cwd=tmp,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        bare: dict[int, float] = {}
        bare_loop(seed, range(n), bare)
        proc.wait()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        con = sqlite3.connect(out / "results.sqlite")
        worker = dict(store.result_rows(con, ("idx", "elapsed")))
        confirmed = store.confirmation_count(con)
        con.close()
    both = [i for i in range(warmup_cases, n) if i in bare and i in worker]
    b, h = sum(bare[i] for i in both), sum(worker[i] for i in both)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"side by side, {len(both)} cases (#{warmup_cases}..#{n - 1}): bare {b:.1f} s, harness "
          f"worker {h:.1f} s → harness/bare {b / h:.3f}; {confirmed} failures confirmed alone; "
          f"the campaign's processes used {cpu:.0f} s CPU in all ({load()})")


def spread(values: list[float], unit: str = "") -> str:
    """``median (min–max over k)`` of repeated ratios."""
    v = sorted(values)
    if len(v) == 1:
        return f"{v[0]:.3f}{unit}"
    return f"{float(np.median(v)):.3f}{unit} (min {v[0]:.3f}, max {v[-1]:.3f}, {len(v)} repeats)"


def one_round(seed: int, n: int, worker_counts: list[int], tag: str, cold_setups: bool
              ) -> tuple[dict[int, float], float]:
    """Bare loop, the harness with each worker count, bare loop again: the harness's steady
    rates and the mean of the two bare rates (their difference is the noise floor)."""
    before = load()
    bare_s, bare_out = bare_loop(seed, range(n))
    print(f"{tag}bare loop          {n / bare_s:6.2f} cases/s  ({bare_s:.1f} s; {bare_out}; "
          f"{before} → {load()})")
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for w in worker_counts:
            before = load()
            h = harness_run(seed, n, w, Path(tmp) / f"w{w}", cold_setups=cold_setups)
            rates[w] = h["rate"]
            print(f"{tag}harness {w} worker{'s' if w > 1 else ' '} {h['rate']:6.2f} cases/s "
                  f"steady, {h['rate_e2e']:.2f} end to end ({h['wall']:.1f} s; {before} → "
                  f"{load()})   ratio to bare {h['rate'] / n * bare_s:.3f}")
            # Medians say what a typical case costs; means (over all n cases, a stage a case
            # did not reach counting 0) add the rare slow ones and one-time setups (e.g. the
            # first MetaSchedule case imports TVM's tensor intrinsics, seconds).
            print("    per case (worker-side), median: " + ", ".join(
                f"{k} {np.median(v) * 1000:.1f} ms" for k, v in h["timings"].items()))
            print("    per case (worker-side), mean:   " + ", ".join(
                f"{k} {sum(v) / n * 1000:.1f} ms" for k, v in h["timings"].items()))
    before = load()
    bare2_s, _ = bare_loop(seed, range(n))
    print(f"{tag}bare loop again    {n / bare2_s:6.2f} cases/s  ({bare2_s:.1f} s; {before} → "
          f"{load()})")
    return rates, (n / bare_s + n / bare2_s) / 2


def bare_loops(seed: int, n: int, loops: int) -> float:
    """Cases/s of ``loops`` bare loops at once, each a fresh process: with 2, what two
    workers could reach on this machine; with 1, the same fresh-process loop alone (the fair
    reference for the scaling: a fresh process runs faster than this long-lived one).  Each
    process warms up first and starts its timed loop when all are ready.

    The loops take the cases ``0 .. n-1`` from one queue, the next index whenever one is
    free, as the harness's workers do, and the rate is ``n`` over the time from the start to
    the end of the last loop.  (A fixed even/odd split, as this did first, summed each
    loop's own rate: the loop whose share ends first leaves the other a core of its own, and
    the 200 cases' costs are uneven enough that two loops came out at up to 2.27x one.)"""
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        go = Path(tmp) / "go"
        (Path(tmp) / "next").write_text("0")
        procs = [subprocess.Popen([sys.executable, __file__, "--bare-part", f"{k}/{loops}",
                                   "--seed", str(seed), "--cases", str(n), "--go", str(go)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                 for k in range(loops)]
        while len(list(Path(tmp).glob("ready-*"))) < loops and all(p.poll() is None for p in procs):
            time.sleep(0.1)
        go.touch()
        start = time.time()
        outs = [p.communicate()[0].splitlines() for p in procs]
    if not all(outs):  # a bare loop runs kernels unisolated: one may take its process down
        raise SystemExit(f"a bare loop process died (exit {[p.returncode for p in procs]})")
    parts = [json.loads(out[-1]) for out in outs]
    assert sum(p["done"] for p in parts) == n, parts
    return n / (max(p["end"] for p in parts) - start)


def next_index(counter: Path, n: int) -> int | None:
    """The next case of the queue shared by :func:`bare_loops`' processes (a locked file)."""
    import fcntl

    with open(counter, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        i = int(f.read())
        if i >= n:
            return None
        f.seek(0)
        f.write(str(i + 1))
        f.truncate()
        return i


def bare_part(part: str, seed: int, n: int, go: Path) -> None:
    """The child of :func:`bare_loops`: the bare loop over the cases it takes from the queue;
    prints how many and when it ended."""
    k, _ = (int(x) for x in part.split("/"))
    bare_loop(seed + 1000 + k, range(10))
    from fuzzharness.core import warmup

    warmup.tensor_intrinsics()
    (go.parent / f"ready-{k}").touch()
    while not go.exists():
        time.sleep(0.01)
    done = 0
    while (i := next_index(go.parent / "next", n)) is not None:
        bare_loop(seed, range(i, i + 1))
        done += 1
    print(json.dumps({"done": done, "end": time.time()}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=400)  # fewer: fresh workers' warm-up dominates
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--cold-setups", action="store_true",
                    help="do not pay one-time setups before timing (see the module docstring)")
    ap.add_argument("--side-by-side", type=int, default=0, metavar="ROUNDS",
                    help="only the side-by-side comparison (see side_by_side), ROUNDS times")
    ap.add_argument("--interleaved", type=int, default=60, metavar="N",
                    help="cases for the interleaved in-process comparison (0: skip)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="rounds of bare / harness / bare (the summary gives median and spread)")
    ap.add_argument("--two-bare", action="store_true",
                    help="also time one and two bare loops in fresh processes (two side by "
                         "side: what 2 workers could reach)")
    ap.add_argument("--bare-part", help=argparse.SUPPRESS)
    ap.add_argument("--go", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    n, seed = args.cases, args.seed
    if args.bare_part:
        bare_part(args.bare_part, seed, n, args.go)
        return 0
    worker_counts = [int(w) for w in args.workers.split(",")]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"throughput: {n} cases of seed {seed}, {cpus} CPUs, {load()}")

    import tvm  # noqa: F401

    from fuzzharness.core.tvm_support import versions

    if args.side_by_side:
        bare_loop(seed + 1000, range(args.warmup))
        from fuzzharness.core import warmup

        warmup.tensor_intrinsics()
        for _ in range(args.side_by_side):
            side_by_side(seed, n, args.warmup)
        return 0

    print(f"versions: {versions()}")
    bare_loop(seed + 1000, range(args.warmup))  # warm up (other cases: no cache advantage)
    if not args.cold_setups:
        from fuzzharness.core import warmup

        warmup.tensor_intrinsics()

    ratios: dict[int, list[float]] = {w: [] for w in worker_counts}
    scalings: list[tuple[float, float]] = []
    for r in range(args.repeats):
        tag = f"[{r + 1}/{args.repeats}] " if args.repeats > 1 else ""
        rates, bare_mean = one_round(seed, n, worker_counts, tag, args.cold_setups)
        for w in worker_counts:
            ratios[w].append(rates[w] / bare_mean)
        if args.two_bare:
            one, two = bare_loops(seed, n, 1), bare_loops(seed, n, 2)
            print(f"{tag}bare loop in a fresh process {one:6.2f} cases/s; two side by side "
                  f"{two:6.2f} cases/s → {two / one:.2f}x ({load()})")
            if 1 in rates and 2 in rates:
                scalings.append((rates[2] / rates[1], two / one))
    print("summary:")
    for w in worker_counts:
        print(f"  harness/bare with {w} worker{'s' if w > 1 else ''}: {spread(ratios[w])}")
    if scalings:
        print(f"  scaling 1 → 2 workers: harness {spread([h for h, _ in scalings], 'x')}; two bare "
              f"loops {spread([b for _, b in scalings], 'x')}; harness/bare scaling "
              f"{spread([h / b for h, b in scalings])}")
    if args.interleaved:
        b, t = interleaved(seed, args.interleaved)
        print(f"  interleaved in-process, {args.interleaved} cases: bare {args.interleaved / b:.2f}/s, "
              f"worker task {args.interleaved / t:.2f}/s, ratio {b / t:.3f}  ({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
