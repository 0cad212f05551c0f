"""Row reduction ``B[i] = Σ_j A[i, j]``: a plain sum, the simplest reassociable reduction.

Block ``B`` accumulates into the output (its dtype is the accumulation dtype).  Error model:
a k-term sum (:func:`fuzzharness.oracles.bounds.reduction`, no products).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads.base import (
    ALL_SPECIALS,
    DTYPE_LABELS,
    GenOptions,
    TensorSpec,
    Workload,
    as_f64,
    buf,
    draw_extent,
    draw_label,
    exact_int_max,
    exact_set,
    reduction_limit,
    register,
)
from fuzzharness.oracles import bounds, numerics

# label → (input dtype, accumulation = output dtype)
DTYPES = {label: DTYPE_LABELS[label][:2]
          for label in ("float32", "float16", "bfloat16", "float16-acc32", "int8")}


@register
class RowSum(Workload):
    name = "row_sum"
    description = "B[i] = sum_j A[i, j]"
    dtype_labels = tuple(DTYPES)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        dtype = draw_label(data, self, options)
        m = draw_extent(data, 128)
        n = draw_extent(data, reduction_limit(options, dtype))
        return {"M": m, "N": n, "dtype": dtype}

    def source(self, p: dict[str, Any]) -> str:
        din, acc = DTYPES[p["dtype"]]
        return f'''
@T.prim_func(s_tir=True)
def main(A: {buf((p["M"], p["N"]), din)}, B: {buf((p["M"],), acc)}):
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
        scale = 1.0 if numerics.is_float(din) else float(m)
        specials = ALL_SPECIALS if numerics.is_float(din) else ()
        es = exact_set(p["N"], din, acc, acc, products=False)
        return [InputSpec("A", (p["M"], p["N"]), din, scale=scale, int_max=m, specials=specials,
                          exact=es)]

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
