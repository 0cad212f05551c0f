"""Deliberately wrong programs: the oracle must fail them (proof that a comparison can fail).

Each reuses a real workload's parameters, inputs and float64 reference but emits a program
that differs from it in a known way.  Registered as workloads so they travel through the same
pipeline (and worker processes, via FUZZHARNESS_PLUGINS=tests.plugins.wrong_programs).
"""

from __future__ import annotations

from generators.workloads.base import register, workloads
from generators.workloads.matmul import DTYPES, Matmul


@register
class MatmulDropsLastTerm(Matmul):
    """C = A[:, :K-1] @ B[:K-1, :]: one reduction term missing."""

    name = "test_matmul_drops_term"
    default = False

    def source(self, p):
        src = super().source(p)
        return src.replace(f'T.grid({p["M"]}, {p["N"]}, {p["K"]})',
                           f'T.grid({p["M"]}, {p["N"]}, {p["K"] - 1})')


@register
class MatmulOffByOne(Matmul):
    """Output column N-1 reads B's column 0: one off-by-one output element per row."""

    name = "test_matmul_off_by_one"
    default = False

    def source(self, p):
        din, acc, _ = DTYPES[p["dtype"]]
        src = super().source(p)
        return src.replace(
            f'T.Cast("{acc}", B[vk, vj])',
            f'T.Cast("{acc}", B[vk, T.if_then_else(vj == {p["N"] - 1}, 0, vj)])',
        )


__all__ = ["workloads"]
