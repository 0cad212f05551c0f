"""What a confirmation costs: a finding run again in a child forked from the zygote, against
the same case in a warm worker; for two zygotes side by side.

    python benchmarks/confirmation_cost.py [--cases 40] [--rounds 3] [--seed 3]
        [--sides preload,dry-runs] [--all-cases] [--no-hygiene] [--llvm-only]

Confirmation (``fuzzharness/campaign/confirm.py``) runs every finding again in a child of the
zygote (``fuzzharness/engine/fresh.py``): a process that has run nothing before.  A child
starts where the zygote stopped and everything it does first — importing the modules a case
imports lazily, filling the caches Python and TVM fill on first use, touching copy-on-write
pages — it does for every confirmation.  The zygotes compared (``--sides``, each one process
on one core, started together so that the host's drift, ±15 % within minutes on the shared
2-core machine, cancels out); all import what a worker imports and register TVM's tensor
intrinsics, as the zygote does:

``plain``     nothing more (the zygote before ``engine/preload.py``);
``preload``   :func:`fuzzharness.engine.preload.case_modules` (the zygote before its dry runs);
``dry-runs``  that and :func:`fuzzharness.engine.preload.dry_runs` (the zygote today);
``frozen``    that and ``gc.freeze()`` before the forks (Python's advice for fork without
              exec: a child's collections then leave the zygote's objects — and their
              copy-on-write pages — alone).  Measured against ``dry-runs`` (llvm, 30
              findings, 3 rounds): 1.02 (0.99–1.12), no gain, so the zygote does not do it.

The tasks are what confirmation submits: a case as plain data (never generated in the
child).  The cases: the first ``--cases`` *findings* of one seed's stream that end by
themselves — wrong results, nan/inf, reference mismatches, compile errors; not crashes,
which may hang (``--all-cases``: the first cases that do not crash, passing or not) — found
before the rounds by running the stream in a real worker pool.  The stream is
the default campaign's mix (llvm, OpenCL, Adreno textures, whole-graph cases; ``--llvm-only``:
llvm kernels alone) and every process runs with a worker's hygiene (glibc's checking
allocator, perturbation, guard zones) unless ``--no-hygiene``.  Each zygote serves the tasks
through its own loop (:func:`fuzzharness.engine.fresh.serve_forked`: a fork per task, the
worker's task function in the child) and takes each child's CPU time from the kernel
(``RUSAGE_CHILDREN`` around the child's life); then it runs the same tasks itself, warm (after
ten cases of another seed), a worker's cost of them.

Printed: per round, each side's median CPU ms per task forked and warm; then the medians over
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
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
SIDES = ("plain", "preload", "dry-runs", "frozen")
WARM_SEED = 99  # the warm-up cases of the warm side
#: the findings taken: those whose run ends (a crash may be heap damage that hangs, which a
#: worker's timeout would end and this benchmark, without one, would wait for)
SETTLED = ("wrong_result", "nan_inf", "reference_mismatch", "compile_error")


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


def collect(seed: int, n: int, gen: dict, findings: bool, path: str) -> None:
    """Write the benchmark's cases (plain data) and the warm side's warm-up cases to ``path``:
    the stream run by a real worker pool (two workers; a case that crashes takes only its
    worker), the first ``n`` by index kept."""
    from fuzzharness.engine.pool import WorkerPool

    def tasks(s: int, lo: int, hi: int) -> list[dict]:
        return [{"task": i, "generate": {"seed": s, "index": i, "settings": gen}}
                for i in range(lo, hi)]

    picked: dict[int, dict] = {}
    scanned, chunk = 0, 8 * n if findings else n
    with WorkerPool(2, timeout=120.0) as pool:
        while len(picked) < n and scanned < 40 * n:
            for r in pool.run(tasks(seed, scanned, scanned + chunk)):
                if r.case and (r.verdict.status.value in SETTLED if findings
                               else r.verdict.status.value not in ("crash", "timeout")):
                    picked[int(r.task["task"])] = r.case
            scanned += chunk
        warm = [r.case for r in pool.run(tasks(WARM_SEED, 0, 12))
                if r.case and not r.verdict.is_finding][:10]
    cases = [picked[i] for i in sorted(picked)[:n]]
    last = sorted(picked)[n - 1] + 1 if len(picked) >= n else scanned
    Path(path).write_text(json.dumps({"cases": cases, "warm": warm, "scanned": last}))


def side(name: str, path: str) -> None:
    """One zygote-like process: forked and warm CPU ms per task, as one JSON line."""
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
    if name != "plain":
        preload.case_modules()
    t = cpu_self()
    if name in ("dry-runs", "frozen"):
        preload.dry_runs()
    if name == "frozen":
        import gc

        gc.freeze()
    setup = cpu_self() - t
    data = json.loads(Path(path).read_text())

    def task(i: int, case: dict) -> dict:  # what Confirmer.confirmation_task submits
        return {"task": i, "case": case, "outputs": True, "fresh": True}

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
        lines = (json.dumps(task(i, c)).encode() for i, c in enumerate(data["cases"]))
        fresh.serve_forked(lines, lambda t: run_task(t, lambda m: None), write, lambda _: None)
        for c in data["warm"]:  # warm-up, then the same tasks warm
            run_task(task(0, c), lambda m: None)
        warm = []
        for i, c in enumerate(data["cases"]):
            t = cpu_self()
            run_task(task(i, c), lambda m: None)
            warm.append((cpu_self() - t) * 1000)
    finally:
        os.dup2(saved, 1)
    print(json.dumps({"side": name, "forked": forked, "warm": warm, "setup": setup}), flush=True)


def spread(values: list[float], fmt: str = "{:.0f}") -> str:
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–" \
           f"{fmt.format(max(values))})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--sides", default="preload,dry-runs")
    ap.add_argument("--all-cases", action="store_true")
    ap.add_argument("--no-hygiene", action="store_true")
    ap.add_argument("--llvm-only", action="store_true")
    ap.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    ap.add_argument("--collect", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--gen", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        side(args.side, args.data)
        return 0
    if args.collect:
        collect(args.seed, args.cases, json.loads(args.gen), not args.all_cases, args.data)
        return 0
    sides = args.sides.split(",")
    if len(sides) != 2 or not set(sides) <= set(SIDES):
        ap.error(f"--sides: two of {', '.join(SIDES)}")

    from hygiene_cost import environment

    gen = json.dumps(generation(args.llvm_only))
    env = environment("neither" if args.no_hygiene else "checks+zones")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    data = os.path.join(tempfile.mkdtemp(prefix="confirmation-cost-"), "cases.json")
    base = [sys.executable, __file__, "--seed", str(args.seed), "--cases", str(args.cases),
            "--data", data]
    subprocess.run([*base, "--collect", "--gen", gen, *(["--all-cases"] * args.all_cases)],
                   env=env, stderr=subprocess.DEVNULL, check=True)
    found = json.loads(Path(data).read_text())
    what = "cases" if args.all_cases else "findings"
    print(f"the first {len(found['cases'])} {what} of seed {args.seed} (of "
          f"{found['scanned']} cases), {'llvm only' if args.llvm_only else 'the default campaign mix'}, "
          f"{'no hygiene' if args.no_hygiene else 'hygiene on'}; CPU ms per task", flush=True)
    med: dict[str, dict[str, list[float]]] = {s: {"forked": [], "warm": []} for s in sides}
    for r in range(args.rounds):
        t0 = time.perf_counter()
        procs = {s: subprocess.Popen([*base, "--side", s], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True) for s in sides}
        line = []
        for s, p in procs.items():
            out, _ = p.communicate()
            if p.returncode != 0 or not out.strip():
                print(f"side {s} failed (exit {p.returncode})", file=sys.stderr)
                return 1
            d = json.loads(out.strip().splitlines()[-1])
            for k in ("forked", "warm"):
                med[s][k].append(statistics.median(d[k]))
            line.append(f"{s}: forked {med[s]['forked'][-1]:.0f}, warm {med[s]['warm'][-1]:.0f}"
                        + (f" (its setup {d['setup']:.2f} s)" if d["setup"] > 0.01 else ""))
        print(f"round {r + 1} ({time.perf_counter() - t0:.0f} s): " + "; ".join(line), flush=True)
    print("\nmedian over rounds (min–max), CPU ms per task:")
    for s in sides:
        ratio = [f / w for f, w in zip(med[s]["forked"], med[s]["warm"], strict=True)]
        print(f"  {s:8s} forked child {spread(med[s]['forked'])}, warm worker "
              f"{spread(med[s]['warm'])}; forked/warm {spread(ratio, '{:.2f}')}")
    a, b = sides
    ratio = [q / p for p, q in zip(med[a]["forked"], med[b]["forked"], strict=True)]
    print(f"  a confirmation in the {b} zygote's child / the {a} zygote's: {spread(ratio, '{:.2f}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
