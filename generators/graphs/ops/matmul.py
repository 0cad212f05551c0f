"""Matrix multiplication: ``relax.op.matmul(a, b)`` with numpy's batching rules.

``a`` is a value of rank ≥ 2 ``(..., M, K)``; ``b`` is a new weight ``(K, N)`` (a dense
layer) or ``(..., K, N)`` with the batch extents of ``a`` (a batched matmul), or another value
whose shape fits.  TVM legalizes it to one K-term reduction in the output dtype — the graph
dtype, or float32 when ``acc`` asks for it (``out_dtype="float32"`` then ``astype`` back).
Bound: :func:`fuzzharness.oracles.bounds.bilinear` with ``np.matmul`` as the float64 form.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.graphs.nodes import Node
from fuzzharness.generators.graphs.ops.base import (
    MAX_ELEMENTS,
    MAX_MACS,
    DrawContext,
    GraphOp,
    draw_extent,
    elements,
    register_op,
    require,
)
from fuzzharness.generators.graphs.ops.elementwise import broadcast
from fuzzharness.oracles import bounds


@register_op
class Matmul(GraphOp):
    name = "matmul"
    weight = 3
    integer_exact = True
    relax_ops = ("matmul",)

    def draw(self, ctx: DrawContext) -> Node | None:
        a = ctx.pick(lambda s: len(s) >= 2)
        if a is None:
            return None
        shape = ctx.shapes[a]
        rank = len(shape)
        kind = ctx.draw(st.sampled_from(["dense", "batched", "value"]))
        n = draw_extent(ctx, 64)
        acc = ctx.draw(st.sampled_from([None, "float32"])) if ctx.dtype == "float16" else None
        b = None
        if kind == "value":
            b = ctx.pick(lambda s: len(s) == 2 and s[0] == shape[-1])
        out = (*shape[:-1], n) if b is None else (*shape[:-1], ctx.shapes[b][1])
        if elements(out) > MAX_ELEMENTS or elements(out) * shape[-1] > MAX_MACS:
            return None
        if b is None:
            batch = [[a, i] for i in range(rank - 2)] if kind == "batched" else []
            b = ctx.new_input("w", [*batch, [a, rank - 1], n])
        return ctx.node(self.name, [a, b], {"acc": acc})

    def infer(self, shapes, attrs):
        require(len(shapes) == 2 and len(shapes[0]) >= 2 and len(shapes[1]) >= 2,
                "matmul takes two values of rank >= 2")
        a, b = shapes
        require(a[-1] == b[-2], f"matmul: K {a[-1]} != {b[-2]}")
        batch = broadcast(a[:-2], b[:-2])
        return (*batch, a[-2], b[-1])

    def emit(self, args, shapes, attrs, dtype):
        from tvm import relax

        acc = attrs.get("acc")
        y = relax.op.matmul(args[0], args[1], out_dtype=acc)
        return y if not acc or acc == dtype else relax.op.astype(y, dtype)

    def reference(self, args, attrs, dtype):
        acc = attrs.get("acc") or dtype
        a, b = (bounds.cast(x, acc) for x in args)
        k = args[0].value.shape[-1]
        return bounds.cast(bounds.bilinear(np.matmul, a, b, k, acc), dtype)

    def magnitude(self, mags, shapes, attrs):
        return shapes[0][-1] * mags[0] * mags[1]
