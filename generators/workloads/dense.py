"""Dense layer: ``Y = X @ Wᵀ + bias`` with an optional ReLU (``nn.dense`` + bias + relu).

Blocks: ``dense`` (the K-term reduction into ``D``, in the accumulation dtype), then the
epilogue ``add_0`` (bias, broadcast along rows) and ``relu_1``, computed in the accumulation
dtype; the last stores to the output dtype.  Error model: a dot product
(:func:`fuzzharness.oracles.bounds.accumulate`) followed by the running error bound of the epilogue.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads import chain
from fuzzharness.generators.workloads.base import (
    ALL_SPECIALS,
    DTYPE_LABELS,
    GenOptions,
    TensorSpec,
    Workload,
    alloc,
    as_f64,
    buf,
    draw_extent,
    draw_label,
    reduction_limit,
    register,
)
from fuzzharness.generators.workloads.matmul import dot
from fuzzharness.oracles import bounds, numerics
from fuzzharness.oracles.bounds import Approx


def epilogue(relu: bool) -> list[dict]:
    return [{"op": "add", "arg": "bias"}] + ([{"op": "relu", "arg": None}] if relu else [])


@register
class Dense(Workload):
    name = "dense"
    description = "Y = relu?(X @ W^T + bias)"
    dtype_labels = tuple(DTYPE_LABELS)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        m = draw_extent(data, 32)
        n = draw_extent(data, 64)
        k = draw_extent(data, reduction_limit(options, label))
        relu = data.draw(st.booleans())
        return {"M": m, "N": n, "K": k, "relu": relu, "dtype": label}

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        M, N, K = p["M"], p["N"], p["K"]
        operands = {"bias": chain.Operand("bias", (N,), "v1", din)}
        allocs, nests = chain.emit(epilogue(p["relu"]), "D[v0, v1]", operands, (M, N), acc, dout, "Y")
        return f'''
@T.prim_func(s_tir=True)
def main(X: {buf((M, K), din)}, W: {buf((N, K), din)}, bias: {buf((N,), din)}, Y: {buf((M, N), dout)}):
{alloc("D", (M, N), acc)}{allocs}    for i, j, k in T.grid({M}, {N}, {K}):
        with T.sblock("dense"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                D[vi, vj] = T.{acc}(0)
            D[vi, vj] = D[vi, vj] + T.Cast("{acc}", X[vi, vk]) * T.Cast("{acc}", W[vj, vk])
{nests}'''

    def _magnitudes(self, p):
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        steps = epilogue(p["relu"])
        k = p["K"]
        base = float(numerics.int_range(din)[1]) if numerics.is_int(din) else 1.0
        scale = chain.safe_scale(steps, ["bias"], (acc, dout), base=base, first=lambda s: k * s * s)
        m = chain.exact_int_max(steps, ["bias"], din, (acc, dout), first=lambda s: k * s * s)
        if numerics.is_int(din):
            scale = float(min(int(scale), m))
        return scale, m

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din = DTYPE_LABELS[p["dtype"]][0]
        scale, m = self._magnitudes(p)
        specials = ALL_SPECIALS if numerics.is_float(din) and not p["relu"] else ()
        return [InputSpec("X", (p["M"], p["K"]), din, scale=scale, int_max=m, specials=specials),
                InputSpec("W", (p["N"], p["K"]), din, scale=scale, int_max=m, specials=specials),
                InputSpec("bias", (p["N"],), din, scale=scale, int_max=m, specials=specials)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("Y", (p["M"], p["N"]), DTYPE_LABELS[p["dtype"]][2])]

    def reference(self, p, inputs, numerics_):
        din, _, dout = DTYPE_LABELS[p["dtype"]]
        x, w = as_f64(inputs["X"]), as_f64(inputs["W"])
        acc = numerics_.accumulation_dtype("dense")
        steps = epilogue(p["relu"])
        y = chain.reduction_then(steps, dot(x, w.T), dot(np.abs(x), np.abs(w).T),
                                 p["K"], acc=acc, products=True,
                                 operands={"bias": Approx.exact(inputs["bias"], din)},
                                 folded=numerics_.folds("dense", chain.first_block(steps)))
        return {"Y": bounds.to_expected(y, dout, "dense")}
