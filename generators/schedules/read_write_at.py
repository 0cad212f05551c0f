"""read_at / write_at: copy a block's read (write) region into a new buffer at one of its loops."""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register

SCOPES = ("global", "local")


@register
class ReadWriteAt(Primitive):
    name = "read_write_at"
    weight = 2
    covers = ("read_at", "write_at")

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: bool(b.reads or b.writes))
        if block is None:
            return None
        loops = state.loops(block)
        if not loops:
            return None
        kind, index = state.pick_access(block)
        loop = state.draw(st.sampled_from(loops))
        scope = state.draw(st.sampled_from(SCOPES))
        if kind == "read":
            return lambda: state.sch.read_at(loop, block, index, scope)
        return lambda: state.sch.write_at(loop, block, index, scope)
