"""Matrix multiplication ``C[i, j] = Σ_k A[i, k] · B[k, j]``, the reduction every bug hunt starts with.

Blocks: ``C`` (the reduction; it accumulates into ``C`` itself, or into ``C_acc`` when the
accumulator is wider than the output) and ``C_cast`` (the store of ``C_acc`` to ``C``).
Error model: a k-term dot product (:func:`fuzzharness.oracles.bounds.reduction`, products), with the
accumulation dtype read from the program.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads.base import (
    ALL_SPECIALS,
    DTYPE_LABELS,
    GenOptions,
    TensorSpec,
    Workload,
    alloc,
    as_f64,
    buf,
    cast_block,
    draw_extent,
    draw_label,
    exact_int_max,
    exact_set,
    reduction_limit,
    register,
)
from fuzzharness.oracles import bounds, numerics

# label → (input dtype, accumulation dtype, output dtype)
DTYPES = DTYPE_LABELS


def specials(din: str) -> tuple[str, ...]:
    return ALL_SPECIALS if numerics.is_float(din) else ()


def int_scale(din: str, k: int, acc: str) -> float:
    """Float-mode magnitude: 1 for floats; for integers the largest that cannot overflow."""
    if numerics.is_float(din):
        return 1.0
    return float(exact_int_max(k, din, (acc,), products=True))


@register
class Matmul(Workload):
    name = "matmul"
    description = "C = A @ B with an explicit accumulation dtype"
    dtype_labels = tuple(DTYPES)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        dtype = draw_label(data, self, options)
        m = draw_extent(data, 64)
        n = draw_extent(data, 64)
        k = draw_extent(data, reduction_limit(options, dtype))
        return {"M": m, "N": n, "K": k, "dtype": dtype}

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = DTYPES[p["dtype"]]
        M, N, K = p["M"], p["N"], p["K"]
        target = "C" if acc == dout else "C_acc"
        text = f'''
@T.prim_func(s_tir=True)
def main(A: {buf((M, K), din)}, B: {buf((K, N), din)}, C: {buf((M, N), dout)}):
'''
        if target != "C":
            text += alloc(target, (M, N), acc)
        text += f'''    for i, j, k in T.grid({M}, {N}, {K}):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                {target}[vi, vj] = T.{acc}(0)
            {target}[vi, vj] = {target}[vi, vj] + T.Cast("{acc}", A[vi, vk]) * T.Cast("{acc}", B[vk, vj])
'''
        if target != "C":
            text += cast_block(target, "C", (M, N), dout, "C_cast")
        return text

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc, dout = DTYPES[p["dtype"]]
        m = exact_int_max(p["K"], din, (acc, dout), products=True)
        s = int_scale(din, p["K"], acc)
        es = exact_set(p["K"], din, acc, dout, products=True)
        return [
            InputSpec("A", (p["M"], p["K"]), din, scale=s, int_max=m, specials=specials(din), exact=es),
            InputSpec("B", (p["K"], p["N"]), din, scale=s, int_max=m, specials=specials(din), exact=es),
        ]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("C", (p["M"], p["N"]), DTYPES[p["dtype"]][2])]

    def reference(self, p, inputs, numerics):
        a, b = as_f64(inputs["A"]), as_f64(inputs["B"])
        return {
            "C": bounds.reduction(
                dot(a, b),
                dot(np.abs(a), np.abs(b)),
                p["K"],
                acc_dtype=numerics.accumulation_dtype("C"),
                out_dtype=DTYPES[p["dtype"]][2],
                products=True,
                model="dot",
            )
        }


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` over the last axis of a and the first of b, with IEEE special values honoured.

    BLAS may skip zeros or reorder around inf/nan; with finite inputs it is used, otherwise an
    explicit broadcast-multiply-sum gives IEEE semantics (inf·0 = nan, inf − inf = nan).
    """
    if np.isfinite(a).all() and np.isfinite(b).all():
        return a @ b
    with np.errstate(invalid="ignore", over="ignore"):
        return (a[..., :, :, None] * b[..., None, :, :]).sum(axis=-2)
