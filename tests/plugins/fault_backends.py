"""Fault-injection backends: llvm, but the next run's output is perturbed on purpose.

``test_llvm_last_bit`` flips the lowest significand bit of element 0 of the first output on
the run after :meth:`LastBitFlip.arm` — a kernel that is off by one ulp, within any sensible
error bound, while TVM's unscheduled build (the next run) is not.  The order-aware
metamorphic check must report ``order_preserving_divergence`` for it.
"""

from __future__ import annotations

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
