"""Softmax over the last axis: ``y = exp(x − max x) / Σ exp(x − max x)``.

Blocks (TOPI's decomposition): ``max`` (row maximum, in :func:`~fuzzharness.generators.workloads.base.
minmax_dtype`), ``exp`` (``exp(x − m)`` in the compute dtype), ``sum`` (row sum of the
exponentials in the compute dtype) and ``norm`` (the division, stored to the output dtype).
Error model: the running error bound along this formula (:mod:`fuzzharness.oracles.bounds`): the max is
exact, the subtraction rounds once, ``exp`` carries libm's error and its argument's error,
the sum is a k-term reduction of computed terms, the division rounds once — so the bound
reflects the conditioning of each row.  Row lengths stay where γ_k of the compute dtype is
meaningful (no exact-integer mode: ``exp`` is never exact).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads.base import (
    DTYPE_LABELS,
    FLOAT_LABELS,
    GenOptions,
    TensorSpec,
    Workload,
    alloc,
    as_f64,
    buf,
    draw_extent,
    draw_label,
    lowest,
    lowest_value,
    minmax_dtype,
    register,
)
from fuzzharness.oracles import bounds, numerics
from fuzzharness.oracles.bounds import Approx

#: longest row per compute dtype: well inside n·u < 1 so the bound says something
MAX_ROW = {"float32": 1024, "float16": 512, "bfloat16": 64}
SCALE = 4.0  # inputs in [-4, 4]: exponentials span e^-8 .. 1
#: exp(−UNDERFLOW) rounds to 0 in float32 (and float16, bfloat16): the second run's inputs
UNDERFLOW = 110.0


@register
class Softmax(Workload):
    name = "softmax"
    description = "softmax over the last axis (max, exp, sum, normalise)"
    dtype_labels = FLOAT_LABELS

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        compute = DTYPE_LABELS[label][1]
        m = draw_extent(data, 32)
        n = draw_extent(data, min(MAX_ROW[compute], options.max_reduction))
        batch = data.draw(st.integers(1, 2))
        return {"B": batch, "M": m, "N": n, "dtype": label}

    def source(self, p: dict[str, Any]) -> str:
        din, ct, dout = DTYPE_LABELS[p["dtype"]]
        md = minmax_dtype(ct)
        B, M, N = p["B"], p["M"], p["N"]
        shape, rows = (B, M, N), (B, M)
        x = "X[vb, vi, vj]" if din == ct else f'T.Cast("{ct}", X[vb, vi, vj])'
        xm = x if md == ct else f'T.Cast("{md}", {x})'
        mx = "mx[vb, vi]" if md == ct else f'T.Cast("{ct}", mx[vb, vi])'
        quotient = "E[vb, vi, vj] / S[vb, vi]"
        store = quotient if ct == dout else f'T.Cast("{dout}", {quotient})'
        return f'''
@T.prim_func(s_tir=True)
def main(X: {buf(shape, din)}, Y: {buf(shape, dout)}):
{alloc("mx", rows, md)}{alloc("E", shape, ct)}{alloc("S", rows, ct)}    for b, i, j in T.grid({B}, {M}, {N}):
        with T.sblock("max"):
            vb, vi, vj = T.axis.remap("SSR", [b, i, j])
            with T.init():
                mx[vb, vi] = {lowest(md)}
            mx[vb, vi] = T.max(mx[vb, vi], {xm})
    for b, i, j in T.grid({B}, {M}, {N}):
        with T.sblock("exp"):
            vb, vi, vj = T.axis.remap("SSS", [b, i, j])
            E[vb, vi, vj] = T.exp({x} - {mx})
    for b, i, j in T.grid({B}, {M}, {N}):
        with T.sblock("sum"):
            vb, vi, vj = T.axis.remap("SSR", [b, i, j])
            with T.init():
                S[vb, vi] = T.{ct}(0)
            S[vb, vi] = S[vb, vi] + E[vb, vi, vj]
    for b, i, j in T.grid({B}, {M}, {N}):
        with T.sblock("norm"):
            vb, vi, vj = T.axis.remap("SSS", [b, i, j])
            Y[vb, vi, vj] = {store}
'''

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din = DTYPE_LABELS[p["dtype"]][0]
        # +inf only: a −inf row would meet the init value of the max (see argmax), nan the
        # compare-and-select order of max.
        return [InputSpec("X", (p["B"], p["M"], p["N"]), din, scale=SCALE, specials=("inf",))]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("Y", (p["B"], p["M"], p["N"]), DTYPE_LABELS[p["dtype"]][2])]

    def exact_inputs(self, p: dict[str, Any], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Rows of 0 and −UNDERFLOW, each with probability 1/2: every exponential is exactly 1 or
        exactly 0 (``exp(−110)`` is below half the smallest float32 subnormal), so each row sum
        is an exact count — in any order — and every output is 1/count or 0 correctly rounded.
        A missing or doubled term changes a count."""
        din = DTYPE_LABELS[p["dtype"]][0]
        x = np.where(rng.random((p["B"], p["M"], p["N"])) < 0.5, 0.0, -UNDERFLOW)
        return {"X": numerics.round_to(x, din)}

    def reference(self, p, inputs, numerics_):
        din, ct, dout = DTYPE_LABELS[p["dtype"]]
        ct = numerics_.compute_dtype(ct)  # bfloat16 programs compute in float32 (program.py)
        x = bounds.cast(Approx.exact(as_f64(inputs["X"]), din), ct)
        y = softmax_bound(x, -1, ct, numerics_.accumulation_dtype("sum"), minmax_dtype(ct))
        return {"Y": bounds.to_expected(y, dout, "softmax")}


def softmax_bound(x: Approx, axis: int, compute: str, acc: str, minmax: str) -> Approx:
    """Softmax of ``x`` (already in ``compute``) along ``axis``, by the program's formula:
    the maximum in ``minmax`` starting from its lowest finite value (exact, 1-Lipschitz: it
    carries the largest error of its row), ``exp(x − max)`` and the division in ``compute``,
    the sum accumulated in ``acc``.  Shared with the graph operator
    (:mod:`fuzzharness.generators.graphs.ops.softmax`), whose legalization is this formula."""
    m = bounds.reduce_max(x, axis, keepdims=True)
    m = Approx(np.maximum(m.value, lowest_value(minmax)), m.err, minmax, m.notes)
    mx = bounds.cast(m, compute)  # exact: m is a value of the compute dtype
    e = bounds.exp(bounds.sub(x, mx, compute), compute)
    s = bounds.reduce_sum(e, axis, acc, keepdims=True)
    return bounds.div(e, s, compute)
