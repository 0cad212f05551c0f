"""The order-aware metamorphic check: analysis of the scheduled IR, the unscheduled baseline,
and the statuses it adds (order_preserving_divergence, reference_mismatch)."""

from __future__ import annotations

import random

import pytest

import fuzzharness.testing.wrong_programs  # noqa: F401  (registers the wrong programs)
import tests.plugins.fault_backends as faults
from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import trace_to_json
from fuzzharness.core.verdict import Status
from fuzzharness.execution.stages import execute
from fuzzharness.generators.workloads import workloads
from fuzzharness.oracles.order import accumulation_order
from fuzzharness.testing.schedules import spatial_schedule

MATMUL = {"M": 6, "N": 5, "K": 37, "dtype": "float16"}


def schedule(workload, params, build):
    from tvm import s_tir

    sch = s_tir.Schedule(workloads[workload].prim_func(params))
    build(sch)
    return sch


def matmul_loops(sch):
    b = sch.get_sblock("C")
    return b, list(sch.get_loops(b))


def _split_k_outer(sch):
    b, (i, j, k) = matmul_loops(sch)
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(ko, i, j, ki)


def _split_k_swap(sch):
    b, (i, j, k) = matmul_loops(sch)
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(ki, ko)


def _rfactor(sch):
    b, (i, j, k) = matmul_loops(sch)
    _, ki = sch.split(k, [None, 8])
    sch.rfactor(ki, 0)


def _decompose(sch):
    b, (i, j, k) = matmul_loops(sch)
    sch.decompose_reduction(b, k)


def _caches(sch):
    b, _ = matmul_loops(sch)
    sch.cache_write(b, 0, "local")
    a = sch.cache_read(b, 0, "shared")
    sch.compute_at(a, sch.get_loops(b)[2])


def _fuse_spatial_parallel(sch):
    b, (i, j, k) = matmul_loops(sch)
    sch.parallel(sch.fuse(i, j))


def _fuse_spatial_reduction(sch):
    b, (i, j, k) = matmul_loops(sch)
    sch.fuse(j, k)


def _vectorize_inner_spatial(sch):
    b, (i, j, k) = matmul_loops(sch)
    sch.reorder(i, k, j)
    sch.vectorize(j)


def _blockize(sch):
    b, (i, j, k) = matmul_loops(sch)
    sch.blockize(k)


def _transform_layout(sch):
    b, _ = matmul_loops(sch)
    sch.transform_layout(b, ("read", 0), lambda x, y: (y, x))


def _pipeline_annotation(sch):
    b, (i, j, k) = matmul_loops(sch)
    sch.annotate(k, "software_pipeline_stage", [0])


@pytest.mark.parametrize("build, preserved", [
    (lambda sch: None, True),
    (_split_k_outer, True),
    (_decompose, True),
    (_caches, True),
    (_fuse_spatial_parallel, True),
    (_vectorize_inner_spatial, True),
    (_split_k_swap, False),
    (_rfactor, False),
    (_fuse_spatial_reduction, False),
    (_blockize, False),
    (_transform_layout, False),
    (_pipeline_annotation, False),
], ids=lambda x: getattr(x, "__name__", str(x)))
def test_analysis_claims_order_only_when_sure(build, preserved):
    func = workloads["matmul"].prim_func(MATMUL)
    sch = schedule("matmul", MATMUL, build)
    result = accumulation_order(func, sch.mod["main"])
    assert result.preserved is preserved, result.reason
    assert preserved or result.reason


def test_inlining_an_elementwise_block_is_not_order_preserving():
    p = {"shape": [4, 6], "broadcast": {"Y": [True], "Z": [True]},
         "steps": [{"op": "exp", "arg": None}, {"op": "mul", "arg": "Y"}], "dtype": "float16"}
    func = workloads["elementwise"].prim_func(p)
    sch = schedule("elementwise", p, lambda s: s.compute_inline(s.get_sblock("exp_0")))
    assert not accumulation_order(func, sch.mod["main"]).preserved


# -- order-preserving random schedules reproduce the baseline bit for bit --------------------

CASES = [
    ("matmul", {"M": 8, "N": 12, "K": 100, "dtype": "float16"}),
    ("matmul", {"M": 5, "N": 7, "K": 64, "dtype": "float16-acc32-out16"}),
    ("conv2d", {"N": 1, "H": 9, "W": 9, "C": 3, "KH": 7, "KW": 7, "stride": 2, "pad": 3,
                "dilation": 1, "stem": True, "F": 4, "layout": "NHWC", "dtype": "float16"}),
    ("softmax", {"B": 1, "M": 6, "N": 40, "dtype": "float16"}),
    ("layer_norm", {"B": 1, "M": 4, "N": 24, "dtype": "bfloat16"}),
    ("elementwise", {"shape": [6, 16], "broadcast": {"Y": [True], "Z": [False, True]},
                     "steps": [{"op": "mul", "arg": "Y"}, {"op": "exp", "arg": None},
                               {"op": "add", "arg": "Z"}], "dtype": "float16"}),
    ("dense", {"M": 6, "N": 16, "K": 50, "relu": True, "dtype": "bfloat16"}),
]


