"""2-D convolution, NHWC or NCHW, with stride, padding and dilation; includes the 7×7×3 stem.

NHWC: ``I (N, H, W, C)``, ``W (KH, KW, C, F)`` → ``O (N, OH, OW, F)``, reduction order
``rh, rw, rc``; NCHW: ``I (N, C, H, W)``, ``W (F, C, KH, KW)`` → ``O (N, F, OH, OW)``,
reduction order ``rc, rh, rw`` (TOPI's orders).  Blocks: ``pad`` (zero padding as its own
block, present even with padding 0 so schedules always see it), ``conv`` (the reduction,
into ``conv_acc`` when the accumulator is wider than the output) and ``conv_cast``.
``stem`` draws the ImageNet stem shape: 7×7 windows over 3 channels, stride 2, padding 3.
Error model: a ``C·KH·KW``-term dot product (padding contributes exact zeros).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

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
    reduction_limit,
    register,
)
from fuzzharness.generators.workloads.matmul import int_scale, specials
from fuzzharness.oracles import bounds

MAX_MACS = 1_500_000  # keeps the unscheduled kernel's run time small next to its compile


def out_extent(size: int, k: int, stride: int, pad: int, dilation: int) -> int:
    return (size + 2 * pad - dilation * (k - 1) - 1) // stride + 1


def windows(x: np.ndarray, kh: int, kw: int, stride, dilation, oh: int, ow: int) -> np.ndarray:
    """(N, OH, OW, KH, KW, C) windows of a padded NHWC float64 array.

    ``stride`` and ``dilation`` are one int for both axes or an ``(h, w)`` pair.
    """
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    n, _, _, c = x.shape
    out = np.empty((n, oh, ow, kh, kw, c))
    for r in range(kh):
        for s in range(kw):
            h0, w0 = r * dh, s * dw
            out[:, :, :, r, s, :] = x[:, h0:h0 + sh * (oh - 1) + 1:sh,
                                      w0:w0 + sw * (ow - 1) + 1:sw, :]
    return out


def conv_nhwc(x: np.ndarray, w: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """x (N, H, W, C) unpadded, w (KH, KW, C, F) → (N, OH, OW, F), float64, IEEE-honest."""
    pad = p["pad"]
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh, ow = out_extent(p["H"], p["KH"], p["stride"], pad, p["dilation"]), \
        out_extent(p["W"], p["KW"], p["stride"], pad, p["dilation"])
    win = windows(xp, p["KH"], p["KW"], p["stride"], p["dilation"], oh, ow)
    if np.isfinite(win).all() and np.isfinite(w).all():
        return np.tensordot(win, w, axes=([3, 4, 5], [0, 1, 2]))
    with np.errstate(invalid="ignore", over="ignore"):
        return (win[..., None] * w[None, None, None]).sum(axis=(3, 4, 5))


def draw_conv_shape(data: Any, options: GenOptions, *, channels: bool = True) -> dict[str, Any]:
    stem = data.draw(st.integers(0, 4)) == 0
    if stem:
        kh = kw = 7
        c, stride, pad, dilation = 3, 2, 3, 1
    else:
        kh = data.draw(st.sampled_from([1, 2, 3, 5]))
        kw = data.draw(st.sampled_from([1, 2, 3, 5]))
        c = draw_extent(data, 32) if channels else 1
        stride = data.draw(st.integers(1, 3))
        dilation = data.draw(st.integers(1, 2))
        pad = data.draw(st.integers(0, max(0, (min(kh, kw) - 1) * dilation)))
    n = data.draw(st.integers(1, 2))
    lo_h = max(1, dilation * (kh - 1) + 1 - 2 * pad)
    lo_w = max(1, dilation * (kw - 1) + 1 - 2 * pad)
    h = draw_extent(data, max(lo_h, 24), lo=lo_h)
    w = draw_extent(data, max(lo_w, 24), lo=lo_w)
    return {"N": n, "H": h, "W": w, "C": c, "KH": kh, "KW": kw, "stride": stride, "pad": pad,
            "dilation": dilation, "stem": stem}


def conv_pad_problem(p: dict[str, Any]) -> str | None:
    """:func:`draw_conv_shape`'s padding constraint: no window of padding alone."""
    if p["pad"] > max(0, (min(p["KH"], p["KW"]) - 1) * p["dilation"]):
        return "pad must not exceed (min(KH, KW) - 1) * dilation"
    return None


