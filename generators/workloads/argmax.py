"""Argmax / argmin along the last axis: index and value, ties to the smallest index.

One block, ``argmax`` (or ``argmin``), with TOPI's tuple reducer: it writes the index ``I``
(int32) and the extreme value ``V`` together; the combine rule keeps the current element on
a tie only when its index is smaller, which makes the result independent of the reduction
order (so ``rfactor`` and any reordering must agree exactly).  Values of bfloat16 inputs are
compared in float32 (see :func:`fuzzharness.generators.workloads.base.minmax_dtype`).  Error model:
exact for both outputs (numpy's ``argmax``/``argmin`` return the first extreme, the same
tie rule).  Inputs never reach the init value (int8 inputs stay within ±127).

Known TVM 0.27 bug this workload finds: with bfloat16 inputs, ``BF16StorageLegalize`` leaves
``T.Cast("float32", A[k])`` inside the ``T.let`` bindings as a *numeric* cast of the uint16
storage bits, so the unscheduled program compares garbage (``reference_mismatch``; see
tests/test_workloads.py::test_tvm_bfloat16_let_cast_bug).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads.base import (
    GenOptions,
    TensorSpec,
    Workload,
    as_f64,
    buf,
    draw_extent,
    draw_label,
    highest,
    lowest,
    minmax_dtype,
    register,
)
from fuzzharness.oracles import bounds, numerics

LABELS = ("float32", "float16", "bfloat16", "int8")


@register
class ArgReduce(Workload):
    name = "argmax"
    description = "argmax / argmin over the last axis (index and value, smallest index on ties)"
    dtype_labels = LABELS

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        kind = data.draw(st.sampled_from(["argmax", "argmin"]))
        rank = data.draw(st.integers(1, 3))
        lead = [draw_extent(data, 32) for _ in range(rank - 1)]
        n = draw_extent(data, options.max_reduction)
        return {"kind": kind, "shape": [*lead, n], "dtype": label}

    def source(self, p: dict[str, Any]) -> str:
        din = p["dtype"]
        vd = minmax_dtype(din)
        shape = p["shape"]
        rank = len(shape)
        lead = shape[:-1]
        oshape = tuple(lead) or (1,)
        loops = ", ".join([f"i{d}" for d in range(rank - 1)] + ["k"])
        vs = ", ".join([f"v{d}" for d in range(rank - 1)] + ["vk"])
        o = ", ".join(f"v{d}" for d in range(rank - 1)) or "0"
        x = f"A[{', '.join([f'v{d}' for d in range(rank - 1)] + ['vk'])}]"
        if vd != din:
            x = f'T.Cast("{vd}", {x})'
        better = ">" if p["kind"] == "argmax" else "<"
        init = lowest(vd) if p["kind"] == "argmax" else highest(vd)
        vbuf = "V" if vd == din else "V_acc"
        text = f'''
@T.prim_func(s_tir=True)
def main(A: {buf(tuple(shape), din)}, I: {buf(oshape, "int32")}, V: {buf(oshape, din)}):
'''
        if vbuf != "V":
            dims = ", ".join(map(str, oshape)) + ("," if len(oshape) == 1 else "")
            text += f'    V_acc = T.sblock_alloc_buffer(({dims}), "{vd}")\n'
        text += f'''    for {loops} in T.grid({", ".join(map(str, shape))}):
        with T.sblock("{p["kind"]}"):
            {vs} = T.axis.remap("{"S" * (rank - 1)}R", [{loops}])
            with T.init():
                I[{o}] = -1
                {vbuf}[{o}] = {init}
            v_I: T.let[T.int32] = T.Select({vbuf}[{o}] {better} {x} or {vbuf}[{o}] == {x} and I[{o}] < vk, I[{o}], vk)
            v_V: T.let[T.{vd}] = T.Select({vbuf}[{o}] {better} {x}, {vbuf}[{o}], {x})
            I[{o}] = v_I
            {vbuf}[{o}] = v_V
'''
        if vbuf != "V":
            ev = ", ".join(f"w{d}" for d in range(len(oshape)))
            el = ", ".join(f"e{d}" for d in range(len(oshape)))
            text += f'''    for {el} in T.grid({", ".join(map(str, oshape))}):
        with T.sblock("{p["kind"]}_cast"):
            {ev} = T.axis.remap("{"S" * len(oshape)}", [{el}])
            V[{ev}] = T.Cast("{din}", V_acc[{ev}])
'''
        return text

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din = p["dtype"]
        if numerics.is_int(din):
            hi = numerics.int_range(din)[1]
            return [InputSpec("A", tuple(p["shape"]), din, scale=float(hi), int_max=hi)]
        # Only the infinity that wins (+inf for argmax, −inf for argmin; ties go to the smallest
        # index): the other one would lose even to the init value, which then wins with index
        # −1.  No nan: TVM's compare-and-select order decides it.
        winner = ("inf",) if p["kind"] == "argmax" else ("-inf",)
        return [InputSpec("A", tuple(p["shape"]), din, scale=1.0,
                          int_max=numerics.fmt(din).max_exact_int, specials=winner)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        oshape = tuple(p["shape"][:-1]) or (1,)
        return [TensorSpec("I", oshape, "int32"), TensorSpec("V", oshape, p["dtype"])]

    def reference(self, p, inputs, numerics_):
        a = as_f64(inputs["A"])
        oshape = tuple(p["shape"][:-1]) or (1,)
        if p["kind"] == "argmax":
            idx, val = a.argmax(axis=-1), a.max(axis=-1)
        else:
            idx, val = a.argmin(axis=-1), a.min(axis=-1)
        return {"I": bounds.exact(idx.reshape(oshape), "int32", model=p["kind"]),
                "V": bounds.exact(val.reshape(oshape), p["dtype"], model=p["kind"])}
