"""The error model against the real TVM: transcendental bounds on every fp16/bf16 input, and
the bounds' behaviour at the edges (inconclusive, exact mode, literals, IEEE specials)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fuzzharness.testing.wrong_programs  # noqa: F401
import tests.plugins.fault_backends  # noqa: F401  (test_llvm_last_bit)
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status
from fuzzharness.execution.stages import execute
from fuzzharness.oracles import bounds, numerics
from fuzzharness.oracles.bounds import Approx
from fuzzharness.oracles.compare import judge

FUNCS = {"exp": bounds.exp, "sigmoid": bounds.sigmoid, "tanh": bounds.tanh,
         "rsqrt": bounds.rsqrt, "sqrt": bounds.sqrt}


def all_finite(dtype: str) -> np.ndarray:
    """Every finite value of a 16-bit float dtype."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    x = bits.view(numerics.numpy_dtype(dtype))
    with np.errstate(invalid="ignore"):
        return x[np.isfinite(x.astype(np.float64))]


def float32_sample() -> np.ndarray:
    rng = np.random.default_rng(0)
    mags = np.exp2(rng.uniform(-30, 7, 1 << 18)) * rng.choice([-1, 1], 1 << 18)
    return np.concatenate([mags, rng.uniform(-20, 20, 1 << 16)]).astype(np.float32)


def tvm_apply(func: str, x: np.ndarray) -> np.ndarray:
    import tvm

    from fuzzharness.core.tvm_support import parse_prim_func

    dt = "bfloat16" if x.dtype == ml_dtypes.bfloat16 else str(x.dtype)
    src = f'''
@T.prim_func(s_tir=True)
def main(X: T.Buffer(({x.size},), "{dt}"), Y: T.Buffer(({x.size},), "{dt}")):
    for i in range({x.size}):
        with T.sblock("f"):
            vi = T.axis.remap("S", [i])
            Y[vi] = T.{func}(X[vi])
'''
    lib = tvm.compile(tvm.IRModule({"main": parse_prim_func(src)}), target="llvm")
    y = tvm.runtime.tensor(np.zeros_like(x))
    lib["main"](tvm.runtime.tensor(x), y)
    return y.numpy()


@pytest.mark.parametrize("func", sorted(FUNCS))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_transcendental_bounds_hold_on_every_input(func, dtype):
    x = float32_sample() if dtype == "float32" else all_finite(dtype)
    x = x.astype(numerics.numpy_dtype(dtype))
    xf = x.astype(np.float64)
    if func == "exp":  # keep exp finite: the model does not cover overflow (inputs never do)
        x = x[xf < np.log(numerics.fmt(dtype).max) - 0.01]
    if func in ("rsqrt", "sqrt"):
        x = x[xf > 0]
    expected = {"Y": bounds.to_expected(FUNCS[func](Approx.exact(x.astype(np.float64), dtype), dtype),
                                        dtype, func)}
    j = judge(expected, {"Y": tvm_apply(func, x)})
    assert j.status is Status.PASS, j.message
    # not vacuous: TVM's kernels use a visible share of the bound somewhere (bf16 tanh, whose
    # inner operations TVM runs in fp32, uses the least: ≈ 9 %)
    assert j.ratio > 0.05, j.message


def test_the_reduction_bound_is_gamma_of_the_program_accumulator():
    """fp16 inputs, fp32 accumulator stored to fp16: γ_k(u32)·Σ|t| plus one fp16 rounding."""
    k = 100
    e = bounds.reduction(np.array([1.0]), np.array([50.0]), k, acc_dtype="float32",
                         out_dtype="float16", products=True)
    u32, u16 = numerics.op_u("float32"), numerics.op_u("float16")
    g = k * (u32 + numerics.U64) / (1 - k * (u32 + numerics.U64))
    acc = g * 50.0 + (k + 1) * numerics.fmt("float32").eta
    eta16 = numerics.fmt("float16").eta
    assert e.bound[0] == pytest.approx((acc + (u16 + numerics.U64) * (1 + acc) + eta16) * bounds.BOUND_SLACK,
                                       rel=1e-12)


def test_meaningless_gamma_is_inconclusive_never_pass_or_fail():
    """bf16 accumulation of 256 products: k·u ≥ 1 — the bound says so, and the case is
    inconclusive unless something else judges every element."""
    p = {"M": 3, "N": 4, "K": 256, "dtype": "bfloat16"}
    # a target kind the same-order emulation has no model for: only the bound judges
    v = execute(Case(workload={"name": "matmul", "params": p}, target={"kind": "test_llvm_last_bit"},
                     inputs={"distribution": "uniform", "seed": 1})).verdict
    assert v.status is Status.INCONCLUSIVE, v.line()
    assert "≥ 1" in v.details["inconclusive"] and not v.is_finding
    # on llvm the emulation of the program's own arithmetic judges it bitwise instead
    v = execute(Case(workload={"name": "matmul", "params": p},
                     inputs={"distribution": "uniform", "seed": 1})).verdict
    assert v.status is Status.PASS, v.line()
    first = [c for c in v.details["checks"] if c["run"] == "first"]
    assert [(c["reference"], c["status"], c["complete"]) for c in first] == [
        ("bound", "inconclusive", False), ("emulation", "pass", True)]
    # … and the generator's exact-integer mode judges the same program bitwise
    v = execute(Case(workload={"name": "matmul", "params": p},
                     inputs={"distribution": "small_ints", "seed": 1}, oracle={"mode": "exact"})).verdict
    assert v.status is Status.PASS and v.ratio == 0.0


