"""What a zygote does before it is ready: import what a case imports on first use, and fill
what a case fills on first use.

Confirmation runs every finding again in a child forked from the zygote
(:mod:`fuzzharness.engine.fresh`), a process that has run nothing before.  What a child
imports dies with it, so each module a case imports lazily — a registry's lazy entry (case
kinds, checks, input sets, the graph workload), an import inside a function (the order
analysis, the emulator, the OpenCL runtime and its ``pyopencl``) — was imported again by
every confirmation: ≈ 50 ms of harness modules, and ≈ 130 ms more for ``pyopencl`` on an
OpenCL case, against ≈ 120 ms for a whole case in a warm worker
(``benchmarks/confirmation_cost.py``).  :func:`case_modules` imports them once, in the zygote.

Nothing here creates an OpenCL context or touches a device: importing ``pyopencl`` starts
nothing, but listing the platforms already starts two of the runtimes' threads, which a fork
does not carry into the child (≈ 50 ms a child keeps paying, for an OpenCL case).

Imports were not all a child paid again.  Python and TVM fill caches on first use: the
abstract-base-class caches of TVM's object type (the first ``isinstance`` of a TVMScript
parser proxy against it walks all ~500 of TVM's object classes, ≈ 2-4 ms, a few dozen
types per case), TVM's function lookups, the LLVM target's CPU features, the harness's
parser namespace.  A warm worker has them all; each child filled them again: a finding's
confirmation cost 1.65 times its case in a warm worker, 1.20 times after (llvm,
``benchmarks/confirmation_cost.py``; 0.73 of the CPU side by side).  :func:`dry_runs`
fills them in the zygote by running a few fixed cases through every stage *without running
their kernels* (the backend's :class:`fuzzharness.backends.base.DryRun`).

What "fresh" still means: a child starts from the zygote's state, the same for every child,
in which no generated code has ever run — heap damage, the reason a finding is confirmed
alone, comes from running generated code.  The dry runs do run TVM's compiler on their
fixed cases (unscheduled, float32, no compiler options, on llvm); the zygote runs under the
same heap hygiene as a worker, so a compiler that damaged the heap doing so would abort the
zygote before it is ready, every time.

Invariant (``tests/test_preload.py``): after :func:`case_modules`, a case of the default
campaign's mix run in a forked child imports no module at all.  A new lazy import breaks it
and the test names the module: add it to :data:`CASE_MODULES` (or to
:data:`OPTIONAL_MODULES` when it is an optional dependency).
"""

from __future__ import annotations

import importlib

#: modules imported inside functions on a case's path that neither the worker's own imports
#: nor the registries' lazy entries reach (the rest of the oracles and execution modules do)
CASE_MODULES = (
    "fuzzharness.backends.opencl_runtime",
    "fuzzharness.core.interpreter",
    "fuzzharness.execution.intrinsics",
    "numpy.typing",
)
#: optional dependencies a case imports when it needs them (the OpenCL backend's launcher and
#: its program cache); skipped when they are not installed or do not import
OPTIONAL_MODULES = ("pyopencl", "pyopencl.cache", "pyopencl.characterize", "pyopencl.invoker",
                    "pyopencl.tools", "pytools.py_codegen", "platformdirs")


def _registries():
    """The registries a case looks things up in (not the executors': Ray is an optional
    dependency of the driver, never of a case)."""
    from fuzzharness.core.kinds import kinds, run_kinds
    from fuzzharness.generators.workloads import workloads
    from fuzzharness.oracles.checks import checks, input_sets, program_checks

    return (kinds, run_kinds, workloads, checks, input_sets, program_checks)


def case_modules() -> list[str]:
    """Import what a case would import on first use; the optional modules that did not
    import (``name: why``), for the worker's log."""
    for registry in _registries():
        registry.items()  # loads every lazy entry
    for name in CASE_MODULES:
        importlib.import_module(name)
    missing = []
    for name in OPTIONAL_MODULES:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - an optional dependency; the case says why, if used
            missing.append(f"{name}: {type(e).__name__}: {e}")
    return missing


#: the zygote's dry runs: case 0 of this seed for each of these workloads (an elementwise
#: kernel, a reduction, an index reduction), drawn by :func:`dry_run_settings`.  Three carry
#: nearly all of the gain (``benchmarks/confirmation_cost.py``); each costs about a warm
#: case's time, once.  Fixed names, not a draw from the registry: a plugin's workload never
#: runs in the zygote.
DRY_RUN_SEED = 0
DRY_RUN_WORKLOADS = ("elementwise", "matmul", "argmax")


def dry_run_settings(workload: str):
    """Unscheduled float32 kernels on llvm, no compiler options: what TVM compiles on any
    machine without a known crash (the same programs every unscheduled baseline compiles)."""
    from fuzzharness.generators.cases import GenSettings

    return GenSettings(workloads=(workload,), dtypes=("float32",), max_steps=0,
                       metaschedule_fraction=0.0, option_fraction=0.0, special_fraction=0.0,
                       graph_fraction=0.0, target={"kind": "llvm"})


def dry_runs() -> list[str]:
    """Run the :data:`DRY_RUN_WORKLOADS`' cases through every stage with no kernel run (see
    the module docstring); what did not go through (``workload: why``), for the worker's
    log.  A dry case ends as a failure — its outputs are the poison — which takes it through
    the oracles and program checks a finding's confirmation goes through."""
    from fuzzharness.backends.rpc import dry_runs as no_kernels
    from fuzzharness.core.verdict import Stage
    from fuzzharness.execution.stages import execute
    from fuzzharness.generators.cases import generate_case

    problems = []
    with no_kernels():
        for name in DRY_RUN_WORKLOADS:
            try:
                case = generate_case(DRY_RUN_SEED, 0, dry_run_settings(name))
                verdict = execute(case, lambda stage: None).verdict
            except Exception as e:  # noqa: BLE001 - a warm-up: the children pay what it missed
                problems.append(f"{name}: {type(e).__name__}: {e}")
                continue
            if verdict.stage is not Stage.VERIFY:  # it stopped before the oracles
                problems.append(f"{name}: {verdict.line()[:200]}")
    return problems
