"""fuse_reduction_epilogue meets reductions whose identity is not 0 (reduce_epilogue: max and
min followed by ``+ bias``).  Both sides, on the real TVM: folding the bias into a *sum*'s init
is legal and passes; TVM 0.27 also accepts folding it into a *max*'s or *min*'s init, which
computes ``max(bias, A…)`` instead of ``max(A…) + bias`` — a wrong result the harness
reports (the known bug fuse-reduction-epilogue-into-max-min)."""

from __future__ import annotations

import pytest

from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import trace_to_json
from fuzzharness.core.verdict import Status
from fuzzharness.execution.stages import execute
from fuzzharness.generators import draw as draws
from fuzzharness.generators.schedules.base import ScheduleOptions, ScheduleState
from fuzzharness.generators.schedules.fuse_epilogue import FuseReductionEpilogue
from fuzzharness.generators.workloads import workloads


def fused_case(op: str) -> Case:
    from tvm import s_tir

    p = {"M": 2, "N": 4, "op": op, "steps": [{"op": "add", "arg": "bias"}], "dtype": "float32"}
    sch = s_tir.Schedule(workloads["reduce_epilogue"].prim_func(p))
    state = ScheduleState(sch, draws.for_case(0, 0, "fuse"), ScheduleOptions(known_site_permille=0))
    apply = FuseReductionEpilogue().propose(state)  # the generator finds the site itself
    assert apply is not None, op
    apply()
    return Case(workload={"name": "reduce_epilogue", "params": p},
                inputs={"distribution": "normal", "seed": 1},
                schedule={"source": "hand", "trace": trace_to_json(sch.trace)},
                target={"kind": "llvm"}, pass_config={})


@pytest.mark.parametrize("op, status", [("sum", Status.PASS), ("max", Status.WRONG_RESULT),
                                        ("min", Status.WRONG_RESULT)])
def test_fusing_a_bias_into_a_reduction_init_is_judged_by_its_identity(op, status):
    v = execute(fused_case(op)).verdict
    assert v.status is status, v.line()


def test_the_known_max_min_fold_is_not_claimed_for_another_fuse_reduction_epilogue_bug():
    """Two other bugs of the 30-minute campaign (seed 13) also go wrong at
    fuse_reduction_epilogue on a reduction site of a *sum*: a dense's loop_partition piece
    gets the bias folded in (the epilogue covers every column, the piece only the first),
    and an fp16 output cast pushed into an fp32 accumulation.  Neither is the max/min entry
    (its site is a reduction whose combiner is not +)."""
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.root_causes import RootCause
    from fuzzharness.buckets.signatures import Signature

    known = KnownBugs.load()

    def classify(workload, prims, site):
        sig = Signature("wrong_result", "verify", workload=workload, dtype="float32",
                        primitives=prims)
        rc = RootCause("wrong_output", "verify", prims, step="fuse_reduction_epilogue", step_site=site)
        m = known.classify(sig, "0.27.0", rc)
        return m.bug.id if m else None

    fold = ("fuse_reduction_epilogue",)
    assert classify("reduce_epilogue", fold, ("site_reduction", "site_reduction_not_sum")) == \
        "fuse-reduction-epilogue-into-max-min"
    assert classify("dense", fold + ("loop_partition",),
                    ("site_dependence_hidden", "site_nested", "site_reduction")) is None
    assert classify("dense", fold, ("site_reduction",)) is None  # the fp16 cast
    assert classify("reduce_epilogue", fold, ("site_reduction",)) is None  # a sum: legal


def fused_dense(label: str, k: int) -> tuple[Case, object, object]:
    """A dense ``Y = X @ Wᵀ + bias`` (1×2×k) with the bias folded into the reduction's init:
    the case, the declared program and the scheduled one."""
    from tvm import s_tir

    p = {"M": 1, "N": 2, "K": k, "relu": False, "dtype": label}
    func = workloads["dense"].prim_func(p)
    sch = s_tir.Schedule(func)
    state = ScheduleState(sch, draws.for_case(0, 0, "fuse"), ScheduleOptions(known_site_permille=0))
    FuseReductionEpilogue().propose(state)()
    case = Case(workload={"name": "dense", "params": p}, inputs={"distribution": "normal", "seed": 1},
                schedule={"source": "hand", "trace": trace_to_json(sch.trace)},
                target={"kind": "llvm"}, pass_config={})
    return case, func, sch.mod["main"]


