"""Steering (generators/steering.py): weights change which value a draw maps to, never how
many draws a case makes; and the steered vectorize idiom puts real vector stores in the
lowered program."""

from __future__ import annotations

import pytest

from fuzzharness.generators import draw as draws
from fuzzharness.generators.steering import PARAMETER_WEIGHTS, weighted

ADD = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((6, {n}), "float16"), B: T.Buffer((6, {n}), "float16")):
    for i, j in T.grid(6, {n}):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float16(1)
"""


def test_weighted_repeats_values_in_order(monkeypatch):
    monkeypatch.setitem(PARAMETER_WEIGHTS, "p", {"b": 3})
    monkeypatch.setitem(PARAMETER_WEIGHTS, "p@x", {"a": 2})
    assert weighted("p", ["a", "b", "c"]) == ["a", "b", "b", "b", "c"]
    assert weighted("p", ["a", "b"], "x") == ["a", "a", "b"]
    assert weighted("p", ["a", "b"], "y") == ["a", "b", "b", "b"]  # no p@y: p's weights
    assert weighted("p", ["a", "bb"], key=len) == ["a", "bb"]
    assert weighted("unknown", [1, 2]) == [1, 2]


@pytest.mark.parametrize("name", ["vectorize", "cache_write", "split", "parallel"])
def test_a_steered_step_draws_the_same_whether_enabled_or_not(name):
    """The draw-count rule with the steered weights and idioms: a step of ``name`` makes the
    same draws enabled (applied) and disabled (proposed, not applied), so switching it off
    does not reshuffle the draws of the steps before it."""
    from tvm import s_tir

    from fuzzharness.generators.schedules.base import ScheduleOptions, ScheduleState, _step
    from fuzzharness.generators.workloads import GenOptions, workloads

    applied = 0
    for i in range(10):
        params = workloads["matmul"].draw_params(draws.for_case(3, i, "params"), GenOptions())
        func = workloads["matmul"].prim_func(params)
        counts, outcomes = [], []
        for enabled in (True, False):
            data = draws.for_case(3, i, name)
            state = ScheduleState(s_tir.Schedule(func), data, ScheduleOptions())
            outcomes.append(_step(state, name, enabled).outcome)
            counts.append(len(data.choices))
        assert counts[0] == counts[1], (i, outcomes)
        assert outcomes[1] in ("disabled", "no_site")
        applied += outcomes[0] == "accepted"
    assert applied >= 3


@pytest.mark.parametrize("n,partition,vector", [(24, False, True), (29, True, True),
                                                (29, False, False)])
def test_vector_lanes_idiom_gives_vector_stores(n, partition, vector):
    """Split by 8 lanes (a remainder partitioned off where the lanes do not divide the extent)
    gives float16x8 stores in the lowered code; a predicated tail without the partition is
    scalarised — which is why the idiom partitions."""
    from tvm import s_tir

    from fuzzharness.backends import backends
    from fuzzharness.core.tvm_support import parse_prim_func
    from fuzzharness.execution.census import census
    from fuzzharness.generators.schedules.base import ScheduleOptions, ScheduleState
    from fuzzharness.generators.schedules.vectorize import _vector_lanes

    sch = s_tir.Schedule(parse_prim_func(ADD.format(n=n)))
    state = ScheduleState(sch, draws.for_case(0, 0, "steering"), ScheduleOptions())
    block = sch.get_sblock("B")
    _, j = sch.get_loops(block)
    _vector_lanes(state, block, j, n, 8, partition, outer=True)
    lowered = backends["llvm"].lower(state.sch.mod, {"kind": "llvm"}, {})
    got = census(state.sch.mod, lowered)
    assert ("vector_store:float16x8" in got) is vector
    if partition:
        assert "loop_partition" in str(state.sch.trace)
