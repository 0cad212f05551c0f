"""reindex: a read/write stage whose buffer is laid out by the block's own iterators."""

from __future__ import annotations

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class Reindex(Primitive):
    name = "reindex"
    weight = 2
    covers = ("reindex",)

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: bool(b.reads or b.writes))
        if block is None:
            return None
        kind, index = state.pick_access(block)
        return lambda: state.sch.reindex(block, (kind, index))
