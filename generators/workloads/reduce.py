"""Reductions sum / max / min / mean over a chosen subset of axes of a 1-4-d tensor.

The output keeps the non-reduced axes in order (shape ``(1,)`` when every axis is reduced).
Loops: the kept axes, then the reduced axes, each in the original order.  Blocks: ``sum``,
``max`` or ``min`` (the reduction; a sum accumulates in the accumulation dtype, into
``red_acc`` when the output is narrower) and, for ``sum``/``mean`` with a narrower output or a
mean, ``mean``/``sum_cast`` (the division by the count and/or the store).  Error models: a
k-term sum, plus one division for the mean (the count as the program writes it, rounded to
the dtype); max/min exact.
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
    draw_extent,
    draw_label,
    exact_int_max,
    exact_set,
    highest,
    lowest,
    lowest_value,
    minmax_dtype,
    reduction_limit,
    register,
)
from fuzzharness.oracles import bounds, numerics

MAX_EXTENT = {1: 1024, 2: 128, 3: 24, 4: 10}


@register
class Reduce(Workload):
    name = "reduce"
    description = "sum / max / min / mean over chosen axes"
    dtype_labels = tuple(DTYPE_LABELS)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        op = data.draw(st.sampled_from(["sum", "max", "min"] + ([] if label == "int8" else ["mean"])))
        rank = data.draw(st.integers(1, 4))
        shape = [draw_extent(data, MAX_EXTENT[rank]) for _ in range(rank)]
        axes = sorted(set(data.draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank))))
        while int(np.prod([shape[a] for a in axes])) > reduction_limit(options, label):
            a = max(axes, key=lambda i: shape[i])
            shape[a] = max(1, shape[a] // 2)
        return {"op": op, "shape": shape, "axes": axes, "dtype": label}

    def io_dtypes(self, p):
        din, acc, dout = DTYPE_LABELS[p["dtype"]]
        if p["op"] in ("max", "min"):
            out = din if p["dtype"] == "int8" else dout
            return din, minmax_dtype(out), out
        return din, acc, dout

    def kept(self, p) -> list[int]:
        return [i for i in range(len(p["shape"])) if i not in p["axes"]]

    def out_shape(self, p) -> tuple[int, ...]:
        return tuple(p["shape"][i] for i in self.kept(p)) or (1,)

    def k(self, p) -> int:
        return int(np.prod([p["shape"][a] for a in p["axes"]]))

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = self.io_dtypes(p)
        kept, axes, shape = self.kept(p), p["axes"], p["shape"]
        order = kept + axes
        loops = ", ".join(f"l{i}" for i in order)
        vs = ", ".join(f"v{i}" for i in order)
        out_idx = ", ".join(f"v{i}" for i in kept) if kept else "0"
        in_idx = ", ".join(f"v{i}" for i in range(len(shape)))
        oshape = self.out_shape(p)
        load = f"A[{in_idx}]" if din == acc else f'T.Cast("{acc}", A[{in_idx}])'
        op = p["op"]
        needs_epilogue = op == "mean" or acc != dout
        dst = "red_acc" if needs_epilogue else "out"
        block = "sum" if op == "mean" else op
        init = {"max": lowest, "min": highest}.get(op, lambda d: f"T.{d}(0)")(acc)
        update = {"sum": f"{dst}[{out_idx}] + {load}", "mean": f"{dst}[{out_idx}] + {load}",
                  "max": f"T.max({dst}[{out_idx}], {load})",
                  "min": f"T.min({dst}[{out_idx}], {load})"}[op]
        text = f'''
@T.prim_func(s_tir=True)
def main(A: {buf(tuple(shape), din)}, out: {buf(oshape, dout)}):
'''
        if needs_epilogue:
            text += alloc("red_acc", oshape, acc)
        text += f'''    for {loops} in T.grid({", ".join(str(shape[i]) for i in order)}):
        with T.sblock("{block}"):
            {vs} = T.axis.remap("{"S" * len(kept) + "R" * len(axes)}", [{loops}])
            with T.init():
                {dst}[{out_idx}] = {init}
            {dst}[{out_idx}] = {update}
'''
        if needs_epilogue:
            ev = ", ".join(f"w{i}" for i in range(len(oshape)))
            el = ", ".join(f"e{i}" for i in range(len(oshape)))
            value = f"red_acc[{ev}]"
            if op == "mean":
                value = f"{value} / T.{acc}({self.k(p)})"
            if acc != dout:
                value = f'T.Cast("{dout}", {value})'
            text += f'''    for {el} in T.grid({", ".join(map(str, oshape))}):
        with T.sblock("{"mean" if op == "mean" else op + "_cast"}"):
            {ev} = T.axis.remap("{"S" * len(oshape)}", [{el}])
            out[{ev}] = {value}
'''
        return text

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc, dout = self.io_dtypes(p)
        shape = tuple(p["shape"])
        if p["op"] in ("max", "min"):
            m = numerics.int_range(din)[1] if numerics.is_int(din) else numerics.fmt(din).max_exact_int
            scale = float(m) if numerics.is_int(din) else 1.0
            specials = INF_SPECIALS if numerics.is_float(din) else ()
            return [InputSpec("A", shape, din, scale=scale, int_max=m, specials=specials)]
        m = exact_int_max(self.k(p), din, (acc, dout), products=False)
        scale = float(m) if numerics.is_int(din) else 1.0
        specials = ALL_SPECIALS if numerics.is_float(din) else ()
        # red_acc (a mean, a narrower output) is internal: bfloat16 accumulates in float32
        internal = p["op"] == "mean" or acc != dout
        es = exact_set(self.k(p), din, "float32" if internal and acc == "bfloat16" else acc, dout,
                       products=False)
        return [InputSpec("A", shape, din, scale=scale, int_max=m, specials=specials, exact=es)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("out", self.out_shape(p), self.io_dtypes(p)[2])]

    def reference(self, p, inputs, numerics_):
        din, acc, dout = self.io_dtypes(p)
        a = as_f64(inputs["A"])
        axes = tuple(p["axes"])
        oshape = self.out_shape(p)
        op = p["op"]
        if op == "max":
            y = np.maximum(a.max(axis=axes), lowest_value(acc)).reshape(oshape)
            return {"out": bounds.exact(y, dout, model="max")}
        if op == "min":
            y = np.minimum(a.min(axis=axes), -lowest_value(acc) if numerics.is_float(acc)
                           else numerics.int_range(acc)[1]).reshape(oshape)
            return {"out": bounds.exact(y, dout, model="min")}
        block = "sum"
        s = bounds.accumulate(a.sum(axis=axes).reshape(oshape), np.abs(a).sum(axis=axes).reshape(oshape),
                              self.k(p), acc_dtype=numerics_.accumulation_dtype(block), products=False)
        if op == "mean":
            # bfloat16 divides in float32, by a float32 literal (oracles/program.py)
            ct = numerics_.compute_dtype(acc)
            s = bounds.div(bounds.cast(s, ct), bounds.const(self.k(p), ct), ct)
        return {"out": bounds.to_expected(s, dout, op)}
