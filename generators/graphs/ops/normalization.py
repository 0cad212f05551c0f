"""Softmax and layer norm: reductions with a formula, bounded by following it.

``softmax`` (any axis): TVM legalizes ``relax.nn.softmax`` to TOPI's four blocks — row
maximum (starting from the dtype's lowest finite value), ``exp(x − max)``, the sum of the
exponentials, the division — all in the graph dtype: exactly the softmax workload's formula,
whose bound :func:`fuzzharness.generators.workloads.softmax.softmax_bound` is shared.

``layer_norm`` over the last one or two axes, with ``gamma`` and ``beta`` inputs of the
normalised extents: TVM computes the sum, the mean (a stored division), the sum of centred
squares and ``(x − μ)·rsqrt(σ²/N + eps)`` in float32 (a float16 ``x`` is cast up), then
casts to the graph dtype and applies ``· gamma + beta`` there —
:func:`fuzzharness.generators.workloads.layer_norm.layer_norm_bound` with ``stat="float32"``.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from fuzzharness.generators.graphs.nodes import Node
from fuzzharness.generators.graphs.ops.base import (
    DrawContext,
    GraphOp,
    norm_axis,
    register_op,
    require,
)
from fuzzharness.generators.workloads.layer_norm import layer_norm_bound
from fuzzharness.generators.workloads.softmax import softmax_bound

EPS = 1e-5
#: the softmax sum runs in the graph dtype: rows long enough to make fp16's γ_k useless
#: are not drawn (the reduction would be judged inconclusive)
MAX_SOFTMAX_ROW = {"float32": 4096, "float16": 256}


@register_op
class Softmax(GraphOp):
    name = "softmax"
    weight = 2
    relax_ops = ("nn.softmax",)

    def draw(self, ctx: DrawContext) -> Node | None:
        limit = MAX_SOFTMAX_ROW[ctx.dtype]
        x = ctx.pick(lambda s: len(s) >= 1 and min(s) <= limit)
        if x is None:
            return None
        rank = len(ctx.shapes[x])
        axes = [a for a in range(rank) if ctx.shapes[x][a] <= limit]
        axis = ctx.draw(st.sampled_from(axes))
        if ctx.draw(st.booleans()):
            axis -= rank  # negative axes are spelled too
        return ctx.node(self.name, [x], {"axis": axis})

    def infer(self, shapes, attrs):
        require(len(shapes) == 1, "softmax takes one argument")
        norm_axis(attrs["axis"], len(shapes[0]))
        return shapes[0]

    def emit(self, args, shapes, attrs, dtype):
        from tvm import relax

        return relax.op.nn.softmax(args[0], axis=attrs["axis"])

    def reference(self, args, attrs, dtype):
        axis = norm_axis(attrs["axis"], args[0].value.ndim)
        return softmax_bound(args[0], axis, dtype, dtype, dtype)

    def magnitude(self, mags, shapes, attrs):
        return 1.0

    def peak(self, mags, shapes, attrs) -> float:
        # the sum of the exponentials, and x − max
        return max(float(shapes[0][norm_axis(attrs["axis"], len(shapes[0]))]), 2 * mags[0])


@register_op
class LayerNorm(GraphOp):
    name = "layer_norm"
    weight = 2
    relax_ops = ("nn.layer_norm",)

    def draw(self, ctx: DrawContext) -> Node | None:
        x = ctx.pick(lambda s: len(s) >= 1 and s[-1] >= 2)
        if x is None:
            return None
        rank = len(ctx.shapes[x])
        naxes = ctx.draw(st.integers(1, min(2, rank)))
        axes = list(range(rank - naxes, rank))
        dims = [[x, a] for a in axes]
        gamma = ctx.new_input("g", dims)
        beta = ctx.new_input("b", dims)
        return ctx.node(self.name, [x, gamma, beta], {"axes": axes, "epsilon": EPS})

    def infer(self, shapes, attrs):
        require(len(shapes) == 3, "layer_norm takes data, gamma and beta")
        x = shapes[0]
        axes = [norm_axis(a, len(x)) for a in attrs["axes"]]
        want = tuple(x[a] for a in axes)
        require(shapes[1] == want and shapes[2] == want,
                f"layer_norm: gamma {shapes[1]} / beta {shapes[2]} != {want}")
        return x

    def emit(self, args, shapes, attrs, dtype):
        from tvm import relax

        return relax.op.nn.layer_norm(args[0], args[1], args[2], axes=attrs["axes"],
                                      epsilon=attrs["epsilon"])

    def reference(self, args, attrs, dtype):
        x, gamma, beta = args
        axes = tuple(norm_axis(a, x.value.ndim) for a in attrs["axes"])
        # gamma/beta broadcast against the normalised trailing axes
        return layer_norm_bound(x, gamma, beta, axes, stat="float32", affine=dtype,
                                eps=attrs["epsilon"], acc_mean="float32", acc_var="float32")

    def magnitude(self, mags, shapes, attrs):
        n = 1
        for a in attrs["axes"]:
            n *= shapes[0][a]
        return math.sqrt(n) * mags[1] + mags[2]  # |x − μ| ≤ √N·σ
