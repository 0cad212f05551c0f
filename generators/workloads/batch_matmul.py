"""Batched matrix multiplication with optionally transposed operands.

``C[b, i, j] = Σ_k A[b, i, k] · B[b, k, j]`` where ``A`` is stored ``(batch, M, K)`` or, with
``transpose_a``, ``(batch, K, M)``; ``B`` is ``(batch, K, N)`` or, with ``transpose_b``,
``(batch, N, K)`` (the ``nn.batch_matmul`` convention).  Blocks: ``C`` (reduction) and
``C_cast`` for a wider accumulator.  Error model: a k-term dot product, accumulation dtype
read from the program.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads.base import (
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
from fuzzharness.generators.workloads.matmul import dot, int_scale, specials
from fuzzharness.oracles import bounds


@register
class BatchMatmul(Workload):
    name = "batch_matmul"
    description = "C[b] = op(A[b]) @ op(B[b]), op = identity or transpose"
    dtype_labels = tuple(DTYPE_LABELS)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        dtype = draw_label(data, self, options)
        batch = draw_extent(data, 4)
        m = draw_extent(data, 24)
        n = draw_extent(data, 24)
        k = draw_extent(data, min(reduction_limit(options, dtype), 512))
        ta = data.draw(st.booleans())
        tb = data.draw(st.booleans())
        return {"batch": batch, "M": m, "N": n, "K": k, "transpose_a": ta, "transpose_b": tb,
                "dtype": dtype}

    def _shapes(self, p):
        b, m, n, k = p["batch"], p["M"], p["N"], p["K"]
        a_shape = (b, k, m) if p["transpose_a"] else (b, m, k)
        b_shape = (b, n, k) if p["transpose_b"] else (b, k, n)
        return a_shape, b_shape

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        a_shape, b_shape = self._shapes(p)
        shape = (p["batch"], p["M"], p["N"])
        target = "C" if acc == dout else "C_acc"
        a_idx = "vb, vk, vi" if p["transpose_a"] else "vb, vi, vk"
        b_idx = "vb, vj, vk" if p["transpose_b"] else "vb, vk, vj"
        text = f'''
@T.prim_func(s_tir=True)
def main(A: {buf(a_shape, din)}, B: {buf(b_shape, din)}, C: {buf(shape, dout)}):
'''
        if target != "C":
            text += alloc(target, shape, acc)
        text += f'''    for b, i, j, k in T.grid({p["batch"]}, {p["M"]}, {p["N"]}, {p["K"]}):
        with T.sblock("C"):
            vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
            with T.init():
                {target}[vb, vi, vj] = T.{acc}(0)
            {target}[vb, vi, vj] = {target}[vb, vi, vj] + T.Cast("{acc}", A[{a_idx}]) * T.Cast("{acc}", B[{b_idx}])
'''
        if target != "C":
            text += cast_block(target, "C", shape, dout, "C_cast")
        return text

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        a_shape, b_shape = self._shapes(p)
        m = exact_int_max(p["K"], din, (acc, dout), products=True)
        s = int_scale(din, p["K"], acc)
        es = exact_set(p["K"], din, acc, dout, products=True)
        return [InputSpec("A", a_shape, din, scale=s, int_max=m, specials=specials(din), exact=es),
                InputSpec("B", b_shape, din, scale=s, int_max=m, specials=specials(din), exact=es)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("C", (p["batch"], p["M"], p["N"]), DTYPE_LABELS[p["dtype"]][2])]

    def reference(self, p, inputs, numerics):
        a, b = as_f64(inputs["A"]), as_f64(inputs["B"])
        if p["transpose_a"]:
            a = np.swapaxes(a, 1, 2)
        if p["transpose_b"]:
            b = np.swapaxes(b, 1, 2)
        return {"C": bounds.reduction(
            dot(a, b), dot(np.abs(a), np.abs(b)), p["K"],
            acc_dtype=numerics.accumulation_dtype("C"), out_dtype=DTYPE_LABELS[p["dtype"]][2],
            products=True, model="dot")}