@pytest.mark.slow
def test_generator_switches_to_exact_mode_where_gamma_is_meaningless():
    from fuzzharness.generators.cases import GenSettings, generate_case

    settings = GenSettings(workloads=("matmul",), dtypes=("bfloat16",), exact_fraction=0.0,
                           max_steps=0)
    modes = {True: set(), False: set()}
    for i in range(40):
        c = generate_case(9, i, settings)
        assert c.params["K"] <= 256  # beyond 2^8 neither mode could judge a bf16 accumulator
        modes[c.params["K"] * numerics.op_u("bfloat16") >= 0.5].add(c.oracle["mode"])
    assert modes[True] == {"exact"}
    assert "bound" in modes[False]


def test_literals_are_rounded_as_the_program_writes_them():
    assert float(bounds.const(1021, "bfloat16").value) == 1020.0
    assert float(bounds.const(1e-5, "float16").value) == float(np.float16(1e-5))


def test_exact_mode_is_the_correctly_rounded_exact_value():
    e = bounds.exact_mode(bounds.Expected(np.array([7 / 3, 2.0**40]), np.array([1.0, 1.0]),
                                          "float16", "mean"))
    assert e.value[0] == float(np.float16(7 / 3)) and np.isinf(e.value[1])
    assert not e.bound.any()
    assert bounds.exact(np.array([2.0**31]), "int32").value[0] == -(2.0**31)  # wrap-around


def test_special_values_follow_ieee_semantics_and_nan_where_finite_fails():
    ref = bounds.Expected(np.array([np.inf, np.nan, 1.0]), np.array([np.inf, np.inf, 0.1]),
                          "float32", "t")
    assert judge({"o": ref}, {"o": np.array([np.inf, np.nan, 1.05])}).status is Status.PASS
    wrong = judge({"o": ref}, {"o": np.array([-np.inf, np.nan, 1.0])})
    assert wrong.status is Status.WRONG_RESULT and wrong.worst_index == [0]
    nan = judge({"o": ref}, {"o": np.array([np.inf, np.nan, np.nan])})
    assert nan.status is Status.NAN_INF and nan.worst_index == [2]


@pytest.mark.parametrize("workload, params", [
    ("matmul", {"M": 5, "N": 6, "K": 40, "dtype": "float16"}),
    ("row_sum", {"M": 7, "N": 90, "dtype": "float32"}),
    ("layer_norm", {"B": 1, "M": 3, "N": 16, "dtype": "float16-acc32"}),
])
def test_special_value_inputs_pass_with_ieee_semantics(workload, params):
    out = execute(Case(workload={"name": workload, "params": params},
                       inputs={"distribution": "special_values", "seed": 4}))
    assert out.verdict.status is Status.PASS, out.verdict.line()
    assert any(not np.isfinite(e.value).all() for e in out.expected.values())


# -- the bound catches what it must catch -----------------------------------------------------

@pytest.mark.parametrize("distribution", ["uniform", "normal", "cancellation", "wide_range"])
def test_rounding_the_fp32_accumulator_to_fp16_every_step_is_caught(distribution):
    p = {"M": 8, "N": 8, "K": 256, "dtype": "float16-acc32"}
    out = execute(Case(workload={"name": "test_matmul_rounds_accumulator", "params": p},
                       inputs={"distribution": distribution, "seed": 2}))
    v = out.verdict
    assert v.status is Status.WRONG_RESULT and v.ratio > 1, v.line()
    # judged with an fp16 accumulator's bound the same outputs would pass: the catch relies
    # on reading the accumulation dtype (fp32) from the program
    a, b = out.inputs["A"].astype(np.float64), out.inputs["B"].astype(np.float64)
    as_fp16 = bounds.reduction(a @ b, np.abs(a) @ np.abs(b), p["K"], acc_dtype="float16",
                               out_dtype="float32", products=True)
    assert judge({"C": as_fp16}, out.outputs).status is Status.PASS


@pytest.mark.parametrize("dtype, distribution, mode", [
    ("float32", "uniform", "bound"), ("float16-acc32", "normal", "bound"),
    ("float16", "small_ints", "exact"), ("bfloat16", "small_ints", "exact"),
    ("int8", "uniform", "bound"),
])
@pytest.mark.parametrize("wrong", ["test_matmul_drops_term", "test_matmul_off_by_one"])
def test_a_dropped_term_and_an_off_by_one_element_are_caught(wrong, dtype, distribution, mode):
    p = {"M": 9, "N": 7, "K": 64, "dtype": dtype}
    v = execute(Case(workload={"name": wrong, "params": p},
                     inputs={"distribution": distribution, "seed": 5}, oracle={"mode": mode})).verdict
    assert v.status is Status.WRONG_RESULT and v.ratio > 1, v.line()
    if wrong == "test_matmul_off_by_one":
        assert v.worst_index[1] == p["N"] - 1
