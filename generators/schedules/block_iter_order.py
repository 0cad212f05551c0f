"""reorder_block_iter_var: permute a block's iterators (its signature, not its loops)."""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class ReorderBlockIterVar(Primitive):
    name = "reorder_block_iter_var"
    covers = ("reorder_block_iter_var",)

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: len(b.iter_kinds) >= 2)
        if block is None:
            return None
        n = len(state.block_facts(block).iter_kinds)
        order = state.draw(st.permutations(range(n)))
        return lambda: state.sch.reorder_block_iter_var(block, list(order))
