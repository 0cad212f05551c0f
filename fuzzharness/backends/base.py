"""The backend interface: how a scheduled module becomes outputs on one kind of target.

One backend per TVM target kind, registered by that kind's name.  The stages are separate
methods so that a failure is attributed to the stage it happened in (see
:class:`fuzzharness.core.verdict.Stage`): ``lower`` runs the TIR pass pipeline, ``codegen`` turns
lowered TIR into a runtime module (LLVM IR, CUDA C, OpenCL C), ``build`` makes it executable
(LLVM JIT, nvcc, an OpenCL program build) and ``run`` executes it on numpy arrays.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fuzzharness.core.registry import Registry


def poison(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return np.full(shape, np.iinfo(dtype).min, dtype=dtype)
    return np.full(shape, np.nan, dtype=dtype)


class Backend:
    name: ClassVar[str]

    def unavailable(self, target: dict[str, Any]) -> str | None:
        """Why this machine cannot run ``target`` (None: it can)."""
        return None

    def lower(self, mod, target: dict[str, Any], pass_config: dict[str, Any]):
        raise NotImplementedError

    def codegen(self, lowered, target: dict[str, Any]):
        raise NotImplementedError

    def build(self, runtime_module):
        raise NotImplementedError

    def not_runnable(self, program) -> str | None:
        """Why ``program`` (from :meth:`build`) cannot run on this machine (None: it can).

        A case whose program cannot run ends *inconclusive* at the run stage, with the
        reason in its details (``not_run``) — e.g. CUDA code compiled by nvcc on a host
        without a GPU, or an fp16 OpenCL kernel on a runtime without ``cl_khr_fp16``.
        """
        return None

    def run(self, program, args: list[np.ndarray], n_outputs: int) -> list[np.ndarray]:
        """Run with ``args`` (inputs then output buffers); return the output arrays."""
        raise NotImplementedError


class DryRun(Backend):
    """``inner``'s compiler without its kernels: lowers, generates and builds code as
    ``inner`` does, and :meth:`run` runs nothing — it gives back the output buffers as they
    came, poisoned (:func:`poison`).  A case executed through it goes through every stage
    and every oracle of a failing case (the poison is a wrong result) while no generated code
    runs: the zygote's warm-up (:func:`fuzzharness.engine.preload.dry_runs`)."""

    def __init__(self, inner: Backend):
        self.inner = inner
        self.name = inner.name

    def unavailable(self, target):
        return self.inner.unavailable(target)

    def lower(self, mod, target, pass_config):
        return self.inner.lower(mod, target, pass_config)

    def codegen(self, lowered, target):
        return self.inner.codegen(lowered, target)

    def build(self, runtime_module):
        return self.inner.build(runtime_module)

    def not_runnable(self, program):
        return self.inner.not_runnable(program)

    def run(self, program, args, n_outputs):
        return [a.copy() for a in args[len(args) - n_outputs:]]


backends: Registry[Backend] = Registry("backend")


def register(cls: type[Backend]) -> type[Backend]:
    backends.add(cls.name, cls())
    return cls
