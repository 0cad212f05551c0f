"""A row reduction (sum, max or min) followed by an elementwise epilogue:
``out[i] = f_n(… f_1(red_j A[i, j], e_1) …, e_n)``.

Reductions whose identity is not 0 (max: the lowest value, min: the highest) meet the
primitives that fold or move an epilogue — ``fuse_reduction_epilogue`` (TVM's Bias pattern
is linear: folding ``+ bias`` into a *max*'s init changes the result, so TVM must refuse it),
``reverse_compute_inline``, ``reverse_compute_at``, ``decompose_reduction`` — which the
matmul epilogues (sums only) never show them.  Half the cases start the epilogue with
``+ bias`` (the pattern fuse_reduction_epilogue looks for); the rest draw it freely from
:mod:`fuzzharness.generators.workloads.chain`.

Blocks: ``red`` (the reduction into ``R``, in the accumulation dtype; max/min of float16 in
float16, of float16-acc32 in float32) and one block per epilogue operation; operands are a
per-row ``bias`` and ``scale`` (M,).  Error model: a k-term sum (max/min exact), then the
chain's running bound.
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
    INF_SPECIALS,
    GenOptions,
    TensorSpec,
    Workload,
    alloc,
    as_f64,
    buf,
    draw_extent,
    draw_label,
    highest,
    lowest,
    lowest_value,
    reduction_limit,
    register,
)
from fuzzharness.oracles import bounds, numerics
from fuzzharness.oracles.bounds import Approx

OPERANDS = ("bias", "scale")


@register
class ReduceEpilogue(Workload):
    name = "reduce_epilogue"
    description = "R[i] = sum / max / min_j A[i, j], then 1-2 fused elementwise operations"
    dtype_labels = ("float32", "float16", "float16-acc32")

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        op = data.draw(st.sampled_from(["sum", "max", "min"]))
        m = draw_extent(data, 64)
        n = draw_extent(data, min(reduction_limit(options, label), 256))
        bias_first = data.draw(st.booleans())
        steps = [{"op": "add", "arg": "bias"}] if bias_first else []
        for _ in range(data.draw(st.integers(1, 2)) - len(steps)):
            name = data.draw(st.sampled_from(chain.op_names(integer_only=False)))
            arg = data.draw(st.sampled_from(OPERANDS)) if chain.OPS[name].arity == 2 else None
            steps.append({"op": name, "arg": arg})
        return {"M": m, "N": n, "op": op, "steps": steps, "dtype": label}

    def io_dtypes(self, p) -> tuple[str, str, str]:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        return din, acc, dout

    def _used(self, p) -> list[str]:
        used = {s["arg"] for s in p["steps"] if s["arg"]}
        return [n for n in OPERANDS if n in used]

    def _operands(self, p, din) -> dict[str, chain.Operand]:
        return {n: chain.Operand(n, (p["M"],), "v0", din) for n in OPERANDS}

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = self.io_dtypes(p)
        M, N, op = p["M"], p["N"], p["op"]
        ops = self._operands(p, din)
        extra = "".join(f", {n}: {buf((M,), din)}" for n in self._used(p))
        load = "A[vi, vj]" if din == acc else f'T.Cast("{acc}", A[vi, vj])'
        init = {"sum": f"T.{acc}(0)", "max": lowest(acc), "min": highest(acc)}[op]
        update = {"sum": f"R[vi] + {load}", "max": f"T.max(R[vi], {load})",
                  "min": f"T.min(R[vi], {load})"}[op]
        allocs, nests = chain.emit(p["steps"], "R[v0]", ops, (M,), acc, dout, "out")
        return f'''
@T.prim_func(s_tir=True)
def main(A: {buf((M, N), din)}{extra}, out: {buf((M,), dout)}):
{alloc("R", (M,), acc)}{allocs}    for i, j in T.grid({M}, {N}):
        with T.sblock("red"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                R[vi] = {init}
            R[vi] = {update}
{nests}'''

    def _first(self, p):
        n = p["N"]
        return (lambda s: n * s) if p["op"] == "sum" else (lambda s: s)

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc, dout = self.io_dtypes(p)
        used = self._used(p)
        scale = chain.safe_scale(p["steps"], used, (acc, dout), first=self._first(p))
        m = chain.exact_int_max(p["steps"], used, din, (acc, dout), first=self._first(p))
        specials = ()
        if chain.nan_safe(p["steps"]):  # max/min lower to compare-and-select: no nan inputs
            specials = ALL_SPECIALS if p["op"] == "sum" else INF_SPECIALS
        return [InputSpec("A", (p["M"], p["N"]), din, scale=scale, int_max=m, specials=specials)] + [
            InputSpec(n, (p["M"],), din, scale=scale, int_max=m, specials=specials) for n in used]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("out", (p["M"],), self.io_dtypes(p)[2])]

    def reference(self, p, inputs, numerics_):
        din, acc, dout = self.io_dtypes(p)
        a = as_f64(inputs["A"])
        op = p["op"]
        operands = {n: Approx.exact(inputs[n], din) for n in self._used(p)}
        if op == "sum":  # folding the first step into a max's or min's init is a bug: see chain
            y = chain.reduction_then(p["steps"], a.sum(axis=1), np.abs(a).sum(axis=1), p["N"],
                                     acc=numerics_.accumulation_dtype("red"), products=False,
                                     operands=operands,
                                     folded=numerics_.folds("red", chain.first_block(p["steps"])))
        elif op == "max":
            r = Approx.exact(np.maximum(a.max(axis=1), lowest_value(acc)), acc)
            y = chain.reference(p["steps"], r, operands, acc)
        else:
            top = -lowest_value(acc) if numerics.is_float(acc) else numerics.int_range(acc)[1]
            r = Approx.exact(np.minimum(a.min(axis=1), top), acc)
            y = chain.reference(p["steps"], r, operands, acc)
        return {"out": bounds.to_expected(y, dout, "reduce_epilogue")}