@register
class Conv2d(Workload):
    name = "conv2d"
    description = "conv2d NHWC/NCHW with stride, padding, dilation (and the 7x7x3 stride-2 stem)"
    dtype_labels = tuple(DTYPE_LABELS)

    def params_problem(self, p):
        return conv_pad_problem(p) or super().params_problem(p)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        layout = data.draw(st.sampled_from(["NHWC", "NCHW"]))
        p = draw_conv_shape(data, options)
        f = draw_extent(data, 16)
        p.update(F=f, layout=layout, dtype=label)
        # keep the reduction within max_reduction and the work within MAX_MACS
        while p["C"] > 1 and p["C"] * p["KH"] * p["KW"] > reduction_limit(options, label):
            p["C"] = max(1, p["C"] // 2)
        while self.macs(p) > MAX_MACS and (p["H"] > 1 or p["F"] > 1):
            if p["F"] > 1:
                p["F"] = max(1, p["F"] // 2)
            if self.macs(p) > MAX_MACS and p["H"] > p["KH"]:
                p["H"], p["W"] = max(p["KH"], p["H"] // 2), max(p["KW"], p["W"] // 2)
            if p["F"] == 1 and p["H"] <= p["KH"]:
                break
        return p

    # -- shapes ---------------------------------------------------------------------------
    def out_hw(self, p) -> tuple[int, int]:
        return (out_extent(p["H"], p["KH"], p["stride"], p["pad"], p["dilation"]),
                out_extent(p["W"], p["KW"], p["stride"], p["pad"], p["dilation"]))

    def macs(self, p) -> int:
        oh, ow = self.out_hw(p)
        return p["N"] * oh * ow * p["F"] * p["C"] * p["KH"] * p["KW"]

    def shapes(self, p):
        n, c, f, h, w = p["N"], p["C"], p["F"], p["H"], p["W"]
        oh, ow = self.out_hw(p)
        hp, wp = h + 2 * p["pad"], w + 2 * p["pad"]
        if p["layout"] == "NHWC":
            return (n, h, w, c), (p["KH"], p["KW"], c, f), (n, oh, ow, f), (n, hp, wp, c)
        return (n, c, h, w), (f, c, p["KH"], p["KW"]), (n, f, oh, ow), (n, c, hp, wp)

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        ishape, wshape, oshape, pshape = self.shapes(p)
        pad, s, d = p["pad"], p["stride"], p["dilation"]
        kh, kw = p["KH"], p["KW"]
        h, w = p["H"], p["W"]
        target = "conv" if acc == dout else "conv_acc"
        out_name = "conv" if acc == dout else "conv_acc"
        if p["layout"] == "NHWC":
            pad_idx, pad_src = "vn, vh, vw, vc", f"I[vn, vh - {pad}, vw - {pad}, vc]"
            inside = f"{pad} <= vh and vh < {h + pad} and {pad} <= vw and vw < {w + pad}"
            spatial = "vn, vh, vw, vf"
            red = "rh, rw, rc"
            red_ext = f"{kh}, {kw}, {p['C']}"
            load = f"pad_temp[vn, vh * {s} + vrh * {d}, vw * {s} + vrw * {d}, vrc]"
            wload = "W[vrh, vrw, vrc, vf]"
            remap = "vrh, vrw, vrc"
        else:
            pad_idx, pad_src = "vn, vc, vh, vw", f"I[vn, vc, vh - {pad}, vw - {pad}]"
            inside = f"{pad} <= vh and vh < {h + pad} and {pad} <= vw and vw < {w + pad}"
            spatial = "vn, vf, vh, vw"
            red = "rc, rh, rw"
            red_ext = f"{p['C']}, {kh}, {kw}"
            load = f"pad_temp[vn, vrc, vh * {s} + vrh * {d}, vw * {s} + vrw * {d}]"
            wload = "W[vf, vrc, vrh, vrw]"
            remap = "vrc, vrh, vrw"
        ploop = ", ".join(f"p{i}" for i in range(4))
        text = f'''
@T.prim_func(s_tir=True)
def main(I: {buf(ishape, din)}, W: {buf(wshape, din)}, O: {buf(oshape, dout)}):
{alloc("pad_temp", pshape, din)}'''
        if target != "conv":
            text += alloc(target, oshape, acc)
        dst = "O" if acc == dout else out_name
        text += f'''    for {ploop} in T.grid({", ".join(map(str, pshape))}):
        with T.sblock("pad"):
            {pad_idx} = T.axis.remap("SSSS", [{ploop}])
            pad_temp[{pad_idx}] = T.if_then_else({inside}, {pad_src}, T.{din}(0))
    for o0, o1, o2, o3, {red} in T.grid({", ".join(map(str, oshape))}, {red_ext}):
        with T.sblock("conv"):
            {spatial}, {remap} = T.axis.remap("SSSSRRR", [o0, o1, o2, o3, {red}])
            with T.init():
                {dst}[{spatial}] = T.{acc}(0)
            {dst}[{spatial}] = {dst}[{spatial}] + T.Cast("{acc}", {load}) * T.Cast("{acc}", {wload})
'''
        if target != "conv":
            text += cast_block(out_name, "O", oshape, dout, "conv_cast")
        return text

    def k(self, p) -> int:
        return p["C"] * p["KH"] * p["KW"]

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        ishape, wshape, _, _ = self.shapes(p)
        m = exact_int_max(self.k(p), din, (acc, dout), products=True)
        s = int_scale(din, self.k(p), acc)
        es = exact_set(self.k(p), din, acc, dout, products=True)
        return [InputSpec("I", ishape, din, scale=s, int_max=m, specials=specials(din), exact=es),
                InputSpec("W", wshape, din, scale=s, int_max=m, specials=specials(din), exact=es)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("O", self.shapes(p)[2], DTYPE_LABELS[p["dtype"]][2])]

    def reference(self, p, inputs, numerics):
        x, w = as_f64(inputs["I"]), as_f64(inputs["W"])
        if p["layout"] == "NCHW":
            x, w = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0)  # → NHWC, HWIO
        y, ya = conv_nhwc(x, w, p), conv_nhwc(np.abs(x), np.abs(w), p)
        if p["layout"] == "NCHW":
            y, ya = y.transpose(0, 3, 1, 2), ya.transpose(0, 3, 1, 2)
        return {"O": bounds.reduction(
            y, ya, self.k(p), acc_dtype=numerics.accumulation_dtype("conv"),
            out_dtype=DTYPE_LABELS[p["dtype"]][2], products=True, model="conv2d")}
