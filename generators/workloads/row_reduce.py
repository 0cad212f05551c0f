"""Row reduction ``B[i] = Σ_j A[i, j]``: a plain sum, the simplest reassociable reduction."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from generators.inputs import InputSpec
from generators.workloads.base import (
    GenOptions,
    TensorSpec,
    Workload,
    as_f64,
    draw_extent,
    exact_int_max,
    register,
)
from oracles import bounds

DTYPES = {
    "float32": ("float32", "float32"),
    "float16": ("float16", "float16"),
    "float16-acc32": ("float16", "float32"),
}


@register
class RowSum(Workload):
    name = "row_sum"
    description = "B[i] = sum_j A[i, j]"
    dtype_labels = tuple(DTYPES)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        dtype = data.draw(st.sampled_from(self.allowed_labels(options)))
        m = draw_extent(data, 128)
        n = draw_extent(data, options.max_reduction)
        return {"M": m, "N": n, "dtype": dtype}

    def source(self, p: dict[str, Any]) -> str:
        din, acc = DTYPES[p["dtype"]]
        return f'''
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({p["M"]}, {p["N"]}), "{din}"), B: T.Buffer(({p["M"]},), "{acc}")):
    for i, j in T.grid({p["M"]}, {p["N"]}):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                B[vi] = T.{acc}(0)
            B[vi] = B[vi] + T.Cast("{acc}", A[vi, vj])
'''

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc = DTYPES[p["dtype"]]
        m = exact_int_max(p["N"], din, (acc,), products=False)
        return [InputSpec("A", (p["M"], p["N"]), din, scale=1.0, int_max=m)]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("B", (p["M"],), DTYPES[p["dtype"]][1])]

    def reference(self, p, inputs, numerics):
        a = as_f64(inputs["A"])
        return {
            "B": bounds.reduction(
                a.sum(axis=1),
                np.abs(a).sum(axis=1),
                p["N"],
                acc_dtype=numerics.accumulation_dtype("B"),
                out_dtype=DTYPES[p["dtype"]][1],
                products=False,
                model="sum",
            )
        }
