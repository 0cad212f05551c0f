"""fuse: consecutive loops of one block into one."""

from __future__ import annotations

from hypothesis import strategies as st

from generators.schedules.base import Primitive, ScheduleState, register


@register
class Fuse(Primitive):
    name = "fuse"

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if len(loops) < 2:
            return None
        start = state.draw(st.integers(0, len(loops) - 2))
        count = state.draw(st.integers(2, len(loops) - start))
        picked = loops[start : start + count]
        return lambda: state.sch.fuse(*picked)
