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
