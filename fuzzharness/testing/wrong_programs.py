"""Deliberately wrong programs: the oracle must fail them (proof that a comparison can fail).

Two kinds, both registered as non-default workloads so they travel through the same
pipeline (and worker processes, via FUZZHARNESS_PLUGINS=fuzzharness.testing.wrong_programs):

* *simulated miscompilations* override :meth:`Workload.kernel_source`: the program, its
  float64 reference and the unscheduled baseline are the real workload's, but the kernel is
  built from a program that differs in a known way — as if TVM had compiled it wrongly.
  The verdict must be ``wrong_result`` (the baseline agrees with the reference);
* *a wrong reference* keeps the program and corrupts the float64 reference: TVM's unscheduled
  build disagrees with it, and the verdict must be ``reference_mismatch``.
"""

from __future__ import annotations

import os

from fuzzharness.generators.workloads.base import register, workloads
from fuzzharness.generators.workloads.matmul import DTYPES, Matmul

#: set in a worker's environment: the off-by-one program is compiled right, as a TVM without
#: that bug would (the baseline of tests/test_pytest_plugin.py)
FIXED_ENV = "FUZZHARNESS_TEST_OFF_BY_ONE_FIXED"


@register
class MatmulDropsLastTerm(Matmul):
    """C = A[:, :K-1] @ B[:K-1, :]: one reduction term missing."""

    name = "test_matmul_drops_term"
    default = False

    def kernel_source(self, p):
        src = self.source(p)
        return src.replace(f'T.grid({p["M"]}, {p["N"]}, {p["K"]})',
                           f'T.grid({p["M"]}, {p["N"]}, {p["K"] - 1})')


@register
class MatmulOffByOne(Matmul):
    """Output column N-1 reads B's column 0: one off-by-one output element per row."""

    name = "test_matmul_off_by_one"
    default = False

    def kernel_source(self, p):
        din, acc, _ = DTYPES[p["dtype"]]
        if os.environ.get(FIXED_ENV):  # plays a TVM without the bug (tests/test_pytest_plugin.py)
            return self.source(p)
        return self.source(p).replace(
            f'T.Cast("{acc}", B[vk, vj])',
            f'T.Cast("{acc}", B[vk, T.if_then_else(vj == {p["N"] - 1}, 0, vj)])',
        )


@register
class MatmulRoundsAccumulator(Matmul):
    """The fp32 accumulator is rounded to fp16 after every step (float16-acc32 only)."""

    name = "test_matmul_rounds_accumulator"
    default = False
    dtype_labels = ("float16-acc32",)

    def kernel_source(self, p):
        din, acc, _ = DTYPES[p["dtype"]]
        old = f'C[vi, vj] = C[vi, vj] + T.Cast("{acc}", A[vi, vk]) * T.Cast("{acc}", B[vk, vj])'
        assert old in self.source(p)
        return self.source(p).replace(
            old,
            f'C[vi, vj] = T.Cast("{acc}", T.Cast("float16", C[vi, vj] + T.Cast("{acc}", A[vi, vk]) '
            f'* T.Cast("{acc}", B[vk, vj])))',
        )


@register
class MatmulWrongReference(Matmul):
    """A correct program whose float64 reference is off by one unit in one element."""

    name = "test_matmul_wrong_reference"
    default = False

    def reference(self, p, inputs, numerics):
        expected = super().reference(p, inputs, numerics)
        expected["C"].value[0, 0] += 1.0
        return expected


__all__ = ["workloads"]
