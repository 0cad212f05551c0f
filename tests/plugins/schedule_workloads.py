"""Small multi-block workloads that give every schedule primitive a site (tests only).

Today's default workloads (matmul, row_sum) are single blocks: compute_at, inlining,
fuse_reduction_epilogue, decompose_padding, rolling_buffer, merge, ... have nothing to act on
there.  These two programs are the smallest that host them; they are registered with
``default = False`` so campaigns draw them only when named (or loaded as a plugin and named).

``test_dense_bias_relu``   C = A @ B (reduction, intermediate), D = C + bias (the linear
                           epilogue fuse_reduction_epilogue accepts), E = max(D, 0)
``test_pad_window_sum``    P = pad(A, 1) (a padding block), S = 3×3 window sums of P (a
                           stencil reduction: overlapping reads for rolling_buffer,
                           composite indices for cache_index)

Both use ``T.sblock_alloc_buffer`` for their intermediates: a plain ``T.alloc_buffer`` is not
a block allocation in TVM 0.27, and every block writing it counts as an output block.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads.base import (
    GenOptions,
    TensorSpec,
    Workload,
    as_f64,
    exact_int_max,
    register,
    workloads,
)
from fuzzharness.oracles import bounds

# label → (input dtype, accumulation/output dtype)
DTYPES = {"float32": ("float32", "float32"), "float16-acc32": ("float16", "float32")}


@register
class DenseBiasRelu(Workload):
    name = "test_dense_bias_relu"
    description = "E = relu(A @ B + bias), three blocks"
    dtype_labels = tuple(DTYPES)
    default = False

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        dtype = data.draw(st.sampled_from(self.allowed_labels(options)))
        m = data.draw(st.integers(1, 24))
        n = data.draw(st.integers(1, 24))
        k = data.draw(st.integers(1, min(96, options.max_reduction)))
        return {"M": m, "N": n, "K": k, "dtype": dtype}

    def source(self, p: dict[str, Any]) -> str:
        din, acc = DTYPES[p["dtype"]]
        m, n, k = p["M"], p["N"], p["K"]
        return f'''
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({m}, {k}), "{din}"), B: T.Buffer(({k}, {n}), "{din}"),
         bias: T.Buffer(({n},), "{acc}"), E: T.Buffer(({m}, {n}), "{acc}")):
    C = T.sblock_alloc_buffer(({m}, {n}), "{acc}")
    D = T.sblock_alloc_buffer(({m}, {n}), "{acc}")
    for i, j, k in T.grid({m}, {n}, {k}):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.{acc}(0)
            C[vi, vj] = C[vi, vj] + T.Cast("{acc}", A[vi, vk]) * T.Cast("{acc}", B[vk, vj])
    for i, j in T.grid({m}, {n}):
        with T.sblock("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = C[vi, vj] + bias[vj]
    for i, j in T.grid({m}, {n}):
        with T.sblock("E"):
            vi, vj = T.axis.remap("SS", [i, j])
            E[vi, vj] = T.max(D[vi, vj], T.{acc}(0))
'''

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc = DTYPES[p["dtype"]]
        # K products plus the bias: K + 1 terms in any order (fusing the bias into the
        # reduction's init makes it the first term instead of the last)
        m = exact_int_max(p["K"] + 1, din, (acc,), products=True)
        return [
            InputSpec("A", (p["M"], p["K"]), din, scale=1.0, int_max=m),
            InputSpec("B", (p["K"], p["N"]), din, scale=1.0, int_max=m),
            InputSpec("bias", (p["N"],), acc, scale=1.0, int_max=m),
        ]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("E", (p["M"], p["N"]), DTYPES[p["dtype"]][1])]

    def reference(self, p, inputs, numerics):
        a, b, bias = as_f64(inputs["A"]), as_f64(inputs["B"]), as_f64(inputs["bias"])
        pre = a @ b + bias
        # The bias is one more term of the sum (K products + 1 addend: K additions, one
        # product rounding each); relu is 1-Lipschitz and exact, so the bound carries over.
        e = bounds.reduction(pre, np.abs(a) @ np.abs(b) + np.abs(bias), p["K"] + 1,
                             acc_dtype=numerics.accumulation_dtype("C"),
                             out_dtype=DTYPES[p["dtype"]][1], products=True, model="dense+bias")
        e.value = np.maximum(e.value, 0.0)
        return {"E": e}


@register
class PadWindowSum(Workload):
    name = "test_pad_window_sum"
    description = "S = 3x3 window sums of A zero-padded by 1, two blocks"
    dtype_labels = tuple(DTYPES)
    default = False

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        dtype = data.draw(st.sampled_from(self.allowed_labels(options)))
        return {"H": data.draw(st.integers(1, 24)), "W": data.draw(st.integers(1, 24)),
                "dtype": dtype}

    def source(self, p: dict[str, Any]) -> str:
        din, acc = DTYPES[p["dtype"]]
        h, w = p["H"], p["W"]
        return f'''
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({h}, {w}), "{din}"), S: T.Buffer(({h}, {w}), "{acc}")):
    P = T.sblock_alloc_buffer(({h + 2}, {w + 2}), "{din}")
    for i, j in T.grid({h + 2}, {w + 2}):
        with T.sblock("P"):
            vi, vj = T.axis.remap("SS", [i, j])
            P[vi, vj] = T.if_then_else(1 <= vi and vi < {h + 1} and 1 <= vj and vj < {w + 1},
                                       A[vi - 1, vj - 1], T.{din}(0))
    for i, j, di, dj in T.grid({h}, {w}, 3, 3):
        with T.sblock("S"):
            vi, vj, vdi, vdj = T.axis.remap("SSRR", [i, j, di, dj])
            with T.init():
                S[vi, vj] = T.{acc}(0)
            S[vi, vj] = S[vi, vj] + T.Cast("{acc}", P[vi + vdi, vj + vdj])
'''

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, acc = DTYPES[p["dtype"]]
        return [InputSpec("A", (p["H"], p["W"]), din, scale=1.0,
                          int_max=exact_int_max(9, din, (acc,), products=False))]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("S", (p["H"], p["W"]), DTYPES[p["dtype"]][1])]

    def reference(self, p, inputs, numerics):
        a = as_f64(inputs["A"])
        h, w = p["H"], p["W"]

        def window_sum(x):
            padded = np.pad(x, 1)
            return sum(padded[di:di + h, dj:dj + w] for di in range(3) for dj in range(3))

        return {"S": bounds.reduction(window_sum(a), window_sum(np.abs(a)), 9,
                                      acc_dtype=numerics.accumulation_dtype("S"),
                                      out_dtype=DTYPES[p["dtype"]][1], products=False,
                                      model="window-sum")}


__all__ = ["workloads"]
