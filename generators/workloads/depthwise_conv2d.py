"""Depthwise 2-D convolution, NCHW, channel multiplier 1 (``depthwise_conv2d_nchw``).

``I (N, C, H, W)``, ``W (C, 1, KH, KW)`` → ``O (N, C, OH, OW)`` with stride, padding and
dilation.  Blocks: ``pad``, ``depthwise_conv`` (reduction over ``rh, rw``, into
``depthwise_acc`` when the accumulator is wider) and ``depthwise_cast``.  Error model: a
``KH·KW``-term dot product.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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
    register,
)
from fuzzharness.generators.workloads.conv2d import (
    conv_pad_problem,
    draw_conv_shape,
    out_extent,
    windows,
)
from fuzzharness.generators.workloads.matmul import int_scale, specials
from fuzzharness.oracles import bounds


@register
class DepthwiseConv2d(Workload):
    name = "depthwise_conv2d"
    description = "depthwise conv2d NCHW (multiplier 1) with stride, padding, dilation"
    dtype_labels = tuple(DTYPE_LABELS)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        p = draw_conv_shape(data, options, channels=False)
        p["C"] = draw_extent(data, 16)
        p["dtype"] = label
        return p

    def params_problem(self, p):
        return conv_pad_problem(p) or super().params_problem(p)

    def shapes(self, p):
        oh = out_extent(p["H"], p["KH"], p["stride"], p["pad"], p["dilation"])
        ow = out_extent(p["W"], p["KW"], p["stride"], p["pad"], p["dilation"])
        n, c = p["N"], p["C"]
        return ((n, c, p["H"], p["W"]), (c, 1, p["KH"], p["KW"]), (n, c, oh, ow),
                (n, c, p["H"] + 2 * p["pad"], p["W"] + 2 * p["pad"]))

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        ishape, wshape, oshape, pshape = self.shapes(p)
        pad, s, d, h, w = p["pad"], p["stride"], p["dilation"], p["H"], p["W"]
        dst = "O" if acc == dout else "depthwise_acc"
        text = f'''
@T.prim_func(s_tir=True)
def main(I: {buf(ishape, din)}, W: {buf(wshape, din)}, O: {buf(oshape, dout)}):
{alloc("pad_temp", pshape, din)}'''
        if dst != "O":
            text += alloc(dst, oshape, acc)
        text += f'''    for p0, p1, p2, p3 in T.grid({", ".join(map(str, pshape))}):
        with T.sblock("pad"):
            vn, vc, vh, vw = T.axis.remap("SSSS", [p0, p1, p2, p3])
            pad_temp[vn, vc, vh, vw] = T.if_then_else({pad} <= vh and vh < {h + pad} and {pad} <= vw and vw < {w + pad}, I[vn, vc, vh - {pad}, vw - {pad}], T.{din}(0))
    for o0, o1, o2, o3, rh, rw in T.grid({", ".join(map(str, oshape))}, {p["KH"]}, {p["KW"]}):
        with T.sblock("depthwise_conv"):
            vn, vc, vh, vw, vrh, vrw = T.axis.remap("SSSSRR", [o0, o1, o2, o3, rh, rw])
            with T.init():
                {dst}[vn, vc, vh, vw] = T.{acc}(0)
            {dst}[vn, vc, vh, vw] = {dst}[vn, vc, vh, vw] + T.Cast("{acc}", pad_temp[vn, vc, vh * {s} + vrh * {d}, vw * {s} + vrw * {d}]) * T.Cast("{acc}", W[vc, 0, vrh, vrw])
'''
        if dst != "O":
            text += cast_block(dst, "O", oshape, dout, "depthwise_cast")
        return text

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        ishape, wshape, _, _ = self.shapes(p)
        k = p["KH"] * p["KW"]
        m = exact_int_max(k, din, (acc, dout), products=True)
        s = int_scale(din, k, acc)
        es = exact_set(k, din, acc, dout, products=True)
        return [InputSpec("I", ishape, din, scale=s, int_max=m, specials=specials(din), exact=es),
                InputSpec("W", wshape, din, scale=s, int_max=m, specials=specials(din), exact=es)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("O", self.shapes(p)[2], DTYPE_LABELS[p["dtype"]][2])]

    def reference(self, p, inputs, numerics):
        x, w = as_f64(inputs["I"]), as_f64(inputs["W"])[:, 0]  # (C, KH, KW)
        pad = p["pad"]
        oshape = self.shapes(p)[2]
        xp = np.pad(x.transpose(0, 2, 3, 1), ((0, 0), (pad, pad), (pad, pad), (0, 0)))
        win = windows(xp, p["KH"], p["KW"], p["stride"], p["dilation"], oshape[2], oshape[3])
        wt = w.transpose(1, 2, 0)  # (KH, KW, C)
        with np.errstate(invalid="ignore", over="ignore"):
            y = (win * wt).sum(axis=(3, 4)).transpose(0, 3, 1, 2)
            ya = (np.abs(win) * np.abs(wt)).sum(axis=(3, 4)).transpose(0, 3, 1, 2)
        return {"O": bounds.reduction(
            y, ya, p["KH"] * p["KW"], acc_dtype=numerics.accumulation_dtype("depthwise_conv"),
            out_dtype=DTYPE_LABELS[p["dtype"]][2], products=True, model="depthwise_conv2d")}
