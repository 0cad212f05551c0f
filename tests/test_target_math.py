"""GPU numerics in the error model: the flags the code is compiled with, the vendors' ulp
tables, and the bounds that follow from them (oracles/target_math.py)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from fuzzharness.oracles import bounds, target_math
from fuzzharness.oracles.bounds import Approx

CUDA = {"kind": "cuda", "arch": "sm_90"}


def _ptx(tmp_path, fast: bool, monkeypatch) -> str:
    """PTX of a division, an exp and a square root, compiled with the harness's nvcc flags."""
    from fuzzharness.backends.cuda import nvcc_command, nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc is not on PATH")
    if fast:
        monkeypatch.delenv("TVM_CUDA_NVCC_NO_FAST_MATH", raising=False)
    else:
        monkeypatch.setenv("TVM_CUDA_NVCC_NO_FAST_MATH", "1")
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void k(float* a, const float* b) {\n'
                   '  int i = threadIdx.x; a[i] = expf(a[i]) / b[i] + sqrtf(b[i]); }\n')
    cmd = nvcc_command("sm_90", str(src), str(tmp_path / "k.ptx"))
    cmd[cmd.index("--cubin")] = "--ptx"
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return (tmp_path / "k.ptx").read_text()


def test_cuda_fast_math_follows_tvm_and_the_model_follows_the_code(tmp_path, monkeypatch):
    """TVM's nvcc path adds --use_fast_math unless $TVM_CUDA_NVCC_NO_FAST_MATH is set; the
    harness compiles the same way, and the error model switches with the same variable."""
    fast = _ptx(tmp_path, True, monkeypatch)
    assert target_math.math_for(CUDA) is target_math.CUDA_FAST
    assert "div.rn.f32" not in fast and "ex2.approx" in fast and ".ftz." in fast
    precise = _ptx(tmp_path, False, monkeypatch)
    assert target_math.math_for(CUDA) is target_math.CUDA_IEEE
    assert "div.rn.f32" in precise and "sqrt.rn.f32" in precise


def _bound(f, x, dtype="float32", *args) -> np.ndarray:
    return f(Approx.exact(np.asarray(x, dtype=np.float64), dtype), *args, dtype).err


def test_gpu_models_widen_what_the_vendors_approximate_and_nothing_else(monkeypatch):
    monkeypatch.delenv("TVM_CUDA_NVCC_NO_FAST_MATH", raising=False)
    x = Approx.exact(np.array([0.75, 3.0, -20.0]), "float32")
    y = Approx.exact(np.array([1.5, 7.0, 0.1]), "float32")
    llvm = {"mul": bounds.mul(x, y, "float32").err, "div": bounds.div(x, y, "float32").err,
            "exp": bounds.exp(x, "float32").err, "sqrt": bounds.sqrt(y, "float32").err}
    with target_math.applied(CUDA):
        cuda = {"mul": bounds.mul(x, y, "float32").err, "div": bounds.div(x, y, "float32").err,
                "exp": bounds.exp(x, "float32").err, "sqrt": bounds.sqrt(y, "float32").err}
        # __expf: 2 + floor(|1.173·x|) ulps — the error grows with the argument
        rel = cuda["exp"] / np.exp(x.value)
        assert rel[2] > rel[1] > rel[0]
        # --use_fast_math flushes subnormals: an absolute error up to the smallest normal
        assert bounds.mul(Approx.exact(np.array([1e-30]), "float32"),
                          Approx.exact(np.array([1e-10]), "float32"), "float32").err[0] >= 2.0**-126
    # IEEE multiplications: the same bound but for flushing's eta
    assert (llvm["mul"] <= cuda["mul"]).all() and (cuda["mul"] - llvm["mul"] <= 2.0**-126).all()
    for op in ("div", "exp", "sqrt"):
        assert (cuda[op] > 1.9 * llvm[op]).all(), op
    # outside the context the llvm model is back
    assert np.array_equal(bounds.div(x, y, "float32").err, llvm["div"])


def test_cuda_tanh_is_tanhf_not_tvms_formula():
    """On llvm tanh is TVM's (1 − E)/(1 + E) formula, which cancels near 0 (an absolute error);
    CUDA computes tanhf/htanh (2 ulp, relative): the CUDA bound near 0 is far tighter."""
    x = np.array([1e-4, 0.5, 3.0])
    llvm = _bound(bounds.tanh, x)
    with target_math.applied(CUDA):
        cuda = _bound(bounds.tanh, x)
    assert cuda[0] < llvm[0] / 100
    assert (cuda <= 4 * 2.0**-24 * np.abs(np.tanh(x)) * 1.01 + 2.0**-126).all()


@pytest.fixture
def opencl():
    from fuzzharness.backends.opencl import choose_device

    found = choose_device(False, True)
    if isinstance(found, str):
        pytest.skip(found)


def test_opencl_builtins_stay_within_the_opencl_table(opencl):
    """exp, tanh and sigmoid of a real OpenCL CPU runtime against the OpenCL C table."""
    from tvm import s_tir

    from fuzzharness.core.case import Case
    from fuzzharness.core.tvm_support import trace_to_json
    from fuzzharness.core.verdict import Status
    from fuzzharness.execution.stages import execute
    from fuzzharness.generators.workloads import workloads

    p = {"shape": [64, 64], "broadcast": {"Y": [True, True], "Z": [True, True]},
         "steps": [{"op": "tanh", "arg": None}, {"op": "exp", "arg": None},
                   {"op": "sigmoid", "arg": None}], "dtype": "float32"}
    sch = s_tir.Schedule(workloads["elementwise"].prim_func(p))
    for name in ("tanh_0", "exp_1", "sigmoid_2"):
        b = sch.get_sblock(name)
        fused = sch.fuse(*sch.get_loops(b))
        bx, tx = sch.split(fused, [None, 64])
        sch.bind(bx, "blockIdx.x")
        sch.bind(tx, "threadIdx.x")
    v = execute(Case(workload={"name": "elementwise", "params": p},
                     inputs={"distribution": "wide_range", "seed": 2},
                     schedule={"source": "test", "trace": trace_to_json(sch.trace)},
                     target={"kind": "opencl"})).verdict
    assert v.status is Status.PASS, v.line()
