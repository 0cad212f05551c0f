"""reindex: a read/write stage whose buffer is laid out by the block's own iterators."""

from __future__ import annotations

from hypothesis import strategies as st

from generators.schedules.base import Primitive, ScheduleState, register


@register
class Reindex(Primitive):
    name = "reindex"
    weight = 2
    covers = ("reindex",)

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: bool(b.reads or b.writes))
        if block is None:
            return None
        facts = state.block_facts(block)
        kinds = [k for k, acc in (("read", facts.reads), ("write", facts.writes)) if acc]
        kind = state.draw(st.sampled_from(kinds))
        n = len(facts.reads if kind == "read" else facts.writes)
        index = state.draw(st.integers(0, n - 1))
        return lambda: state.sch.reindex(block, (kind, index))
