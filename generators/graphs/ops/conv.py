"""2-D convolution: NCHW (OIHW weights) or NHWC (HWIO), per-axis strides and dilation,
asymmetric padding, groups (1, depthwise, or any divisor of the channels).

TVM legalizes ``relax.nn.conv2d`` to a ``pad_temp`` block (zero padding) and one reduction
over ``C/groups · KH · KW`` products, accumulated in the output dtype: the graph dtype, or
float32 when the node's ``acc`` attribute asks for it (``out_dtype="float32"``; the node then
casts back with ``astype``, the usual mixed-precision idiom).  Bound: the bilinear reduction
rule (:func:`fuzzharness.oracles.bounds.bilinear`) on the operands as computed, then the cast.  The
float64 value uses the conv2d workload's window extraction
(:func:`fuzzharness.generators.workloads.conv2d.windows`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.graphs.nodes import Node, Shape
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
from fuzzharness.generators.workloads.conv2d import windows
from fuzzharness.oracles import bounds

LAYOUTS = {"NCHW": "OIHW", "NHWC": "HWIO"}


def _dims(shapes: list[Shape], attrs: dict[str, Any]):
    x, w = shapes
    if attrs["layout"] == "NCHW":
        (n, c, h, wd), (f, ci, kh, kw) = x, w
    else:
        (n, h, wd, c), (kh, kw, ci, f) = x, w
    return n, c, h, wd, f, ci, kh, kw


def out_hw(h: int, w: int, kh: int, kw: int, attrs: dict[str, Any]) -> tuple[int, int]:
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = attrs["strides"], attrs["dilation"], attrs["padding"]
    return ((h + pt + pb - dh * (kh - 1) - 1) // sh + 1, (w + pl + pr - dw * (kw - 1) - 1) // sw + 1)


def conv64(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """The convolution in float64 (a bilinear form of ``x`` and ``w``), in the node's layout."""
    if attrs["layout"] == "NCHW":
        x, w = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)  # → NHWC, HWIO
    pt, pl, pb, pr = attrs["padding"]
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    kh, kw, cg, f = w.shape
    g = attrs["groups"]
    oh, ow = out_hw(x.shape[1], x.shape[2], kh, kw, attrs)
    fg = f // g
    parts = []
    for i in range(g):
        win = windows(xp[..., i * cg:(i + 1) * cg], kh, kw, tuple(attrs["strides"]),
                      tuple(attrs["dilation"]), oh, ow)
        parts.append(np.tensordot(win, w[..., i * fg:(i + 1) * fg], axes=([3, 4, 5], [0, 1, 2])))
    y = np.concatenate(parts, axis=-1)
    return y.transpose(0, 3, 1, 2) if attrs["layout"] == "NCHW" else y


@register_op
class Conv2d(GraphOp):
    name = "conv2d"
    weight = 3
    integer_exact = True
    relax_ops = ("nn.conv2d",)

    def draw(self, ctx: DrawContext) -> Node | None:
        x = ctx.pick(lambda s: len(s) == 4)
        if x is None:
            return None
        layout = ctx.draw(st.sampled_from(sorted(LAYOUTS)))
        caxis = 1 if layout == "NCHW" else 3
        shape = ctx.shapes[x]
        c = shape[caxis]
        kh, kw = (ctx.draw(st.sampled_from([1, 3, 2, 5])) for _ in range(2))
        strides = [ctx.draw(st.integers(1, 3)) for _ in range(2)]
        dilation = [ctx.draw(st.integers(1, 2)) for _ in range(2)]
        padding = [ctx.draw(st.integers(0, (k - 1) * d)) for k, d in
                   ((kh, dilation[0]), (kw, dilation[1]), (kh, dilation[0]), (kw, dilation[1]))]
        kind = ctx.draw(st.sampled_from(["dense", "depthwise", "grouped"]))
        divisors = [g for g in range(2, c + 1) if c % g == 0]
        groups = {"dense": 1, "depthwise": c}.get(kind) or (
            ctx.draw(st.sampled_from(divisors)) if divisors else 1)
        f = groups * draw_extent(ctx, max(1, 16 // groups))
        acc = (ctx.draw(st.sampled_from([None, "float32"])) if ctx.dtype == "float16" else None)
        attrs = {"layout": layout, "strides": strides, "padding": padding, "dilation": dilation,
                 "groups": groups, "acc": acc}
        ci = [x, caxis, groups] if groups > 1 else [x, caxis]
        wshape = [f, ci, kh, kw] if layout == "NCHW" else [kh, kw, ci, f]
        n, _, h, wd = (shape[0], c, *(shape[2:] if layout == "NCHW" else shape[1:3]))
        oh, ow = out_hw(h, wd, kh, kw, attrs)
        if oh < 1 or ow < 1 or n * oh * ow * f > MAX_ELEMENTS or \
                n * oh * ow * f * (c // groups) * kh * kw > MAX_MACS:
            return None
        wname = ctx.new_input("w", wshape)
        return ctx.node(self.name, [x, wname], attrs)

    def infer(self, shapes, attrs):
        require(len(shapes) == 2 and len(shapes[0]) == 4 and len(shapes[1]) == 4,
                "conv2d takes a 4-d data and a 4-d weight")
        require(attrs["layout"] in LAYOUTS, f"unknown conv2d layout {attrs['layout']!r}")
        n, c, h, wd, f, ci, kh, kw = _dims(shapes, attrs)
        g = attrs["groups"]
        require(g >= 1 and c % g == 0 and f % g == 0 and ci == c // g,
                f"conv2d: {c} channels, {f} filters, groups {g}, weight input channels {ci}")
        oh, ow = out_hw(h, wd, kh, kw, attrs)
        require(oh >= 1 and ow >= 1, "conv2d: the window is larger than the padded input")
        out = (n, f, oh, ow) if attrs["layout"] == "NCHW" else (n, oh, ow, f)
        require(elements(out) <= 4 * MAX_ELEMENTS, "conv2d output too large")
        return out

    def emit(self, args, shapes, attrs, dtype):
        from tvm import relax

        acc = attrs.get("acc")
        y = relax.op.nn.conv2d(args[0], args[1], strides=attrs["strides"],
                               padding=attrs["padding"], dilation=attrs["dilation"],
                               groups=attrs["groups"], data_layout=attrs["layout"],
                               kernel_layout=LAYOUTS[attrs["layout"]], out_dtype=acc)
        return y if not acc or acc == dtype else relax.op.astype(y, dtype)

    def k(self, shapes, attrs) -> int:
        _, _, _, _, _, ci, kh, kw = _dims(shapes, attrs)
        return ci * kh * kw

    def reference(self, args, attrs, dtype):
        acc = attrs.get("acc") or dtype
        x, w = (bounds.cast(a, acc) for a in args)
        shapes = [a.value.shape for a in args]
        y = bounds.bilinear(lambda a, b: conv64(a, b, attrs), x, w, self.k(shapes, attrs), acc)
        return bounds.cast(y, dtype)

    def magnitude(self, mags, shapes, attrs):
        return self.k(shapes, attrs) * mags[0] * mags[1]
