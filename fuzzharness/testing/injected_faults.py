"""Injected faults: real kernels compiled by TVM from a program that differs in one known way.

Each fault is a non-default workload that overrides :meth:`Workload.kernel_source`
(the way :mod:`fuzzharness.testing.wrong_programs` does): the reference, the error model, the order
analysis and the unscheduled baseline all see the workload's declared program, only the
scheduled kernel is built from the faulty one — as if TVM had miscompiled the declared
program into it.  ``benchmarks/oracle_power.py`` measures which share of them the oracle
catches; the tests use a few of them to check that a change of the oracle still catches them.

:data:`FAULTS` maps a short fault name to (workload name, base workload, dtype labels the fault
is a fault for).  "Accumulator narrowed to fp16" is not a fault where the accumulator is
already fp16 (float16) or rounds to bfloat16 at every step anyway (bfloat16).
"""

from __future__ import annotations

from fuzzharness.generators.workloads.base import DTYPE_LABELS, register, workloads
from fuzzharness.generators.workloads.layer_norm import EPS, LayerNorm
from fuzzharness.generators.workloads.matmul import Matmul
from fuzzharness.generators.workloads.pooling import Pool2d
from fuzzharness.generators.workloads.softmax import Softmax


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, (old, text)
    return text.replace(old, new, 1)


@register
class FaultDroppedTerm(Matmul):
    """C = A[:, 1:] @ B[1:, :]: the first reduction term is never added."""

    name = "fault_dropped_term"
    default = False

    def kernel_source(self, p):
        acc = DTYPE_LABELS[p["dtype"]][1]
        old = f'T.Cast("{acc}", A[vi, vk]) * T.Cast("{acc}", B[vk, vj])'
        return _replace_once(self.source(p), old, f"T.if_then_else(vk == 0, T.{acc}(0), {old})")


@register
class FaultNarrowedAccumulator(Matmul):
    """The accumulator is rounded to float16 after every step (it is declared wider)."""

    name = "fault_narrowed_accumulator"
    default = False
    dtype_labels = ("float32", "float16-acc32", "float16-acc32-out16")

    def kernel_source(self, p):
        acc = DTYPE_LABELS[p["dtype"]][1]
        target = "C" if p["dtype"] == "float32" or p["dtype"] == "float16-acc32" else "C_acc"
        old = (f'{target}[vi, vj] = {target}[vi, vj] + T.Cast("{acc}", A[vi, vk]) '
               f'* T.Cast("{acc}", B[vk, vj])')
        new = (f'{target}[vi, vj] = T.Cast("{acc}", T.Cast("float16", {target}[vi, vj] + '
               f'T.Cast("{acc}", A[vi, vk]) * T.Cast("{acc}", B[vk, vj])))')
        return _replace_once(self.source(p), old, new)


@register
class FaultWrongInit(Matmul):
    """The accumulator starts at 1 instead of 0."""

    name = "fault_wrong_init"
    default = False

    def kernel_source(self, p):
        acc = DTYPE_LABELS[p["dtype"]][1]
        return _replace_once(self.source(p), f"] = T.{acc}(0)", f"] = T.{acc}(1)")


@register
class FaultVarianceNMinus1(LayerNorm):
    """The variance is divided by N − 1 instead of N."""

    name = "fault_variance_n_minus_1"
    default = False

    def kernel_source(self, p):
        ct = DTYPE_LABELS[p["dtype"]][1]
        n = p["N"]
        return _replace_once(self.source(p), f"vsum[vb, vi] / T.{ct}({n})",
                             f"vsum[vb, vi] / T.{ct}({n - 1})")


@register
class FaultEpsDropped(LayerNorm):
    """``rsqrt(var + eps)`` loses its ``+ eps``."""

    name = "fault_eps_dropped"
    default = False

    def kernel_source(self, p):
        ct = DTYPE_LABELS[p["dtype"]][1]
        return _replace_once(self.source(p), f" + T.{ct}({EPS})", "")


@register
class FaultSoftmaxMissingExp(Softmax):
    """The softmax denominator misses the exponential of the row's last element."""

    name = "fault_softmax_missing_exp"
    default = False

    def kernel_source(self, p):
        ct = DTYPE_LABELS[p["dtype"]][1]
        n = p["N"]
        return _replace_once(self.source(p), "S[vb, vi] = S[vb, vi] + E[vb, vi, vj]",
                             f"S[vb, vi] = S[vb, vi] + T.if_then_else(vj == {n - 1}, "
                             f"T.{ct}(0), E[vb, vi, vj])")


@register
class FaultAvgPoolKPlus1(Pool2d):
    """Average pooling divides by k + 1 (``count_include_pad`` programs)."""

    name = "fault_avgpool_k_plus_1"
    default = False

    def kernel_source(self, p):
        assert p["kind"] == "avg" and p["count_include_pad"]
        acc = self.io_dtypes(p)[1]
        k = p["KH"] * p["KW"]
        return _replace_once(self.source(p), f"/ T.{acc}({k})", f"/ T.{acc}({k + 1})")


@register
class FaultWindowShifted(Pool2d):
    """The average-pooling window is read one row further down (clamped at the last row)."""

    name = "fault_window_shifted"
    default = False

    def kernel_source(self, p):
        assert p["kind"] == "avg"
        s, last = p["stride"], p["H"] + 2 * p["pad"] - 1
        return _replace_once(self.source(p), f"voh * {s} + vrh",
                             f"T.min(voh * {s} + vrh + 1, {last})")


#: fault → (workload, dtype labels where it is a fault)
FAULTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "one dropped term": ("fault_dropped_term", ("float16", "bfloat16", "float16-acc32", "float32")),
    "accumulator narrowed to fp16": ("fault_narrowed_accumulator", ("float16-acc32", "float32")),
    "variance/(N-1)": ("fault_variance_n_minus_1", ("float16", "bfloat16", "float16-acc32", "float32")),
    "eps dropped": ("fault_eps_dropped", ("float16", "bfloat16", "float16-acc32", "float32")),
    "softmax: one exp missing": ("fault_softmax_missing_exp",
                                 ("float16", "bfloat16", "float16-acc32", "float32")),
    "avg-pool/(k+1)": ("fault_avgpool_k_plus_1", ("float16", "bfloat16", "float16-acc32", "float32")),
    "window shifted by one": ("fault_window_shifted",
                              ("float16", "bfloat16", "float16-acc32", "float32")),
    "wrong init value": ("fault_wrong_init", ("float16", "bfloat16", "float16-acc32", "float32")),
}

__all__ = ["FAULTS", "workloads"]
