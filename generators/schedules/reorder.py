"""reorder: permute loops of one block — spatial×reduction interleavings and reduction permutations."""

from __future__ import annotations

from hypothesis import strategies as st

from generators.schedules.base import Primitive, ScheduleState, register


@register
class Reorder(Primitive):
    name = "reorder"

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if len(loops) < 2:
            return None
        chosen = state.draw(st.lists(st.sampled_from(range(len(loops))), min_size=2, max_size=len(loops), unique=True))
        order = state.draw(st.permutations(chosen))
        picked = [loops[i] for i in order]
        return lambda: state.sch.reorder(*picked)
