"""2-D max and average pooling (NCHW or NHWC), square stride, symmetric padding smaller
than the window (so every window holds a real element).

TVM legalizes ``relax.nn.max_pool2d`` to a ``pad_temp`` block (the dtype's lowest value)
and a max reduction — exact, the error of a window's largest input at most; and
``relax.nn.avg_pool2d`` to zero padding, a sum in the graph dtype and a division by the
window size or, with ``count_include_pad=False``, by the number of real elements.  The
windows, output extents and real-element counts are the pool2d workload's
(:class:`fuzzharness.generators.workloads.pooling.Pool2d`).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.graphs.nodes import Node
from fuzzharness.generators.graphs.ops.base import DrawContext, GraphOp, register_op, require
from fuzzharness.generators.workloads.base import lowest_value
from fuzzharness.generators.workloads.pooling import Pool2d
from fuzzharness.oracles import bounds
from fuzzharness.oracles.bounds import Approx

_POOL = Pool2d()


def _params(shape, attrs) -> dict:
    h, w = (shape[2], shape[3]) if attrs["layout"] == "NCHW" else (shape[1], shape[2])
    kh, kw = attrs["pool_size"]
    return {"layout": attrs["layout"], "pad": attrs["padding"], "stride": attrs["strides"],
            "KH": kh, "KW": kw, "H": h, "W": w, "count_include_pad": attrs["count_include_pad"]}


class Pool(GraphOp):
    kind = ""

    def draw(self, ctx: DrawContext) -> Node | None:
        x = ctx.pick(lambda s: len(s) == 4)
        if x is None:
            return None
        layout = ctx.draw(st.sampled_from(["NCHW", "NHWC"]))
        kh, kw = ctx.draw(st.integers(1, 4)), ctx.draw(st.integers(1, 4))
        stride = ctx.draw(st.integers(1, 3))
        pad = ctx.draw(st.integers(0, min(kh, kw) - 1))
        include = ctx.draw(st.booleans())
        attrs = {"layout": layout, "pool_size": [kh, kw], "strides": stride, "padding": pad,
                 "count_include_pad": include}
        try:
            self.infer([ctx.shapes[x]], attrs)
        except ValueError:
            return None
        return ctx.node(self.name, [x], attrs)

    def infer(self, shapes, attrs):
        require(len(shapes) == 1 and len(shapes[0]) == 4, f"{self.name} takes one 4-d value")
        require(attrs["layout"] in ("NCHW", "NHWC"), f"unknown layout {attrs['layout']!r}")
        kh, kw = attrs["pool_size"]
        require(0 <= attrs["padding"] < min(kh, kw) and attrs["strides"] >= 1,
                f"{self.name}: padding must be smaller than the window")
        p = _params(shapes[0], attrs)
        oh, ow = _POOL.out_h(p), _POOL.out_w(p)
        require(oh >= 1 and ow >= 1, f"{self.name}: the window is larger than the padded input")
        n = shapes[0][0]
        c = shapes[0][1] if attrs["layout"] == "NCHW" else shapes[0][3]
        return (n, c, oh, ow) if attrs["layout"] == "NCHW" else (n, oh, ow, c)

    def emit(self, args, shapes, attrs, dtype):
        from tvm import relax

        fn = getattr(relax.op.nn, f"{self.kind}_pool2d")
        s, pad = attrs["strides"], attrs["padding"]
        return fn(args[0], pool_size=attrs["pool_size"], strides=(s, s),
                  padding=(pad, pad, pad, pad), layout=attrs["layout"],
                  count_include_pad=attrs["count_include_pad"])

    def windows(self, x: np.ndarray, attrs, fill: float) -> np.ndarray:
        """(N, OH, OW, C, KH, KW) windows of ``x`` (NHWC order)."""
        return _POOL._windows(_params(x.shape, attrs), x, fill)

    def magnitude(self, mags, shapes, attrs):
        return mags[0]


@register_op
class MaxPool(Pool):
    name = "max_pool2d"
    kind = "max"
    integer_exact = True
    relax_ops = ("nn.max_pool2d",)

    def reference(self, args, attrs, dtype):
        x = args[0]
        p = _params(x.value.shape, attrs)
        low = lowest_value(dtype)
        v = np.maximum(self.windows(x.value, attrs, low).max(axis=(4, 5)), low)
        e = self.windows(np.broadcast_to(x.err, x.value.shape), attrs, 0.0).max(axis=(4, 5))
        return Approx(_POOL._to_layout(p, v), _POOL._to_layout(p, e), dtype, x.notes)


@register_op
class AvgPool(Pool):
    name = "avg_pool2d"
    kind = "avg"
    relax_ops = ("nn.avg_pool2d",)

    def reference(self, args, attrs, dtype):
        x = args[0]
        p = _params(x.value.shape, attrs)
        win = Approx(self.windows(x.value, attrs, 0.0),
                     self.windows(np.broadcast_to(x.err, x.value.shape), attrs, 0.0), dtype,
                     x.notes)
        s = bounds.reduce_sum(win, (4, 5), dtype)
        s = Approx(_POOL._to_layout(p, s.value), _POOL._to_layout(p, s.err), dtype, s.notes)
        if attrs["count_include_pad"]:
            count = bounds.const(p["KH"] * p["KW"], dtype)
        else:
            count = bounds.cast(Approx.exact(_POOL.real_counts(p), "int32"), dtype)
        return bounds.div(s, count, dtype)