def test_a_bias_folded_into_a_bfloat16_output_accumulates_as_declared():
    """Both sides of what the fold may do to the accumulator.  bfloat16 dense: ``D`` is
    declared bfloat16, and TVM keeps an internal bfloat16 buffer in float32; folded, the sum
    accumulates in the bfloat16 output ``Y`` — the declared dtype, so legal (before, the
    float32 bound reported it: input seed 5, error/bound 1.14).  float16 inputs with a float32
    accumulator and a float16 output: folded, the float32 accumulator is gone, and that stays
    a wrong result (the bug fuse_reduction_epilogue's fp16 cast)."""
    import dataclasses

    from fuzzharness.oracles.program import Numerics

    case, func, fused = fused_dense("bfloat16", 3)
    assert Numerics(func).accumulation_dtype("dense") == "float32"
    assert Numerics(func, None, func).accumulation_dtype("dense") == "float32"  # not folded
    assert Numerics(func, None, fused).accumulation_dtype("dense") == "bfloat16"
    for seed in range(1, 9):
        c = dataclasses.replace(case, inputs={"distribution": "normal", "seed": seed})
        v = execute(c).verdict
        assert v.status is Status.PASS, (seed, v.line())

    case, func, fused = fused_dense("float16-acc32-out16", 64)
    assert Numerics(func, None, fused).accumulation_dtype("dense") == "float32"
    v = execute(case).verdict
    assert v.status is Status.WRONG_RESULT, v.line()


def test_a_folded_bias_is_judged_as_one_more_term_of_the_sum():
    """Both sides of the bound for ``Y = bias + Σ x·w`` (the fold, legal) at K=3, where the
    bias is most of each partial sum.  Folded float16 dense and float16-acc32 fused epilogues:
    the inputs the unfolded bound ``γΣ|t| + u|D + b|`` reported (error/bound 1.08-1.56, the
    false alarms) pass.  float16-acc32-out16 folded: the float32 accumulator becomes the
    float16 output, and two inputs at error/bound 1.59 and 1.66 stay wrong results."""
    import dataclasses

    from tvm import s_tir

    from fuzzharness.oracles.program import Numerics

    case, func, fused = fused_dense("float16", 3)
    assert Numerics(func, None, fused).folds("dense", "add_0")
    assert not Numerics(func, None, func).folds("dense", "add_0")  # an unfolded schedule
    assert not Numerics(func).folds("dense", "add_0")  # the scheduled program not known
    for f in (fused, func):  # decomposed: the init moves to dense_init, the sum to dense_update
        sch = s_tir.Schedule(f)
        sch.decompose_reduction(sch.get_sblock("dense"), sch.get_loops(sch.get_sblock("dense"))[2])
        assert Numerics(func, None, sch.mod["main"]).folds("dense", "add_0") is (f is fused)
    # no fold: an epilogue inlined into a unit reduction whose reduction axis is gone (how
    # dlight does it: the known bug transform-block-layout-keeps-init-without-reduction)
    q = {"M": 2, "N": 2, "K": 1, "steps": [{"op": "add", "arg": "bias"}], "dtype": "float32"}
    sch = s_tir.Schedule(workloads["fused_epilogue"].prim_func(q))
    sch.transform_block_layout(sch.get_sblock("C"), lambda i, j, k: (i, j))
    sch.reverse_compute_inline(sch.get_sblock("add_0"))
    assert not Numerics(workloads["fused_epilogue"].prim_func(q), None,
                        sch.mod["main"]).folds("C", "add_0")
    for dist, seed in (("normal", 7), ("normal", 18), ("wide_range", 2), ("wide_range", 20)):
        v = execute(dataclasses.replace(case, inputs={"distribution": dist, "seed": seed})).verdict
        assert v.status is Status.PASS, (dist, seed, v.line())

    p = {"M": 2, "N": 2, "K": 2, "steps": [{"op": "add", "arg": "bias"}], "dtype": "float16-acc32"}
    sch = s_tir.Schedule(workloads["fused_epilogue"].prim_func(p))
    state = ScheduleState(sch, draws.for_case(0, 0, "fuse"), ScheduleOptions(known_site_permille=0))
    FuseReductionEpilogue().propose(state)()
    case = Case(workload={"name": "fused_epilogue", "params": p}, inputs={},
                schedule={"source": "hand", "trace": trace_to_json(sch.trace)},
                target={"kind": "llvm"}, pass_config={})
    for dist, seed in (("wide_range", 2), ("wide_range", 13), ("normal", 39)):
        v = execute(dataclasses.replace(case, inputs={"distribution": dist, "seed": seed})).verdict
        assert v.status is Status.PASS, (dist, seed, v.line())

    case, func, fused = fused_dense("float16-acc32-out16", 3)
    for seed in (2, 3):
        v = execute(dataclasses.replace(case, inputs={"distribution": "wide_range", "seed": seed})).verdict
        assert v.status is Status.WRONG_RESULT, (seed, v.line())
