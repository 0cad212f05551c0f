"""split: one loop into two or three, with perfect, non-divisible or sampled factors.

Non-divisible factors are the point: they make TVM emit predicated tails, where off-by-one
bugs live.  Factors are drawn small-first (they shrink towards 1) but may be any value up to
the extent.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class Split(Primitive):
    name = "split"
    weight = 4
    covers = ("split", "sample_perfect_tile")

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if not loops:
            return None
        loop = state.draw(st.sampled_from(loops))
        extent = state.extent(loop) or 1
        how = state.draw(st.sampled_from(["factor", "sampled", "three", "outer"]))
        factor = state.draw(st.integers(1, max(extent, 1)) | st.sampled_from([2, 4, 8, 16, 3]))
        inner = state.draw(st.integers(1, 8))
        if how == "factor":  # any factor: non-divisible extents give predicated tails
            return lambda: state.sch.split(loop, factors=[None, factor])
        if how == "outer":  # the outer extent fixed instead: the tail moves inside
            return lambda: state.sch.split(loop, factors=[factor, None])
        if how == "three":
            return lambda: state.sch.split(loop, factors=[None, factor, inner])

        def sampled():
            tiles = state.sch.sample_perfect_tile(loop, n=2, max_innermost_factor=16)
            state.sch.split(loop, factors=tiles)

        return sampled
