"""add_unit_loop: a new extent-1 loop above a block or a loop (shapes that later steps meet)."""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class AddUnitLoop(Primitive):
    name = "add_unit_loop"
    covers = ("add_unit_loop",)

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        target = state.draw(st.sampled_from([block, *loops]))
        return lambda: state.sch.add_unit_loop(target)
