"""What a zygote imports before it is ready: the modules a case imports on first use.

Confirmation runs every finding again in a child forked from the zygote
(:mod:`fuzzharness.engine.fresh`), a process that has run nothing before.  What a child
imports dies with it, so each module a case imports lazily — a registry's lazy entry (case
kinds, checks, input sets, the graph workload), an import inside a function (the order
analysis, the emulator, the OpenCL runtime and its ``pyopencl``) — was imported again by
every confirmation: ≈ 50 ms of harness modules, and ≈ 130 ms more for ``pyopencl`` on an
OpenCL case, against ≈ 120 ms for a whole case in a warm worker
(``benchmarks/confirmation_cost.py``).  :func:`case_modules` imports them once, in the zygote.

A child is as fresh as before: importing runs no case, no generated code and no compiler —
the heap a child starts from still holds no trace of any case.  Nothing here creates an
OpenCL context or touches a device: importing ``pyopencl`` starts nothing, but listing the
platforms already starts two of the runtimes' threads, which a fork does not carry into the
child (≈ 50 ms a child keeps paying, for an OpenCL case).

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
