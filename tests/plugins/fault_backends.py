"""Fault-injection backends: llvm, but the next run's output is perturbed on purpose.

``test_llvm_last_bit`` flips the lowest significand bit of element 0 of the first output on
the run after :meth:`LastBitFlip.arm` — a kernel that is off by one ulp, within any sensible
error bound, while TVM's unscheduled build (the next run) is not.  The order-aware
metamorphic check must report ``order_preserving_divergence`` for it.

``test_llvm_serial_crash`` is llvm, except that a kernel with a vectorized loop is wrong by
1000 in its first element, and one built with vectorization off (``tirx.disable_vectorize``,
the build that probes the ``alloc_in_vectorized_loop`` fact of such a wrong result,
``fuzzharness/execution/tir_run.py``) segfaults when it runs: a real SIGSEGV, in the probe.
"""

from __future__ import annotations

import ctypes

import numpy as np

from fuzzharness.backends.base import register
from fuzzharness.backends.llvm import LLVMBackend

LLVM = {"kind": "llvm"}


@register
class LastBitFlip(LLVMBackend):
    name = "test_llvm_last_bit"
    armed = 0

    @classmethod
    def arm(cls) -> None:
        cls.armed = 1

    def lower(self, mod, target, pass_config):
        return super().lower(mod, LLVM, pass_config)

    def codegen(self, lowered, target):
        return super().codegen(lowered, LLVM)

    def run(self, program, args, n_outputs):
        results = super().run(program, args, n_outputs)
        if type(self).armed:
            type(self).armed = 0
            out = results[0]
            bits = out.reshape(-1).view(np.dtype(f"u{out.dtype.itemsize}"))
            bits[0] ^= 1
        return results


@register
class SerialCrash(LLVMBackend):
    name = "test_llvm_serial_crash"

    def lower(self, mod, target, pass_config):
        # what the next run is: the probe's serial build, or a program with a vectorized
        # loop (the case's own; not the unscheduled baseline), which is made wrong by far
        self.serial = bool(pass_config.get("tirx.disable_vectorize"))
        self.vectorized = "T.vectorized" in mod.script()
        return super().lower(mod, LLVM, pass_config)

    def codegen(self, lowered, target):
        return super().codegen(lowered, LLVM)

    def run(self, program, args, n_outputs):
        if getattr(self, "serial", False):
            ctypes.string_at(0)
        results = super().run(program, args, n_outputs)
        if getattr(self, "vectorized", False):
            results[0].reshape(-1)[0] += 1000
        return results
