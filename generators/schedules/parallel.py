"""parallel: a spatial loop runs on the thread pool (outer loops preferred: nesting fails to build).

Illegal proposals (``base.ILLEGAL_PERCENT``): any loop of the block, reduction loops
included — TVM must refuse a loop bound to a reduction iterator (a parallel sum is a race)."""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class Parallel(Primitive):
    name = "parallel"
    weight = 3
    covers = ("parallel",)

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if not loops:
            return None
        kinds = state.loop_kinds(block)
        spatial = [i for i, k in enumerate(kinds) if k == "S"] or [0]
        if state.illegal():  # any loop: a reduction loop in parallel is a race TVM must refuse
            spatial = list(range(len(loops)))
        i = state.draw(st.sampled_from(spatial))
        return lambda: state.sch.parallel(loops[i])
