"""Layer normalisation over the last axis with scale and shift.

``y = (x − μ) · rsqrt(σ² + eps) · gamma + beta`` with ``μ = Σx / N`` and the two-pass
variance ``σ² = Σ(x − μ)² / N``.  Blocks: ``mean`` (Σx in the accumulation dtype), ``var``
(Σ(x − μ)², μ recomputed from the mean block's sum) and ``norm`` (the rest, stored to the
output dtype).  ``N`` and ``eps`` are literals of the compute dtype, rounded as the program
writes them (``T.bfloat16(1021)`` is 1020).  Error model: the running error bound along this
formula; a variance that cannot be told from ``−eps`` within its error makes the row
inconclusive (ill-conditioned), never a failure.  No exact-integer mode (``rsqrt``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads.base import (
    ALL_SPECIALS,
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
    register,
)
from fuzzharness.oracles import bounds, numerics
from fuzzharness.oracles.bounds import Approx

EPS = 1e-5
#: magnitudes of the second run's inputs (see LayerNorm.exact_inputs): s² stays a normal
#: float16 number, and eps (1e-5) is 0.6 % to 16 % of it
BALANCED = (2.0**-4, 2.0**-5, 2.0**-6, 2.0**-7)
#: longest row per compute dtype: the variance under rsqrt must stay distinguishable from
#: −eps within its worst-case error (γ_N of the mean and of the squares), or rows turn
#: inconclusive — at 512 fp16 terms most rows of a cancelling input did
MAX_ROW = {"float32": 1024, "float16": 128, "bfloat16": 16}


@register
class LayerNorm(Workload):
    name = "layer_norm"
    description = "layer norm over the last axis, two-pass variance, gamma and beta"
    dtype_labels = FLOAT_LABELS

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        compute = DTYPE_LABELS[label][1]
        m = draw_extent(data, 32)
        n = draw_extent(data, min(MAX_ROW[compute], options.max_reduction), lo=2)
        batch = data.draw(st.integers(1, 2))
        return {"B": batch, "M": m, "N": n, "dtype": label}

    def params_problem(self, p):
        if p["N"] < 2:  # draw_params: a row of one element has no variance to get wrong
            return "N must be at least 2"
        return super().params_problem(p)

    def source(self, p: dict[str, Any]) -> str:
        din, ct, dout = DTYPE_LABELS[p["dtype"]]
        B, M, N = p["B"], p["M"], p["N"]
        shape, rows = (B, M, N), (B, M)

        def c(name: str, idx: str) -> str:
            return f"{name}[{idx}]" if din == ct else f'T.Cast("{ct}", {name}[{idx}])'

        x = c("X", "vb, vi, vj")
        mu = f"msum[vb, vi] / T.{ct}({N})"
        value = (f"({x} - {mu}) * T.rsqrt(vsum[vb, vi] / T.{ct}({N}) + T.{ct}({EPS})) "
                 f"* {c('gamma', 'vj')} + {c('beta', 'vj')}")
        store = value if ct == dout else f'T.Cast("{dout}", {value})'
        return f'''
@T.prim_func(s_tir=True)
def main(X: {buf(shape, din)}, gamma: {buf((N,), din)}, beta: {buf((N,), din)}, Y: {buf(shape, dout)}):
{alloc("msum", rows, ct)}{alloc("vsum", rows, ct)}    for b, i, j in T.grid({B}, {M}, {N}):
        with T.sblock("mean"):
            vb, vi, vj = T.axis.remap("SSR", [b, i, j])
            with T.init():
                msum[vb, vi] = T.{ct}(0)
            msum[vb, vi] = msum[vb, vi] + {x}
    for b, i, j in T.grid({B}, {M}, {N}):
        with T.sblock("var"):
            vb, vi, vj = T.axis.remap("SSR", [b, i, j])
            with T.init():
                vsum[vb, vi] = T.{ct}(0)
            vsum[vb, vi] = vsum[vb, vi] + ({x} - {mu}) * ({x} - {mu})
    for b, i, j in T.grid({B}, {M}, {N}):
        with T.sblock("norm"):
            vb, vi, vj = T.axis.remap("SSS", [b, i, j])
            Y[vb, vi, vj] = {store}
'''

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din = DTYPE_LABELS[p["dtype"]][0]
        return [InputSpec("X", (p["B"], p["M"], p["N"]), din, scale=1.0, specials=ALL_SPECIALS),
                InputSpec("gamma", (p["N"],), din, scale=1.0),
                InputSpec("beta", (p["N"],), din, scale=1.0)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("Y", (p["B"], p["M"], p["N"]), DTYPE_LABELS[p["dtype"]][2])]

    def exact_inputs(self, p: dict[str, Any], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Balanced rows: ``N // 2`` elements ``+s`` and ``N // 2`` elements ``−s`` (a 0 when N
        is odd), shuffled, with ``s`` a power of two from :data:`BALANCED` drawn per row: the
        row sum is exactly 0 in any order, the mean 0, every centred square exactly ``s²`` and
        their sum exact, so the statistics are exact and every output is determined by the
        element-wise rest.  ``s²`` is small enough for ``eps`` to show in ``rsqrt(σ² + eps)``,
        and differs between rows, so that a perturbation of the variance (say, by N/(N−1))
        does not meet the same rounding in every row.  gamma and beta: integers in [−8, 8] / 8."""
        din = DTYPE_LABELS[p["dtype"]][0]
        B, M, N = p["B"], p["M"], p["N"]
        rows = []
        for _ in range(B * M):
            s = float(rng.choice(BALANCED))
            rows.append(rng.permutation(np.concatenate([np.full(N // 2, s), np.full(N // 2, -s),
                                                        np.zeros(N % 2)])))
        x = np.stack(rows).reshape(B, M, N)
        gamma = rng.integers(-8, 8, N, endpoint=True) / 8.0
        beta = rng.integers(-8, 8, N, endpoint=True) / 8.0
        return {"X": numerics.round_to(x, din), "gamma": numerics.round_to(gamma, din),
                "beta": numerics.round_to(beta, din)}

    def reference(self, p, inputs, numerics_):
        din, ct, dout = DTYPE_LABELS[p["dtype"]]
        x = Approx.exact(as_f64(inputs["X"]), din)
        gamma = Approx.exact(as_f64(inputs["gamma"]), din)
        beta = Approx.exact(as_f64(inputs["beta"]), din)
        # bfloat16 programs compute in float32, their literals included (oracles/program.py)
        cd = numerics_.compute_dtype(ct)
        y = layer_norm_bound(x, gamma, beta, -1, stat=cd, affine=cd, eps=EPS,
                             acc_mean=numerics_.accumulation_dtype("mean"),
                             acc_var=numerics_.accumulation_dtype("var"))
        return {"Y": bounds.to_expected(y, dout, "layer_norm")}


def layer_norm_bound(x: Approx, gamma: Approx, beta: Approx, axes, *, stat: str, affine: str,
                     eps: float, acc_mean: str, acc_var: str) -> Approx:
    """Layer norm of ``x`` over ``axes`` by the two-pass formula: the statistics and the
    normalisation ``(x − μ) · rsqrt(σ² + eps)`` in ``stat`` (sums accumulated in ``acc_mean``
    and ``acc_var``; the element count and ``eps`` literals of ``stat``), then ``· gamma +
    beta`` in ``affine`` (the normalised value cast to it).  Shared with the graph operator
    (:mod:`fuzzharness.generators.graphs.ops.layer_norm`): TVM's legalization computes the statistics in
    float32 and the affine part in the graph dtype."""
    axes = tuple(axes) if isinstance(axes, tuple | list) else (axes,)
    xs = bounds.cast(x, stat)
    count = 1
    for a in axes:
        count *= x.value.shape[a]
    n = bounds.const(count, stat)
    msum = bounds.reduce_sum(xs, axes, acc_mean, keepdims=True)
    mu = bounds.div(msum, n, stat)
    d = bounds.sub(xs, mu, stat)
    vsum = bounds.reduce_sum(bounds.mul(d, d, stat), axes, acc_var, keepdims=True)
    r = bounds.rsqrt(bounds.add(bounds.div(vsum, n, stat), bounds.const(eps, stat), stat), stat)
    z = bounds.cast(bounds.mul(d, r, stat), affine)
    return bounds.add(bounds.mul(z, bounds.cast(gamma, affine), affine),
                      bounds.cast(beta, affine), affine)
