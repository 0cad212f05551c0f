"""A workload and a backend that misbehave on purpose: real segfaults, aborts, hangs, memory
blow-ups and harness bugs, for the engine's crash-handling tests.

Loaded into worker processes through ``FUZZHARNESS_PLUGINS=tests.plugins.chaos``.

Workload ``test_chaos`` (drawn only when named): a small float32 row sum whose parameters
also draw a ``behaviour`` and the stage it happens ``at``.  Both are written into the program
as a function attribute, so they travel inside the case JSON and replay with it.  Target kind
``test_chaos`` selects the backend below, which runs the llvm backend but first misbehaves
in the stage named by the attribute:

``segfault``     reads address 0 (SIGSEGV)             ``abort``   ``os.abort()`` (SIGABRT)
``hang``         an endless loop (the per-case timeout must end it)
``oom``          allocates TVM tensors until TVM's allocator fails (std::bad_alloc) — needs
                 the worker's memory limit; the pages are never touched, so RSS stays small
``oom_numpy``    the same with numpy arrays (MemoryError)
``harness_bug``  raises ValueError from this (non-TVM) code: a harness error, not a finding
``none``         behaves; the case passes
``leak``         (never drawn; built by hand) keeps 450 MB of untouched numpy memory alive
                 and then behaves: the case passes, the worker is left near its memory limit
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

from hypothesis import strategies as st

from fuzzharness.backends.base import Backend, backends, register
from fuzzharness.generators.workloads.base import GenOptions
from fuzzharness.generators.workloads.base import register as register_workload
from fuzzharness.generators.workloads.row_reduce import RowSum

BEHAVIOURS = ("none", "segfault", "abort", "hang", "oom", "oom_numpy", "harness_bug")
STAGES = ("lower", "codegen", "build", "run")
ATTR = "test_chaos"
CHUNK = 64 << 20
LEAK = 450 << 20
_leaked: list = []


def misbehave(behaviour: str) -> None:
    if behaviour != "none":  # tests wait for this line in the worker's log
        print(f"chaos: {behaviour}", file=sys.stderr, flush=True)
    if behaviour == "segfault":
        ctypes.string_at(0)
    elif behaviour == "abort":
        os.abort()
    elif behaviour == "hang":
        while True:
            pass
    elif behaviour == "oom":
        import tvm

        keep = []
        while True:
            keep.append(tvm.runtime.empty((CHUNK,), "uint8"))
    elif behaviour == "oom_numpy":
        import numpy as np

        keep = []
        while True:
            keep.append(np.empty(CHUNK, dtype=np.uint8))
    elif behaviour == "leak":
        import numpy as np

        if not _leaked:  # once per worker: a case runs its kernel twice (the second input set)
            _leaked.append(np.empty(LEAK, dtype=np.uint8))
    elif behaviour == "harness_bug":
        raise ValueError("chaos: a bug in harness code, not in TVM")


@register_workload
class ChaosRowSum(RowSum):
    name = "test_chaos"
    description = "row sum that misbehaves on purpose in a chosen stage (tests only)"
    dtype_labels = ("float32",)
    default = False

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        return {"M": data.draw(st.integers(1, 8)), "N": data.draw(st.integers(1, 16)),
                "dtype": "float32", "behaviour": data.draw(st.sampled_from(BEHAVIOURS)),
                "at": data.draw(st.sampled_from(STAGES))}

    def source(self, p: dict[str, Any]) -> str:
        src = super().source(p)
        head, _, body = src.partition("):\n")
        return f'{head}):\n    T.func_attr({{"{ATTR}": "{p["behaviour"]}@{p["at"]}"}})\n{body}'


@register
class ChaosBackend(Backend):
    name = "test_chaos"

    def __init__(self):
        self.plan = ("none", "")

    @property
    def llvm(self) -> Backend:
        return backends["llvm"]

    def _maybe(self, stage: str) -> None:
        behaviour, at = self.plan
        if at == stage:
            misbehave(behaviour)

    def lower(self, mod, target, pass_config):
        attrs = mod["main"].attrs
        text = str(attrs[ATTR]) if attrs is not None and ATTR in attrs else "none@"
        self.plan = tuple(text.split("@", 1))
        self._maybe("lower")
        return self.llvm.lower(mod, {"kind": "llvm"}, pass_config)

    def codegen(self, lowered, target):
        self._maybe("codegen")
        return self.llvm.codegen(lowered, {"kind": "llvm"})

    def build(self, runtime_module):
        self._maybe("build")
        return self.llvm.build(runtime_module)

    def run(self, program, args, n_outputs):
        self._maybe("run")
        return self.llvm.run(program, args, n_outputs)
