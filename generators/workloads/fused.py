"""A matmul fused with an elementwise epilogue: ``out = f_n(… f_1(A @ B, e_1) …, e_n)``.

The epilogue draws 1-3 operations (any of :mod:`fuzzharness.generators.workloads.chain`; integer ones for
int8) whose operands are a per-column ``bias`` (N,), a per-column ``scale`` (N,) or a full
``residual`` (M, N).  Blocks: ``C`` (reduction into ``C_acc`` in the accumulation dtype) and
one block per epilogue operation, computed in the accumulation dtype; the last stores to the
output dtype.  Error model: a dot product followed by the running error bound of the chain.
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

OPERANDS = ("bias", "scale", "residual")


@register
class FusedEpilogue(Workload):
    name = "fused_epilogue"
    description = "C = A @ B, then 1-3 fused elementwise operations (bias, scale, residual, activations)"
    dtype_labels = tuple(DTYPE_LABELS)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        m = draw_extent(data, 32)
        n = draw_extent(data, 32)
        k = draw_extent(data, min(reduction_limit(options, label), 256))
        names = chain.op_names(integer_only=label == "int8")
        steps = []
        for _ in range(data.draw(st.integers(1, 3))):
            op = data.draw(st.sampled_from(names))
            arg = data.draw(st.sampled_from(OPERANDS)) if chain.OPS[op].arity == 2 else None
            steps.append({"op": op, "arg": arg})
        return {"M": m, "N": n, "K": k, "steps": steps, "dtype": label}

    def _operands(self, p, din) -> dict[str, chain.Operand]:
        M, N = p["M"], p["N"]
        return {"bias": chain.Operand("bias", (N,), "v1", din),
                "scale": chain.Operand("scale", (N,), "v1", din),
                "residual": chain.Operand("residual", (M, N), "v0, v1", din)}

    def _used(self, p) -> list[str]:
        used = {s["arg"] for s in p["steps"] if s["arg"]}
        return [n for n in OPERANDS if n in used]

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        M, N, K = p["M"], p["N"], p["K"]
        ops = self._operands(p, din)
        extra = "".join(f", {n}: {buf(ops[n].shape, din)}" for n in self._used(p))
        allocs, nests = chain.emit(p["steps"], "C_acc[v0, v1]", ops, (M, N), acc, dout, "out")
        return f'''
@T.prim_func(s_tir=True)
def main(A: {buf((M, K), din)}, B: {buf((K, N), din)}{extra}, out: {buf((M, N), dout)}):
{alloc("C_acc", (M, N), acc)}{allocs}    for i, j, k in T.grid({M}, {N}, {K}):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C_acc[vi, vj] = T.{acc}(0)
            C_acc[vi, vj] = C_acc[vi, vj] + T.Cast("{acc}", A[vi, vk]) * T.Cast("{acc}", B[vk, vj])
{nests}'''

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        k = p["K"]
        used = self._used(p)
        base = float(numerics.int_range(din)[1]) if numerics.is_int(din) else 1.0
        scale = chain.safe_scale(p["steps"], used, (acc, dout), base=base, first=lambda s: k * s * s)
        m = chain.exact_int_max(p["steps"], used, din, (acc, dout), first=lambda s: k * s * s)
        if numerics.is_int(din):
            scale = float(min(int(scale), m))
        specials = ALL_SPECIALS if numerics.is_float(din) and chain.nan_safe(p["steps"]) else ()
        ops = self._operands(p, din)
        return [InputSpec("A", (p["M"], k), din, scale=scale, int_max=m, specials=specials),
                InputSpec("B", (k, p["N"]), din, scale=scale, int_max=m, specials=specials)] + [
                InputSpec(n, ops[n].shape, din, scale=scale, int_max=m, specials=specials)
                for n in used]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("out", (p["M"], p["N"]), DTYPE_LABELS[p["dtype"]][2])]

    def reference(self, p, inputs, numerics_):
        din, _, dout = DTYPE_LABELS[p["dtype"]]
        a, b = as_f64(inputs["A"]), as_f64(inputs["B"])
        acc = numerics_.accumulation_dtype("C")
        operands = {n: Approx.exact(inputs[n], din) for n in self._used(p)}
        folded = numerics_.folds("C", chain.first_block(p["steps"]))
        y = chain.reduction_then(p["steps"], dot(a, b), dot(np.abs(a), np.abs(b)), p["K"],
                                 acc=acc, products=True, operands=operands, folded=folded)
        return {"out": bounds.to_expected(y, dout, "fused_epilogue")}
