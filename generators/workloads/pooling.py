"""2-D max and average pooling (NCHW or NHWC) with stride and padding.

Blocks: ``pad`` (its own block; the lowest finite value for max pooling, zero for average),
``pool_max`` (a max reduction over the window, exact) or ``pool_sum`` (a sum in the
accumulation dtype) followed by ``pool_avg`` (division by the window size, or by the number
of real elements when ``count_include_pad`` is false; written to the output dtype).
Padding is smaller than the window, so every window holds at least one real element.
Error models: max is exact (bound 0; the pad value takes part like in the program); average
is a k-term sum followed by one division (:mod:`fuzzharness.oracles.bounds`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.inputs import InputSpec
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
    cast_block,
    draw_extent,
    draw_label,
    exact_int_max,
    exact_set,
    lowest,
    lowest_value,
    minmax_dtype,
    register,
)
from fuzzharness.generators.workloads.conv2d import out_extent
from fuzzharness.oracles import bounds, numerics
from fuzzharness.oracles.bounds import Approx


@register
class Pool2d(Workload):
    name = "pool2d"
    description = "max / average pooling, NCHW or NHWC, stride and padding"
    dtype_labels = tuple(DTYPE_LABELS)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        kind = "max" if label == "int8" else data.draw(st.sampled_from(["max", "avg"]))
        layout = data.draw(st.sampled_from(["NCHW", "NHWC"]))
        kh, kw = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
        stride = data.draw(st.integers(1, 3))
        pad = data.draw(st.integers(0, min(kh, kw) - 1))
        n, c = data.draw(st.integers(1, 2)), draw_extent(data, 16)
        h = draw_extent(data, 24, lo=max(1, kh - 2 * pad))
        w = draw_extent(data, 24, lo=max(1, kw - 2 * pad))
        include = data.draw(st.booleans())
        return {"kind": kind, "layout": layout, "N": n, "C": c, "H": h, "W": w, "KH": kh,
                "KW": kw, "stride": stride, "pad": pad, "count_include_pad": include,
                "dtype": label}

    def params_problem(self, p):
        if p["pad"] >= min(p["KH"], p["KW"]):  # a window of padding alone (draw_params)
            return "pad must be smaller than the window"
        return super().params_problem(p)

    def io_dtypes(self, p):
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        if p["kind"] == "max":  # exact in any dtype: pad and compare in minmax_dtype, store once
            out = din if p["dtype"] == "int8" else dout
            return din, minmax_dtype(out), out
        return din, acc, dout

    def shapes(self, p):
        oh = out_extent(p["H"], p["KH"], p["stride"], p["pad"], 1)
        ow = out_extent(p["W"], p["KW"], p["stride"], p["pad"], 1)
        n, c, pad = p["N"], p["C"], p["pad"]
        hp, wp = p["H"] + 2 * pad, p["W"] + 2 * pad
        if p["layout"] == "NCHW":
            return (n, c, p["H"], p["W"]), (n, c, oh, ow), (n, c, hp, wp)
        return (n, p["H"], p["W"], c), (n, oh, ow, c), (n, hp, wp, c)

    def _idx(self, p, h: str, w: str) -> str:
        return f"vn, vc, {h}, {w}" if p["layout"] == "NCHW" else f"vn, {h}, {w}, vc"

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = self.io_dtypes(p)
        ishape, oshape, pshape = self.shapes(p)
        pad, s, kh, kw, h, w = p["pad"], p["stride"], p["KH"], p["KW"], p["H"], p["W"]
        pad_dt = acc if p["kind"] == "max" else din
        fill = lowest(pad_dt) if p["kind"] == "max" else f"T.{din}(0)"
        src_load = f"I[{self._idx(p, f'vh - {pad}', f'vw - {pad}')}]"
        if pad_dt != din:
            src_load = f'T.Cast("{pad_dt}", {src_load})'
        pad_axes = "vn, vc, vh, vw" if p["layout"] == "NCHW" else "vn, vh, vw, vc"
        out_axes = "vn, vc, voh, vow" if p["layout"] == "NCHW" else "vn, voh, vow, vc"
        text = f'''
@T.prim_func(s_tir=True)
def main(I: {buf(ishape, din)}, O: {buf(oshape, dout)}):
{alloc("pad_temp", pshape, pad_dt)}'''
        if p["kind"] == "avg" or acc != dout:
            text += alloc("pool_acc", oshape, acc)
        text += f'''    for p0, p1, p2, p3 in T.grid({", ".join(map(str, pshape))}):
        with T.sblock("pad"):
            {pad_axes} = T.axis.remap("SSSS", [p0, p1, p2, p3])
            pad_temp[{self._idx(p, "vh", "vw")}] = T.if_then_else({pad} <= vh and vh < {h + pad} and {pad} <= vw and vw < {w + pad}, {src_load}, {fill})
'''
        window = self._idx(p, f"voh * {s} + vrh", f"vow * {s} + vrw")
        load = f"pad_temp[{window}]" if pad_dt == acc else f'T.Cast("{acc}", pad_temp[{window}])'
        if p["kind"] == "max":
            dst = "O" if acc == dout else "pool_acc"
            text += f'''    for o0, o1, o2, o3, rh, rw in T.grid({", ".join(map(str, oshape))}, {kh}, {kw}):
        with T.sblock("pool_max"):
            {out_axes}, vrh, vrw = T.axis.remap("SSSSRR", [o0, o1, o2, o3, rh, rw])
            with T.init():
                {dst}[{out_axes}] = {lowest(acc)}
            {dst}[{out_axes}] = T.max({dst}[{out_axes}], {load})
'''
            if dst != "O":
                text += cast_block("pool_acc", "O", oshape, dout, "pool_cast")
            return text
        if p["count_include_pad"]:
            count = f"T.{acc}({kh * kw})"
        else:
            ch = f"(T.min(voh * {s} - {pad} + {kh}, {h}) - T.max(voh * {s} - {pad}, 0))"
            cw = f"(T.min(vow * {s} - {pad} + {kw}, {w}) - T.max(vow * {s} - {pad}, 0))"
            count = f'T.Cast("{acc}", {ch} * {cw})'
        quotient = f"pool_acc[{out_axes}] / {count}"
        store = quotient if acc == dout else f'T.Cast("{dout}", {quotient})'
        text += f'''    for o0, o1, o2, o3, rh, rw in T.grid({", ".join(map(str, oshape))}, {kh}, {kw}):
        with T.sblock("pool_sum"):
            {out_axes}, vrh, vrw = T.axis.remap("SSSSRR", [o0, o1, o2, o3, rh, rw])
            with T.init():
                pool_acc[{out_axes}] = T.{acc}(0)
            pool_acc[{out_axes}] = pool_acc[{out_axes}] + T.Cast("{acc}", pad_temp[{window}])
    for o0, o1, o2, o3 in T.grid({", ".join(map(str, oshape))}):
        with T.sblock("pool_avg"):
            {out_axes} = T.axis.remap("SSSS", [o0, o1, o2, o3])
            O[{out_axes}] = {store}
'''
        return text

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc, dout = self.io_dtypes(p)
        k = p["KH"] * p["KW"]
        if p["kind"] == "max":
            m = numerics.int_range(din)[1] if numerics.is_int(din) else numerics.fmt(din).max_exact_int
            scale = float(m) if numerics.is_int(din) else 1.0
            specials = INF_SPECIALS if numerics.is_float(din) else ()
        else:
            m = exact_int_max(k, din, (acc, dout), products=False)
            scale, specials = 1.0, ALL_SPECIALS
        # pool_acc is internal: a bfloat16 one accumulates in float32 (oracles/program.py)
        acc_es = "float32" if acc == "bfloat16" else acc
        es = exact_set(k, din, acc_es, dout, products=False) if p["kind"] == "avg" else None
        return [InputSpec("I", self.shapes(p)[0], din, scale=scale, int_max=m, specials=specials,
                          exact=es)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("O", self.shapes(p)[1], self.io_dtypes(p)[2])]

    def _windows(self, p, x: np.ndarray, fill: float) -> np.ndarray:
        """(N, OH, OW, C, KH, KW) windows in NHWC order of the padded input."""
        if p["layout"] == "NCHW":
            x = x.transpose(0, 2, 3, 1)
        pad, s = p["pad"], p["stride"]
        xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)), constant_values=fill)
        win = np.lib.stride_tricks.sliding_window_view(xp, (p["KH"], p["KW"]), axis=(1, 2))
        return win[:, ::s, ::s][:, : self.out_h(p), : self.out_w(p)]

    def out_h(self, p):
        return out_extent(p["H"], p["KH"], p["stride"], p["pad"], 1)

    def out_w(self, p):
        return out_extent(p["W"], p["KW"], p["stride"], p["pad"], 1)

    def _to_layout(self, p, y: np.ndarray) -> np.ndarray:
        return y.transpose(0, 3, 1, 2) if p["layout"] == "NCHW" else y

    def reference(self, p, inputs, numerics_):
        din, acc, dout = self.io_dtypes(p)
        x = as_f64(inputs["I"])
        if p["kind"] == "max":
            win = self._windows(p, x, lowest_value(acc))
            y = np.maximum(win.max(axis=(4, 5)), lowest_value(acc))
            return {"O": bounds.exact(self._to_layout(p, y), dout, model="max_pool")}
        win = self._windows(p, x, 0.0)
        k = p["KH"] * p["KW"]
        total = self._to_layout(p, win.sum(axis=(4, 5)))
        abs_total = self._to_layout(p, np.abs(win).sum(axis=(4, 5)))
        acc_dt = numerics_.accumulation_dtype("pool_sum")
        sums = bounds.accumulate(total, abs_total, k, acc_dtype=acc_dt, products=False)
        # bfloat16 divides in float32, by a float32 literal (oracles/program.py)
        ct = numerics_.compute_dtype(acc)
        if p["count_include_pad"]:
            count = bounds.const(k, ct)
        else:
            count = bounds.cast(Approx.exact(self.real_counts(p), "int32"), ct)
        quotient = bounds.div(bounds.cast(sums, ct), count, ct)
        return {"O": bounds.to_expected(quotient, dout, "avg_pool")}

    def real_counts(self, p) -> np.ndarray:
        """Per output position, how many window elements are real (not padding), float64,
        shaped to broadcast against the output in ``p["layout"]``."""
        pad, s = p["pad"], p["stride"]
        oh, ow = np.arange(self.out_h(p)), np.arange(self.out_w(p))
        ch = np.minimum(oh * s - pad + p["KH"], p["H"]) - np.maximum(oh * s - pad, 0)
        cw = np.minimum(ow * s - pad + p["KW"], p["W"]) - np.maximum(ow * s - pad, 0)
        cnt = (ch[:, None] * cw[None, :]).astype(np.float64)
        return cnt[None, None] if p["layout"] == "NCHW" else cnt[None, :, :, None]
