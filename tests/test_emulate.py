"""The same-order emulation against real TVM kernels: the program's own arithmetic, bit for bit.

Each test compiles a real kernel with TVM and compares its output with
:func:`fuzzharness.oracles.emulate.emulate` of the declared program; the facts the emulation relies on
(float32 multiply-adds fused on FMA targets and never for float16, bfloat16 computed in
float32 with float32 literals, max/min as compare-and-select) are checked where they matter.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fuzzharness.backends.llvm import codegen_tir, lower_tir
from fuzzharness.generators.inputs import make_inputs
from fuzzharness.generators.workloads import workloads
from fuzzharness.oracles.emulate import Unsupported, emulate, target_cpu
from fuzzharness.oracles.fma import fma32, fma_chain
from fuzzharness.oracles.numerics import numpy_dtype

PLAIN = {"kind": "llvm"}
FMA = {"kind": "llvm", "mcpu": "x86-64-v3"}


def bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def run_kernel(func, inputs: dict, out_specs, target, sch=None):
    import tvm

    mod = sch.mod if sch is not None else tvm.IRModule({"main": func})
    rt = codegen_tir(lower_tir(mod, target, {}))["main"]
    args = [tvm.runtime.tensor(np.ascontiguousarray(inputs[p])) for p in inputs]
    outs = [tvm.runtime.tensor(np.full(o.shape, np.nan, numpy_dtype(o.dtype))) for o in out_specs]
    rt(*args, *outs)
    return {o.name: t.numpy() for o, t in zip(out_specs, outs, strict=True)}


def agree(out: np.ndarray, variants: list[np.ndarray], mask=None) -> np.ndarray:
    ok = np.zeros(out.shape, bool)
    for v in variants:
        ok |= bits(out) == bits(np.asarray(v, dtype=out.dtype))
    return ok if mask is None else ok | ~mask


def test_fma32_is_correctly_rounded_where_float64_double_rounding_is_not():
    # x·y + z lands exactly halfway between two float32 numbers once rounded to float64
    x = np.array([1 + 2**-23, -(1 + 2**-23), 1 + 2**-23], np.float32)
    y = np.array([(1 - 2**-23) * 2**-24, (1 - 2**-23) * 2**-24, (1 + 2**-23) * 2**-24], np.float32)
    z = np.array([1 + 2**-23, -(1 + 2**-23), 1.0], np.float32)
    naive = (x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)).astype(np.float32)
    want = np.array([1 + 2**-23, -(1 + 2**-23), 1 + 2**-23], np.float32)
    assert not np.array_equal(naive, want)  # the case the correction exists for
    assert np.array_equal(fma32(x, y, z), want)
    assert np.array_equal(fma_chain(z, (x.astype(np.float64) * y.astype(np.float64))[None]), want)


@pytest.mark.parametrize("workload, params, target, variants", [
    ("matmul", {"M": 5, "N": 6, "K": 200, "dtype": "float32"}, PLAIN, 1),
    ("matmul", {"M": 5, "N": 6, "K": 200, "dtype": "float32"}, FMA, 2),  # fused and unfused
    ("matmul", {"M": 5, "N": 6, "K": 300, "dtype": "float16"}, FMA, 1),  # fp16: never fused
    ("matmul", {"M": 4, "N": 3, "K": 120, "dtype": "bfloat16"}, FMA, 1),
    ("softmax", {"B": 1, "M": 4, "N": 96, "dtype": "float16"}, PLAIN, 1),  # glibc expf
    ("softmax", {"B": 1, "M": 4, "N": 40, "dtype": "bfloat16"}, FMA, 1),
    ("layer_norm", {"B": 1, "M": 6, "N": 64, "dtype": "float32"}, FMA, 2),
    ("layer_norm", {"B": 1, "M": 3, "N": 257, "dtype": "bfloat16"}, PLAIN, 1),  # T.bfloat16(257)
    ("pool2d", {"kind": "avg", "layout": "NHWC", "N": 1, "C": 3, "H": 9, "W": 8, "KH": 3, "KW": 2,
                "stride": 2, "pad": 1, "count_include_pad": False, "dtype": "bfloat16"}, PLAIN, 1),
], ids=lambda x: x if isinstance(x, str) else None)
def test_the_emulation_reproduces_the_kernel_bit_for_bit(workload, params, target, variants):
    wl = workloads[workload]
    func = wl.prim_func(params)
    inputs = make_inputs(wl.inputs(params), "normal", 7)
    got = run_kernel(func, inputs, wl.outputs(params), target)
    em = emulate(func, inputs, target, ordered=True)
    for name, out in got.items():
        assert agree(out, em.variants[name]).all(), name
        assert len(em.variants[name]) == variants  # both variants only where they differ
        if variants == 2:  # and then the kernel took the fused one: the model is not vacuous
            assert not agree(out, em.variants[name][:1]).all()


def test_bfloat16_literals_are_float32_in_the_kernel():
    """``T.bfloat16(1021)`` is 1021.0 in TVM's llvm code (the legalization keeps the value
    written, as float32), not the bfloat16 1020 — the emulation and the bounds say so."""
    from fuzzharness.core.tvm_support import parse_prim_func

    func = parse_prim_func('''
@T.prim_func(s_tir=True)
def main(X: T.Buffer((4,), "bfloat16"), Y: T.Buffer((4,), "float32")):
    T0 = T.sblock_alloc_buffer((4,), "bfloat16")
    for i in range(4):
        with T.sblock("f"):
            vi = T.axis.remap("S", [i])
            T0[vi] = X[vi] + T.bfloat16(1021)
    for i in range(4):
        with T.sblock("g"):
            vi = T.axis.remap("S", [i])
            Y[vi] = T.Cast("float32", T0[vi])
''')
    x = {"X": np.zeros(4, ml_dtypes.bfloat16)}
    from fuzzharness.generators.workloads.base import TensorSpec

    got = run_kernel(func, x, [TensorSpec("Y", (4,), "float32")], PLAIN)["Y"]
    assert (got == 1021.0).all()
    assert (emulate(func, x, PLAIN, ordered=True).variants["Y"][0] == 1021.0).all()


def test_order_independent_elements_are_determined_under_any_order():
    """rfactor + a permuted reduction: the exact second-run inputs are determined bitwise, the
    float inputs not at all."""
    from tvm import s_tir

    p = {"M": 4, "N": 5, "K": 96, "dtype": "float16"}
    wl = workloads["matmul"]
    func = wl.prim_func(p)
    sch = s_tir.Schedule(func)
    i, j, k = sch.get_loops(sch.get_sblock("C"))
    ko, ki = sch.split(k, [None, 8])
    sch.rfactor(ki, 0)
    exact = wl.exact_inputs(p, np.random.default_rng(0))
    got = run_kernel(func, exact, wl.outputs(p), PLAIN, sch)["C"]
    em = emulate(func, exact, PLAIN, ordered=False)
    assert em.determined["C"].all() and agree(got, em.variants["C"]).all()
    floats = make_inputs(wl.inputs(p), "uniform", 1)
    assert not emulate(func, floats, PLAIN, ordered=False).determined["C"].any()


def test_zero_terms_do_not_shrink_what_certifies_and_a_sum_past_2p_does_not_certify():
    """An average-pooling window of integers up to 8, zeros among them: Σ|t| ≈ 1080 ≤ 2^11,
    so every fp16 sum is exact in any order (a zero term once made the quantum 1/2, and only
    sums ≤ 1024 certified: 30 % of these windows); past 2^11 nothing is claimed."""
    p = {"kind": "avg", "layout": "NCHW", "N": 1, "C": 4, "H": 19, "W": 19, "KH": 16, "KW": 16,
         "stride": 1, "pad": 0, "count_include_pad": True, "dtype": "float16"}
    wl = workloads["pool2d"]
    func = wl.prim_func(p)
    exact = wl.exact_inputs(p, np.random.default_rng([1, 17]))
    assert (exact["I"] == 0).any()
    em = emulate(func, exact, PLAIN, ordered=False)
    assert em.determined["O"].all()
    got = run_kernel(func, exact, wl.outputs(p), PLAIN)["O"]
    assert agree(got, em.variants["O"]).all()
    big = {"I": (np.abs(exact["I"]) + 9).astype(np.float16)}  # Σ|t| ≥ 9·256 > 2^11 everywhere
    assert not emulate(func, big, PLAIN, ordered=False).determined["O"].any()


def test_a_stored_product_meeting_an_addition_is_not_emulated_on_fma_targets():
    """LLVM contracts T0 = a·b; out = T0 − r once it forwards T0 (small unrolled loops): the
    program text cannot tell, so no bitwise claim is made there — and without FMA there is
    nothing to contract."""
    p = {"M": 3, "N": 2, "K": 127, "steps": [{"op": "mul", "arg": "residual"},
                                             {"op": "sub", "arg": "residual"}],
         "dtype": "float16-acc32"}
    wl = workloads["fused_epilogue"]
    func = wl.prim_func(p)
    inputs = make_inputs(wl.inputs(p), "uniform", 0)
    with pytest.raises(Unsupported, match="stored product"):
        emulate(func, inputs, FMA, ordered=True)
    got = run_kernel(func, inputs, wl.outputs(p), PLAIN)["out"]
    assert agree(got, emulate(func, inputs, PLAIN, ordered=True).variants["out"]).all()


def test_targets_without_a_model_are_refused():
    assert target_cpu({"kind": "cuda", "arch": "sm_90"}) is None
    assert target_cpu(PLAIN) == "plain" and target_cpu(FMA) == "fma"
    assert target_cpu({"kind": "llvm", "mcpu": "x86-64-v3", "mattr": ["-fma"]}) == "plain"
