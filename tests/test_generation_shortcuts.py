"""The shortcuts that make random schedules cheaper change nothing a case records.

``benchmarks/case_stream_digest.py`` checks a whole stream (case ids and everything else a
case stores, before and after a change); these tests pin each shortcut's own contract, on
the real TVM: reused facts are never stale, the pipeline repair still finds (and drops) the
annotations it must, and primitives that repair something are still asked to.
"""

from tvm import s_tir

from fuzzharness.generators import draw as draws
from fuzzharness.generators.schedules import (
    ScheduleOptions,
    ScheduleState,
    primitives,
    random_schedule,
)
from fuzzharness.generators.schedules.base import Primitive, Step
from fuzzharness.generators.schedules.pipeline import ORDER, STAGE, pipelined_loops
from fuzzharness.generators.workloads import workloads

MATMUL = {"M": 8, "N": 8, "K": 8, "dtype": "float32"}


def _state() -> ScheduleState:
    func = workloads["matmul"].prim_func(MATMUL)
    return ScheduleState(s_tir.Schedule(func, seed=1), draws.for_case(0, 0, "shortcuts"))


def test_facts_follow_the_function_and_are_reused_only_while_it_is_unchanged():
    state = _state()
    before = state.facts
    assert before.names() == ["C"]

    # a step that changed the function: the next step sees the new block
    state.invalidate()
    state.sch.cache_read(state.sch.get_sblock("C"), 0, "global")
    state.invalidate()
    after = state.facts
    assert after is not before and "A_global" in after.names()

    # a step rolled back: the function is the same object, its analysis is reused
    backup = state.sch.copy()
    state.sch.split(state.loops(state.sch.get_sblock("C"))[0], factors=[None, 2])
    state._restore(backup)
    assert state.facts is after
    # ... and is what a fresh analysis says
    from fuzzharness.generators.schedules.sites import analyse

    assert analyse(state.sch.mod["main"]) == after


def test_pipeline_repair_finds_and_drops_an_annotation_that_does_not_fit():
    state = _state()
    assert pipelined_loops(state) == []
    loop = state.loops(state.sch.get_sblock("C"))[2]
    # one statement in the loop body, two stages: the annotation no longer fits
    state.sch.annotate(loop, STAGE, [0, 1])
    state.sch.annotate(loop, ORDER, [0, 1])
    state.invalidate()
    found = pipelined_loops(state)
    assert [state.sch.get(lp).same_as(state.sch.get(loop)) for lp in found] == [True]
    repairs = primitives["software_pipeline"].finalize(state)
    assert [(s.primitive, s.outcome) for s in repairs] == [("software_pipeline", "dropped")]
    assert STAGE not in state.sch.get(loop).annotations
    state.invalidate()
    assert pipelined_loops(state) == []


def test_a_primitive_that_repairs_is_still_asked_to():
    asked = []

    class Repairs(Primitive):
        name = "zz_repairs"

        def propose(self, state):
            return None

        def finalize(self, state):
            asked.append(state.facts.names())
            return [Step(self.name, "dropped", "test")]

    primitives.add(Repairs.name, Repairs())
    try:
        func = workloads["matmul"].prim_func(MATMUL)
        _, steps = random_schedule(func, draws.for_case(0, 1, "shortcuts"),
                                   ScheduleOptions(max_steps=2))
    finally:
        del primitives._items[Repairs.name]
    assert len(asked) == 1 and steps[-1].primitive == Repairs.name


def test_generation_skips_tvms_argument_check_only_inside_and_draws_the_same_cases(monkeypatch):
    """``unchecked_schedule_calls`` (tvm_support): inside, a wrongly typed argument reaches the
    FFI unchecked; outside — after it, and nested ones included — TVM's own check is back.
    A method someone else replaced stays theirs, inside and after.  The cases drawn with it
    are the cases drawn with TVM's checks on."""
    import pytest

    from fuzzharness.core.case import canonical_json
    from fuzzharness.core.tvm_support import unchecked_schedule_calls
    from fuzzharness.generators.cases import GenSettings, _draw_case, draw_case

    sch = s_tir.Schedule(workloads["matmul"].prim_func(MATMUL))
    checked_message = 'In "Schedule.get_sblock"'
    with pytest.raises(TypeError, match=checked_message):  # TVM's Python-side check
        sch.get_sblock(7)
    with unchecked_schedule_calls():
        with unchecked_schedule_calls():
            pass
        with pytest.raises(Exception) as inside:  # still inside the outer block
            sch.get_sblock(7)
        assert checked_message not in str(inside.value)
    with pytest.raises(TypeError, match=checked_message):
        sch.get_sblock(7)

    def theirs(self, *loops):
        return "theirs"

    monkeypatch.setattr(s_tir.Schedule, "fuse", theirs)
    with unchecked_schedule_calls():
        assert sch.fuse() == "theirs"
        with pytest.raises(Exception) as inside:
            sch.get_sblock(7)
        assert checked_message not in str(inside.value)
    assert sch.fuse() == "theirs"
    monkeypatch.undo()

    settings = GenSettings(graph_fraction=0.0)
    same = 0
    for i in range(12):
        cases = []
        for draw in (draw_case, _draw_case):  # unchecked, then TVM's checks on
            try:
                cases.append(canonical_json(draw(draws.for_case(5, i), settings).to_dict()))
            except Exception as e:  # noqa: BLE001 - a schedule TVM refuses: the same refusal
                cases.append(type(e).__name__)
        assert cases[0] == cases[1], i
        same += not cases[0].isidentifier()
    assert same >= 8
