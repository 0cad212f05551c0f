"""What a confirmation costs: one case in a child forked from the zygote, against the same
case in a warm worker; with and without the zygote's preloaded modules, side by side.

    python benchmarks/confirmation_cost.py [--cases 60] [--rounds 3] [--seed 3]
        [--no-hygiene] [--llvm-only]

Confirmation (``fuzzharness/campaign/confirm.py``) runs every finding again in a child of the
zygote (``fuzzharness/engine/fresh.py``): a process that has run nothing before.  A child
starts where the zygote stopped and everything it does first — importing the modules a case
imports lazily, touching copy-on-write pages — it does for every confirmation.  Each round
starts two zygote-like processes at once, one core each (the host's drift, ±15 % within
minutes on the shared 2-core machine, cancels out): both import what a worker imports and
register TVM's tensor intrinsics, as the zygote does; ``preload`` then also runs
:func:`fuzzharness.engine.preload.case_modules`, ``plain`` does not (the zygote before it).
Each serves cases ``0 .. N-1`` of one seed through the zygote's own loop
(:func:`fuzzharness.engine.fresh.serve_forked`: a fork per case, the worker's task function
in the child) and takes each child's CPU time from the kernel (``RUSAGE_CHILDREN`` around
the child's life).  Then the same process runs the same cases itself, warm (after ten other
cases), the worker's cost of a case.  The stream is the default campaign's mix (llvm,
OpenCL, Adreno textures, whole-graph cases; ``--llvm-only``: llvm kernels alone) and the
children start with a worker's hygiene (glibc's checking allocator and perturbation) unless
``--no-hygiene``.

Printed: per round, each side's median CPU ms per case forked and warm; then the medians over
rounds with min and max, and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
SIDES = ("plain", "preload")


def generation(llvm_only: bool) -> dict:
    from fuzzharness.generators.cases import GenSettings
    from fuzzharness.generators.targets import default_targets

    if llvm_only:
        return GenSettings(graph_fraction=0.0).to_dict()
    mix, shares, _ = default_targets()  # what `fuzzharness run` mixes in on this machine
    return GenSettings(target=mix[0], targets=tuple(mix), target_shares=tuple(shares)).to_dict()


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def side(name: str, seed: int, n: int, gen: dict) -> None:
    """One zygote-like process: forked and warm CPU ms per case, as one JSON line."""
    import tvm  # noqa: F401 - what the worker imports before it is ready (engine/worker.py)

    from fuzzharness.core import tvm_compat, warmup

    tvm_compat.install()
    import fuzzharness.execution.stages  # noqa: F401
    import fuzzharness.generators.cases  # noqa: F401
    from fuzzharness.core.plugins import load_plugins
    from fuzzharness.engine import fresh, preload
    from fuzzharness.engine.tasks import run_task

    load_plugins()
    warmup.tensor_intrinsics()
    if name == "preload":
        preload.case_modules()

    def task(i: int) -> dict:
        return {"task": i, "generate": {"seed": seed, "index": i, "settings": gen},
                "outputs": True}

    forked: list[float] = []
    started = [0.0]

    def write(msg: dict) -> None:
        if "forked" in msg:
            started[0] = cpu_children()
        elif "exit" in msg:
            forked.append((cpu_children() - started[0]) * 1000)

    devnull = os.open(os.devnull, os.O_WRONLY)
    saved = os.dup(1)
    os.dup2(devnull, 1)  # what a case prints (TVM's warnings) is not the benchmark's output
    try:
        lines = (json.dumps(task(i)).encode() for i in range(n))
        fresh.serve_forked(lines, lambda t: run_task(t, lambda m: None), write, lambda _: None)
        for i in range(n, n + 10):  # warm-up, then the same cases warm
            run_task(task(i), lambda m: None)
        warm = []
        for i in range(n):
            t = cpu_self()
            run_task(task(i), lambda m: None)
            warm.append((cpu_self() - t) * 1000)
    finally:
        os.dup2(saved, 1)
    print(json.dumps({"side": name, "forked": forked, "warm": warm}), flush=True)


def spread(values: list[float], fmt: str = "{:.0f}") -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–" \
           f"{fmt.format(max(values))})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--no-hygiene", action="store_true")
    ap.add_argument("--llvm-only", action="store_true")
    ap.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    ap.add_argument("--gen", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        side(args.side, args.seed, args.cases, json.loads(args.gen))
        return 0

    from hygiene_cost import environment

    gen = json.dumps(generation(args.llvm_only))
    env = environment("neither" if args.no_hygiene else "checks+zones")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    print(f"cases 0..{args.cases - 1} of seed {args.seed}, "
          f"{'llvm only' if args.llvm_only else 'the default campaign mix'}, "
          f"{'no hygiene' if args.no_hygiene else 'hygiene on'}; CPU ms per case")
    med: dict[str, dict[str, list[float]]] = {s: {"forked": [], "warm": []} for s in SIDES}
    for r in range(args.rounds):
        t0 = time.perf_counter()
        procs = {s: subprocess.Popen(
            [sys.executable, __file__, "--side", s, "--seed", str(args.seed), "--cases",
             str(args.cases), "--gen", gen], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True) for s in SIDES}
        line = []
        for s, p in procs.items():
            out, _ = p.communicate()
            if p.returncode != 0 or not out.strip():
                print(f"side {s} failed (exit {p.returncode})", file=sys.stderr)
                return 1
            d = json.loads(out.strip().splitlines()[-1])
            for k in ("forked", "warm"):
                med[s][k].append(statistics.median(d[k]))
            line.append(f"{s}: forked {med[s]['forked'][-1]:.0f}, warm {med[s]['warm'][-1]:.0f}")
        print(f"round {r + 1} ({time.perf_counter() - t0:.0f} s): " + "; ".join(line), flush=True)
    print("\nmedian over rounds (min–max), CPU ms per case:")
    for s in SIDES:
        ratio = [f / w for f, w in zip(med[s]["forked"], med[s]["warm"], strict=True)]
        print(f"  {s:8s} forked child {spread(med[s]['forked'])}, warm worker "
              f"{spread(med[s]['warm'])}; forked/warm {spread(ratio, '{:.2f}')}")
    ratio = [p / q for p, q in zip(med["preload"]["forked"], med["plain"]["forked"], strict=True)]
    print(f"  a confirmation with the preload / without: {spread(ratio, '{:.2f}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
