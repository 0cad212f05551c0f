"""Workloads that exist for GPU targets: shapes and layouts the GPU paths need.

``matmul_tc``       matmul with tensor-core friendly shapes (M, N, K multiples of 16) and the
                    dtypes TVM's wmma intrinsics take: fp16 → fp16/fp32 and **int8 → int32**.
                    Drawn for CUDA targets, where the tensor-core schedules (MetaSchedule's
                    ``cuda-tensorcore`` space, dlight's tensorized Matmul) can apply.
``matmul_texture``  matmul whose inputs are kernel parameters in texture scopes — A as
                    ``(M, K/4, 4)``, B as ``(K, N/4, 4)`` RGBA pixels, each in a drawn scope of
                    ``global.texture``, ``global.texture-nhwc``, ``global.texture-weight`` — read
                    with ``read_imagef``/``read_imageh`` by the Adreno OpenCL code and passed by the
                    launcher as images.  The ``(…, k/4, 4)`` array is the ``(…, k)`` array in the
                    same C-order memory, so the reference is plain matmul.  Drawn for Adreno.

Both have ``default = False`` (llvm campaigns never draw them) and say which targets draw
them by default through :meth:`for_target`.  The reference and error bounds are matmul's
(``generators/workloads/matmul.py``); int32 accumulation is exact.
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
    exact_int_max,
    register,
)
from fuzzharness.oracles import bounds

TC_DTYPES = {  # label → (input, accumulation = output)
    "float16": ("float16", "float16"),
    "float16-acc32": ("float16", "float32"),
    "int8-acc32": ("int8", "int32"),
}
TEXTURE_DTYPES = {"float32": ("float32", "float32"), "float16-acc32": ("float16", "float32")}
TEXTURE_SCOPES = ("global.texture", "global.texture-nhwc", "global.texture-weight")


def _matmul_reference(a: np.ndarray, b: np.ndarray, k: int, acc: str, out: str):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return bounds.reduction(a @ b, np.abs(a) @ np.abs(b), k, acc_dtype=acc, out_dtype=out,
                            products=True, model="dot")


class GpuWorkload(Workload):
    default = False

    @staticmethod
    def for_target(target: dict[str, Any]) -> bool:
        return False


@register
class MatmulTensorCore(GpuWorkload):
    name = "matmul_tc"
    description = "C = A @ B, M/N/K multiples of 16, fp16 or int8 (tensor-core shapes)"
    dtype_labels = tuple(TC_DTYPES)

    @staticmethod
    def for_target(target):
        return target.get("kind") == "cuda"

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        dtype = data.draw(st.sampled_from(self.allowed_labels(options)))
        m, n = (16 * data.draw(st.integers(1, 8)) for _ in range(2))
        k = 16 * data.draw(st.integers(1, max(1, min(64, options.max_reduction // 16))))
        return {"M": m, "N": n, "K": k, "dtype": dtype}

    def params_problem(self, p):
        bad = [k for k in ("M", "N", "K") if p[k] % 16]
        if bad:
            return f"{', '.join(bad)} must be multiples of 16 (tensor-core shapes)"
        return super().params_problem(p)

    def source(self, p):
        din, acc = TC_DTYPES[p["dtype"]]
        return f'''
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({p["M"]}, {p["K"]}), "{din}"), B: T.Buffer(({p["K"]}, {p["N"]}), "{din}"),
         C: T.Buffer(({p["M"]}, {p["N"]}), "{acc}")):
    for i, j, k in T.grid({p["M"]}, {p["N"]}, {p["K"]}):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.{acc}(0)
            C[vi, vj] = C[vi, vj] + T.Cast("{acc}", A[vi, vk]) * T.Cast("{acc}", B[vk, vj])
'''

    def inputs(self, p):
        din, acc = TC_DTYPES[p["dtype"]]
        m = exact_int_max(p["K"], din, (acc,), products=True)
        scale = 127.0 if din == "int8" else 1.0
        return [InputSpec("A", (p["M"], p["K"]), din, scale=scale, int_max=m),
                InputSpec("B", (p["K"], p["N"]), din, scale=scale, int_max=m)]

    def outputs(self, p):
        return [TensorSpec("C", (p["M"], p["N"]), TC_DTYPES[p["dtype"]][1])]

    def reference(self, p, inputs, numerics):
        return {"C": _matmul_reference(inputs["A"], inputs["B"], p["K"],
                                       numerics.accumulation_dtype("C"), TC_DTYPES[p["dtype"]][1])}


@register
class MatmulTexture(GpuWorkload):
    name = "matmul_texture"
    description = "C = A @ B with A and B kernel parameters in Adreno texture scopes"
    dtype_labels = tuple(TEXTURE_DTYPES)

    @staticmethod
    def for_target(target):
        return target.get("kind") == "opencl" and (
            target.get("device") == "adreno" or "adreno" in target.get("keys", ()))

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        dtype = data.draw(st.sampled_from(self.allowed_labels(options)))
        m = data.draw(st.integers(1, 32))
        n = 4 * data.draw(st.integers(1, 8))
        k = 4 * data.draw(st.integers(1, max(1, min(64, options.max_reduction // 4))))
        scope_a = data.draw(st.sampled_from(TEXTURE_SCOPES))
        scope_b = data.draw(st.sampled_from(TEXTURE_SCOPES))
        return {"M": m, "N": n, "K": k, "dtype": dtype, "scope_A": scope_a, "scope_B": scope_b}

    def params_problem(self, p):
        bad = [k for k in ("N", "K") if p[k] % 4]  # the texture's innermost 4 lanes
        if bad:
            return f"{', '.join(bad)} must be multiples of 4 (texture pixels)"
        return super().params_problem(p)

    def source(self, p):
        din, acc = TEXTURE_DTYPES[p["dtype"]]
        m, n, k = p["M"], p["N"], p["K"]
        return f'''
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({m}, {k // 4}, 4), "{din}", scope="{p["scope_A"]}"),
         B: T.Buffer(({k}, {n // 4}, 4), "{din}", scope="{p["scope_B"]}"),
         C: T.Buffer(({m}, {n}), "{acc}")):
    for i, j, kk in T.grid({m}, {n}, {k}):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, kk])
            with T.init():
                C[vi, vj] = T.{acc}(0)
            C[vi, vj] = C[vi, vj] + T.Cast("{acc}", A[vi, vk // 4, vk % 4]) * T.Cast("{acc}", B[vk, vj // 4, vj % 4])
'''

    def inputs(self, p):
        din, acc = TEXTURE_DTYPES[p["dtype"]]
        m = exact_int_max(p["K"], din, (acc,), products=True)
        return [InputSpec("A", (p["M"], p["K"] // 4, 4), din, int_max=m),
                InputSpec("B", (p["K"], p["N"] // 4, 4), din, int_max=m)]

    def outputs(self, p):
        return [TensorSpec("C", (p["M"], p["N"]), TEXTURE_DTYPES[p["dtype"]][1])]

    def reference(self, p, inputs, numerics):
        a = inputs["A"].reshape(p["M"], p["K"])
        b = inputs["B"].reshape(p["K"], p["N"])
        return {"C": _matmul_reference(a, b, p["K"], numerics.accumulation_dtype("C"),
                                       TEXTURE_DTYPES[p["dtype"]][1])}
