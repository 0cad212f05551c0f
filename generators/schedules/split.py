"""split: one loop into two or three, with perfect, non-divisible or sampled factors."""

from __future__ import annotations

from hypothesis import strategies as st

from generators.schedules.base import Primitive, ScheduleState, register


@register
class Split(Primitive):
    name = "split"

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if not loops:
            return None
        loop = state.draw(st.sampled_from(loops))
        extent = state.extent(loop)
        how = state.draw(st.sampled_from(["factor", "sampled", "three"]))
        factor = state.draw(st.integers(1, max(extent, 1)) | st.sampled_from([2, 4, 8, 16, 3]))
        inner = state.draw(st.integers(1, 8))
        sch = state.sch
        if how == "factor":  # any factor: non-divisible extents give predicated tails
            return lambda: sch.split(loop, factors=[None, factor])
        if how == "three":
            return lambda: sch.split(loop, factors=[None, factor, inner])

        def sampled():
            tiles = sch.sample_perfect_tile(loop, n=2, max_innermost_factor=16)
            sch.split(loop, factors=tiles)

        return sampled
