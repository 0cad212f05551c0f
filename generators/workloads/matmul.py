"""Matrix multiplication ``C[i, j] = Σ_k A[i, k] · B[k, j]``, the reduction every bug hunt starts with."""

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

# label → (input dtype, accumulation dtype, output dtype)
DTYPES = {
    "float32": ("float32", "float32", "float32"),
    "float16": ("float16", "float16", "float16"),
    "float16-acc32": ("float16", "float32", "float32"),
}


@register
class Matmul(Workload):
    name = "matmul"
    description = "C = A @ B with an explicit accumulation dtype"
    dtype_labels = tuple(DTYPES)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        dtype = data.draw(st.sampled_from(self.allowed_labels(options)))
        m = draw_extent(data, 64)
        n = draw_extent(data, 64)
        k = draw_extent(data, options.max_reduction)
        return {"M": m, "N": n, "K": k, "dtype": dtype}

    def source(self, p: dict[str, Any]) -> str:
        din, acc, dout = DTYPES[p["dtype"]]
        assert acc == dout, "matmul accumulates in its output buffer"
        return f'''
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({p["M"]}, {p["K"]}), "{din}"), B: T.Buffer(({p["K"]}, {p["N"]}), "{din}"),
         C: T.Buffer(({p["M"]}, {p["N"]}), "{dout}")):
    for i, j, k in T.grid({p["M"]}, {p["N"]}, {p["K"]}):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.{acc}(0)
            C[vi, vj] = C[vi, vj] + T.Cast("{acc}", A[vi, vk]) * T.Cast("{acc}", B[vk, vj])
'''

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc, dout = DTYPES[p["dtype"]]
        m = exact_int_max(p["K"], din, (acc, dout), products=True)
        return [
            InputSpec("A", (p["M"], p["K"]), din, scale=1.0, int_max=m),
            InputSpec("B", (p["K"], p["N"]), din, scale=1.0, int_max=m),
        ]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("C", (p["M"], p["N"]), DTYPES[p["dtype"]][2])]

    def reference(self, p, inputs, numerics):
        a, b = as_f64(inputs["A"]), as_f64(inputs["B"])
        return {
            "C": bounds.reduction(
                a @ b,
                np.abs(a) @ np.abs(b),
                p["K"],
                acc_dtype=numerics.accumulation_dtype("C"),
                out_dtype=DTYPES[p["dtype"]][2],
                products=True,
                model="dot",
            )
        }
