"""Constant padding as its own block: ``out = pad(A, before, after, value)``; exact.

One block, ``pad``, selecting between a shifted load and the pad value with
``T.if_then_else``.  The pad value is written as a literal of the dtype (0, a small constant,
or the lowest finite value).  Error model: exact (a copy), with IEEE semantics for
special-value inputs (a nan is copied as a nan).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads.base import (
    ALL_SPECIALS,
    GenOptions,
    TensorSpec,
    Workload,
    as_f64,
    buf,
    draw_extent,
    draw_label,
    lowest,
    lowest_value,
    register,
)
from fuzzharness.oracles import bounds, numerics

LABELS = ("float32", "float16", "bfloat16", "int8")
MAX_EXTENT = {1: 512, 2: 48, 3: 16, 4: 8}


@register
class Pad(Workload):
    name = "pad"
    description = "constant padding of a 1-4-d tensor, as its own block"
    dtype_labels = LABELS

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        rank = data.draw(st.integers(1, 4))
        shape = [draw_extent(data, MAX_EXTENT[rank]) for _ in range(rank)]
        pads = [[data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))] for _ in range(rank)]
        value = data.draw(st.sampled_from(["0", "-1.5", "7", "lowest"]))
        if label == "int8" and value == "-1.5":
            value = "-3"
        return {"shape": shape, "pads": pads, "value": value, "dtype": label}

    def out_shape(self, p) -> tuple[int, ...]:
        return tuple(n + b + a for n, (b, a) in zip(p["shape"], p["pads"], strict=True))

    def pad_value(self, p) -> tuple[str, float]:
        dt = p["dtype"]
        if p["value"] == "lowest":
            if dt == "bfloat16":  # T.min_value("bfloat16") is −inf in TVM 0.27 (see base.minmax_dtype)
                return f"T.bfloat16({lowest_value(dt)!r})", lowest_value(dt)
            return lowest(dt), lowest_value(dt)
        return f"T.{dt}({p['value']})", float(p["value"])

    def source(self, p: dict[str, Any]) -> str:
        dt = p["dtype"]
        rank = len(p["shape"])
        out = self.out_shape(p)
        loops = ", ".join(f"ax{i}" for i in range(rank))
        vs = ", ".join(f"v{i}" for i in range(rank))
        cond = " and ".join(f"{b} <= v{i} and v{i} < {b + n}"
                            for i, (n, (b, _)) in enumerate(zip(p["shape"], p["pads"], strict=True)))
        src_idx = ", ".join(f"v{i} - {b}" for i, (b, _) in enumerate(p["pads"]))
        return f'''
@T.prim_func(s_tir=True)
def main(A: {buf(tuple(p["shape"]), dt)}, out: {buf(out, dt)}):
    for {loops} in T.grid({", ".join(map(str, out))}):
        with T.sblock("pad"):
            {vs} = T.axis.remap("{"S" * rank}", [{loops}])
            out[{vs}] = T.if_then_else({cond}, A[{src_idx}], {self.pad_value(p)[0]})
'''

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        dt = p["dtype"]
        if numerics.is_int(dt):
            hi = numerics.int_range(dt)[1]
            return [InputSpec("A", tuple(p["shape"]), dt, scale=float(hi), int_max=hi)]
        return [InputSpec("A", tuple(p["shape"]), dt, scale=1.0,
                          int_max=numerics.fmt(dt).max_exact_int, specials=ALL_SPECIALS)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("out", self.out_shape(p), p["dtype"])]

    def reference(self, p, inputs, numerics_):
        import numpy as np

        value = float(numerics.round_to(np.float64(self.pad_value(p)[1]), p["dtype"]).astype(np.float64))
        a = as_f64(inputs["A"])
        y = np.pad(a, [tuple(x) for x in p["pads"]], constant_values=value)
        return {"out": bounds.exact(y, p["dtype"], model="pad")}
