"""Memory bugs on purpose, for the confirmation and heap-hygiene tests.

Loaded into worker processes through ``FUZZHARNESS_PLUGINS=tests.plugins.memory_bugs``.
Float32 row-sum workloads (drawn only when named), each with a *kernel* that differs
from its program as if TVM had miscompiled it (see ``fuzzharness/testing/wrong_programs.py``):

``test_oob_write``     (``fuzzharness/testing/memory_programs.py``, imported here) a real
                       out-of-bounds write by generated code, one element past or before
                       its output;
``test_damaging``      the kernel calls ``test_memory_bugs.damage`` (a packed function, as
                       generated code calls the runtime) and is otherwise right: the case
                       passes, but it leaves its worker process damaged — the *next* case run
                       in that process gets the first element of every llvm output
                       overwritten with ``0xFE`` bytes, what reading a block glibc's
                       perturbation filled gives.  Real heap damage lands wherever the
                       allocator put the next object (a later case fails at random, or
                       never); this stand-in hits the next case every time, which is what a
                       test of *who gets the blame* needs;
``test_noisy``         the kernel adds a fresh random number (``test_memory_bugs.noise``) to
                       each row's sum: it fails every time, with other output bits every time
                       — the signature of a read of unwritten memory;
``test_via_temp``, ``test_reads_unwritten``  (``fuzzharness/testing/memory_programs.py``)
                       a row sum through a temporary, and one whose temporary nothing wrote.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import tvm_ffi

from fuzzharness.backends.llvm import LLVMBackend
from fuzzharness.execution.stages import Execution
from fuzzharness.generators.workloads.base import register as register_workload
from fuzzharness.generators.workloads.row_reduce import RowSum
from fuzzharness.testing import memory_programs  # noqa: F401  (test_oob_write, test_via_temp, ...)

_cases_started = [0]  # cases this process has started (Execution.run calls)
_damaged_by = [None]  # the case number (above) that damaged the process


@tvm_ffi.register_global_func("test_memory_bugs.damage", override=True)
def damage() -> int:
    _damaged_by[0] = _cases_started[0]
    return 0


@tvm_ffi.register_global_func("test_memory_bugs.noise", override=True)
def noise() -> int:
    return 1000 + int.from_bytes(os.urandom(2), "little")


class _Kernel(RowSum):
    dtype_labels = ("float32",)
    default = False
    call = ""

    def kernel_source(self, p: dict[str, Any]) -> str:
        init = "B[vi] = T.float32(0)"
        src = self.source(p)
        assert init in src
        return src.replace(init, f'B[vi] = T.float32(0) + T.Cast("float32", {self.call})')


@register_workload
class Damaging(_Kernel):
    name = "test_damaging"
    description = "row sum whose kernel damages its worker process for the next case (tests only)"
    call = 'T.call_packed("test_memory_bugs.damage")'


@register_workload
class Noisy(_Kernel):
    name = "test_noisy"
    description = "row sum whose kernel adds a random number to each row (tests only)"
    call = 'T.call_packed("test_memory_bugs.noise")'


_plain_execution_run = Execution.run
_plain_llvm_run = LLVMBackend.run


def _counted_execution_run(self):
    _cases_started[0] += 1
    return _plain_execution_run(self)


def _llvm_run_in_a_damaged_process(self, program, args, n_outputs):
    results = _plain_llvm_run(self, program, args, n_outputs)
    damaged = _damaged_by[0] is not None and _cases_started[0] == _damaged_by[0] + 1
    if damaged and results and results[0].size:
        results[0].reshape(-1).view(np.uint8)[: results[0].itemsize] = 0xFE
    return results


Execution.run = _counted_execution_run
LLVMBackend.run = _llvm_run_in_a_damaged_process
