"""Which defence catches which memory damage: glibc's malloc checks, guard zones, neither.

    python benchmarks/heap_checks.py [--repeats 3] [--shapes 16x64,64x256]

The question before isolating kernel runs in forked children (which cannot switch glibc's
checking allocator on: it is chosen when a process starts): what do the worker-wide malloc
checks catch that guard zones alone do not?  Every damaging program of
``fuzzharness/testing/memory_programs.py`` runs in a fresh one-worker pool, followed by an
innocent case (``row_sum``) in the same worker, under four configurations:

``checks+zones``  today's default: ``glibc.malloc.check=3`` with glibc's checking
                  allocator preloaded, perturbation (:mod:`fuzzharness.core.hygiene`), and
                  guard zones around every argument;
``checks``        malloc checks and perturbation, no guard zones;
``zones``         guard zones and perturbation, no checking allocator: what a worker
                  without the debug allocator (and a child forked from it) has;
``neither``       no defence (``--no-hygiene``).

Printed per program and configuration: the verdict of the damaging case (status, kind) and
of the innocent case after it, over ``--repeats`` fresh pools (a line per distinct outcome,
with its count).  A damaging case that *passes* while the innocent one after it fails is the
damage landing on the wrong case; both passing is damage nobody saw.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PLUGIN = "fuzzharness.testing.memory_programs"
_DEBUG_LIBRARY = None  # hygiene.debug_library, kept while a config hides it
#: config → (hygiene on, guard zones, glibc's checking allocator)
CONFIGS = {"checks+zones": (True, "1", True), "checks": (True, "0", True),
           "zones": (True, "1", False), "neither": (False, "0", False)}


def programs(shapes: list[tuple[int, int]]) -> list[tuple[str, dict]]:
    out = []
    for m, n in shapes:
        for side in ("after", "before"):
            out.append((f"oob_write {side} {m}x{n}", {"name": "test_oob_write",
                        "params": {"M": m, "N": n, "dtype": "float32", "side": side}}))
        for k in (1, n):
            out.append((f"workspace +{k} {m}x{n}", {"name": "test_workspace_overflow",
                        "params": {"M": m, "N": n, "dtype": "float32", "elements": k}}))
    return out


def outcome(v) -> str:
    kind = (v.details or {}).get("kind")
    return v.status.value + (f"/{kind}" if kind else "")


def run(workload: dict, hygiene_on: bool, zones: str, checking: bool) -> tuple[str, str]:
    from fuzzharness.core import hygiene
    from fuzzharness.core.case import Case
    from fuzzharness.engine.pool import WorkerPool

    # the worker's environment is made here: without the library, only perturbation is set
    hygiene.debug_library = _DEBUG_LIBRARY if checking else (lambda: None)

    def case(wl):
        return Case(workload=wl, inputs={"distribution": "uniform", "seed": 1},
                    target={"kind": "llvm"}).to_dict()

    os.environ[hygiene.GUARD_ZONES_ENV] = zones
    innocent = {"name": "row_sum", "params": {"M": 16, "N": 8, "dtype": "float32"}}
    tasks = [{"task": 0, "case": case(workload)}, {"task": 1, "case": case(innocent)}]
    with tempfile.TemporaryDirectory() as logs, \
            WorkerPool(1, timeout=60, log_dir=Path(logs), hygiene=hygiene_on) as pool:
        got = {r.task["task"]: r.verdict for r in pool.run(tasks)}
    return outcome(got[0]), outcome(got[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shapes", default="16x64,64x256",
                    help="MxN of the row sums (the temporary W is MxN float32)")
    args = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    os.environ["FUZZHARNESS_PLUGINS"] = PLUGIN
    import fuzzharness.testing.memory_programs  # noqa: F401  (registers the programs here too)
    from fuzzharness.core import hygiene

    global _DEBUG_LIBRARY
    _DEBUG_LIBRARY = hygiene.debug_library
    print(f"glibc checking allocator: {hygiene.debug_library() or 'not installed'}; "
          f"{args.repeats} fresh pools per cell")
    print(f"{'program':<28} {'config':<13} damaging case -> innocent case after it")
    for label, workload in programs(shapes):
        for config, (hygiene_on, zones, checking) in CONFIGS.items():
            seen = Counter(run(workload, hygiene_on, zones, checking) for _ in range(args.repeats))
            for (bad, after), n in sorted(seen.items()):
                print(f"{label:<28} {config:<13} {bad} -> {after}  ×{n}")
            label = ""
    return 0


if __name__ == "__main__":
    sys.exit(main())