@pytest.mark.parametrize("workload, params", CASES, ids=[f"{w}-{p['dtype']}" for w, p in CASES])
def test_order_preserving_schedules_are_bitwise_equal_to_the_baseline(workload, params):
    rng = random.Random(workload + params["dtype"])
    func = workloads[workload].prim_func(params)
    preserved = 0
    for n in range(6):
        sch = schedule(workload, params, lambda s: spatial_schedule(s, rng))
        order = accumulation_order(func, sch.mod["main"])
        case = Case(workload={"name": workload, "params": params},
                    inputs={"distribution": "uniform", "seed": n},
                    schedule={"source": "test", "trace": trace_to_json(sch.trace)})
        v = execute(case, baseline="order").verdict
        assert v.status is Status.PASS, (v.line(), sch.mod["main"].script())
        assert v.details["order"]["preserved"] is order.preserved
        if order.preserved and v.details["baseline"] == "build":
            preserved += 1
            assert v.details["bitwise_equal_to_baseline"] is True
    assert preserved >= 2, "the spatial drawer should mostly keep the order"


# -- statuses ---------------------------------------------------------------------------------

def case_for(workload, params, trace=None, **kw):
    return Case(workload={"name": workload, "params": params},
                inputs={"distribution": kw.get("distribution", "uniform"), "seed": 3},
                schedule={"source": "test", "trace": trace},
                target=kw.get("target", {"kind": "llvm"}),
                oracle={"mode": kw.get("mode", "bound")})


def test_a_one_ulp_divergence_of_an_order_preserving_kernel_is_reported():
    sch = schedule("matmul", MATMUL, _split_k_outer)
    case = case_for("matmul", MATMUL, trace_to_json(sch.trace), target={"kind": "test_llvm_last_bit"})
    faults.LastBitFlip.arm()
    v = execute(case, baseline="order").verdict
    assert v.status is Status.ORDER_PRESERVING_DIVERGENCE, v.line()
    assert v.ratio <= 1  # within the bound: not a wrong result
    assert v.status.is_note and not v.is_finding  # recorded, not a failure (--strict-order)
    assert v.details["first_difference"] == ["C", [0, 0]]
    # without the fault the same case passes with bitwise equality
    ok = execute(case, baseline="order").verdict
    assert ok.status is Status.PASS and ok.details["bitwise_equal_to_baseline"] is True


def test_the_same_divergence_under_a_reassociating_schedule_is_not_reported():
    sch = schedule("matmul", MATMUL, _rfactor)
    case = case_for("matmul", MATMUL, trace_to_json(sch.trace), target={"kind": "test_llvm_last_bit"})
    faults.LastBitFlip.arm()
    v = execute(case, baseline="order").verdict
    faults.LastBitFlip.armed = 0
    assert v.status is Status.PASS, v.line()
    assert v.details["baseline"] == "skip"


def test_a_wrong_kernel_stays_wrong_result_when_the_baseline_agrees():
    p = dict(MATMUL, dtype="float32")
    sch = schedule("test_matmul_drops_term", p, _split_k_outer)
    v = execute(case_for("test_matmul_drops_term", p, trace_to_json(sch.trace))).verdict
    assert v.status is Status.WRONG_RESULT, v.line()
    assert v.details["baseline"] == "build" and v.details["baseline_ratio"] <= 1


@pytest.mark.parametrize("scheduled", [False, True])
def test_a_wrong_reference_is_a_reference_mismatch(scheduled):
    p = dict(MATMUL, dtype="float32")
    trace = trace_to_json(schedule("matmul", p, _rfactor).trace) if scheduled else None
    v = execute(case_for("test_matmul_wrong_reference", p, trace)).verdict
    assert v.status is Status.REFERENCE_MISMATCH, v.line()
    assert v.details["baseline"] == ("build" if scheduled else "self")
    assert "C[0, 0]" in v.message and "not in the schedule" in v.message


@pytest.mark.parametrize("build, mode, expected", [
    (None, "bound", "self"),
    (_split_k_outer, "bound", "build"),
    (_split_k_outer, "exact", "skip"),
    (_rfactor, "bound", "skip"),
])
def test_the_baseline_is_built_only_when_it_can_tell_something(build, mode, expected):
    trace = trace_to_json(schedule("matmul", MATMUL, build).trace) if build else None
    dist = "small_ints" if mode == "exact" else "uniform"
    v = execute(case_for("matmul", MATMUL, trace, mode=mode, distribution=dist),
                baseline="order").verdict
    assert v.status is Status.PASS, v.line()
    assert v.details["baseline"] == expected
    assert ("baseline" in v.timings) is (expected == "build")


@pytest.mark.slow
def test_auto_checks_a_stable_sample_of_the_order_preserving_cases():
    """Where the same-order emulation cannot judge (here: a target kind it has no model for),
    ``auto`` builds the baseline for a stable sample of the order-preserving cases."""
    from fuzzharness.oracles.metamorphic import ORDER_CHECK_SHARE

    trace = trace_to_json(schedule("matmul", MATMUL, _split_k_outer).trace)
    built = []
    for seed in range(24):
        case = case_for("matmul", MATMUL, trace, target={"kind": "test_llvm_last_bit"}).replace(
            inputs={"distribution": "uniform", "seed": seed})
        first = execute(case).verdict.details["baseline"]
        assert execute(case).verdict.details["baseline"] == first  # a replay decides alike
        built.append(first == "build")
    assert 1 <= sum(built) <= 2 * ORDER_CHECK_SHARE * 24, sum(built)


def test_auto_skips_the_baseline_where_the_emulation_judged_every_element():
    trace = trace_to_json(schedule("matmul", MATMUL, _split_k_outer).trace)
    for seed in range(8):
        v = execute(case_for("matmul", MATMUL, trace).replace(
            inputs={"distribution": "uniform", "seed": seed})).verdict
        assert v.status is Status.PASS and v.details["baseline"] == "skip", v.line()
        emulated = [c for c in v.details["checks"] if c["reference"] == "emulation"]
        assert [c["run"] for c in emulated] == ["first", "second"] and all(c["complete"] for c in emulated)
