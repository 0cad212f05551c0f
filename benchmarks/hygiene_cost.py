"""What each heap defence costs, stage by stage: glibc's malloc checks, perturbation, guard zones.

    python benchmarks/hygiene_cost.py [--cases 100] [--rounds 4] [--seed 1]
        [--configs checks+zones,zones] [--side-by-side]

The question behind isolating kernel runs in forked children: the checks are process-wide
(glibc reads them when a process starts), so they slow the compiler as much as the kernel —
how much, and in which stage?  Each configuration runs the same stream of cases (cases
``0 .. N-1`` of one seed, llvm, no graphs) through the worker's own task function
(:func:`fuzzharness.engine.tasks.run_task`: generate, schedule, lower, codegen, run, judge) in
a fresh process started with that configuration's environment, after a warm-up (ten other
cases and TVM's tensor intrinsics).  The configurations (the same four as
``benchmarks/heap_checks.py``, which measures what each one *catches*):

``checks+zones``  today's worker: glibc's checking allocator (``glibc.malloc.check=3``,
                  preloaded), perturbation, guard zones around every argument;
``checks``        checks and perturbation, no guard zones;
``zones``         guard zones and perturbation, no checking allocator: what a worker
                  without the debug allocator (and a child forked from it) has;
``neither``       no defence (``--no-hygiene``).

``--configs`` picks and orders them (``unperturbed``: the checks and zones without
perturbation; ``untuned``: without the fixed malloc thresholds, ``hygiene.THRESHOLDS``).
The configurations alternate within each round; a host whose speed drifts
(±15 % within minutes on the shared 2-core machine, more than the effects measured here)
still blurs sequential runs, so ``--side-by-side`` runs the configurations of a round at once,
one core each (two configurations on two cores), which cancels the drift: use it for any
difference under ~10 %.  Printed: per round, each configuration's CPU ms per case; then per
configuration the median over rounds (with min and max) of the total and of every stage, and
its ratio to the last configuration named.  Stage times are the
verdict's own ``timings`` (wall time inside the stage; ``build`` contains ``codegen``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIGS = ("checks+zones", "checks", "zones", "neither")
#: today's worker with one setting taken away
VARIANTS = ("unperturbed", "untuned")


def environment(config: str) -> dict[str, str]:
    """The environment a worker of ``config`` starts with."""
    from fuzzharness.core import hygiene

    env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "LD_PRELOAD")}
    if config == "neither":
        return hygiene.hygiene_env(env, enabled=False)
    if config == "zones":  # perturbation needs no library; the checks do
        env[hygiene.GUARD_ZONES_ENV] = "1"
        env["GLIBC_TUNABLES"] = ":".join(f"{k}={v}" for k, v in hygiene.PLAIN_TUNABLES.items())
        return env
    env[hygiene.GUARD_ZONES_ENV] = "0" if config == "checks" else "1"
    env = hygiene.hygiene_env(env)
    if config == "unperturbed":
        env["GLIBC_TUNABLES"] = env["GLIBC_TUNABLES"].replace("glibc.malloc.perturb=1:", "")
    if config == "untuned":  # glibc's default thresholds, which the checks never raise
        env["GLIBC_TUNABLES"] = ":".join(t for t in env["GLIBC_TUNABLES"].split(":")
                                         if t.split("=")[0] not in hygiene.THRESHOLDS)
    return env


def child(seed: int, n: int) -> None:
    """Run the stream in this process; print per-case means (ms) as one JSON line."""
    import tvm  # noqa: F401

    from fuzzharness.core import hygiene, warmup
    from fuzzharness.engine.tasks import run_task
    from fuzzharness.generators.cases import GenSettings

    gen = GenSettings(graph_fraction=0.0).to_dict()

    def task(i: int):
        return run_task({"task": i, "generate": {"seed": seed, "index": i, "settings": gen}},
                        lambda msg: None)

    for i in range(10_000, 10_010):
        task(i)
    warmup.tensor_intrinsics()
    sums: dict[str, float] = {}
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(n):
        for stage, seconds in task(i).timings.items():
            sums[stage] = sums.get(stage, 0.0) + seconds
    out = {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall, **sums}
    print(json.dumps({"active": hygiene.active(),
                      "ms": {k: v / n * 1000 for k, v in out.items()}}))


def measure(config: str, seed: int, n: int) -> tuple[dict[str, float], dict]:
    return finish(config, start(config, seed, n))


def start(config: str, seed: int, n: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, "--child", "--seed", str(seed),
                             "--cases", str(n)],
                            env=environment(config), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)


def finish(config: str, proc: subprocess.Popen) -> tuple[dict[str, float], dict]:
    out, err = proc.communicate()
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        raise SystemExit(f"{config}: the child failed (exit {proc.returncode}):\n{err[-2000:]}")
    got = json.loads(lines[-1])
    return got["ms"], got["active"]


def spread(values: list[float]) -> str:
    v = sorted(values)
    return f"{statistics.median(v):7.1f} ({v[0]:.1f}–{v[-1]:.1f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--side-by-side", action="store_true",
                    help="run the configurations of a round at once, one core each (two "
                         "configurations on two cores: the host's drift cancels)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.seed, args.cases)
        return 0
    configs = args.configs.split(",")
    if unknown := [c for c in configs if c not in (*CONFIGS, *VARIANTS)]:
        ap.error(f"unknown configuration {', '.join(unknown)}: choose from "
                 f"{', '.join((*CONFIGS, *VARIANTS))}")
    print(f"hygiene cost: {args.cases} cases of seed {args.seed} per run, {args.rounds} rounds, "
          f"load {os.getloadavg()[0]:.2f}")
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in configs}
    for r in range(args.rounds):
        if args.side_by_side:  # swap the start order each round
            order = configs if r % 2 == 0 else configs[::-1]
            procs = {c: start(c, args.seed, args.cases) for c in order}
            done = {c: finish(c, procs[c]) for c in order}
        for config in configs:
            ms, active = done[config] if args.side_by_side else measure(config, args.seed, args.cases)
            runs[config].append(ms)
            print(f"  round {r + 1} {config:<13} cpu {ms['cpu']:6.1f} ms/case, wall "
                  f"{ms['wall']:6.1f} ms/case  (load {os.getloadavg()[0]:.2f})"
                  + (f"  {active}" if r == 0 else ""), flush=True)
    base = statistics.median(m["cpu"] for m in runs[configs[-1]])
    stages = sorted({k for ms in runs[configs[-1]] for k in ms} - {"cpu", "wall"})
    print(f"\nmedian over rounds, ms per case (min–max); ratio: median CPU to {configs[-1]}")
    print(f"{'':<13} {'ratio':>6} {'cpu':>20} " + " ".join(f"{s:>20}" for s in stages))
    for config in configs:
        cpu = [m["cpu"] for m in runs[config]]
        print(f"{config:<13} {statistics.median(cpu) / base:6.3f} {spread(cpu):>20} "
              + " ".join(f"{spread([m.get(s, 0.0) for m in runs[config]]):>20}" for s in stages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
