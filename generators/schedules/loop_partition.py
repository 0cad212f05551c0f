"""loop_partition: a loop cut into consecutive loops (constant pieces or a sampled partition).

Known TVM bug, proposed only in ``KNOWN_SITE_PERMILLE`` ‰ of the draws
(always with ``known_bug_sites``; ``base.ScheduleState.known_site``): partitioning a loop whose body holds
more than one block (e.g. a cache stage computed at it) segfaults inside
``tvm::s_tir::LoopPartition`` — a crash that takes the worker down.  Repro: cache_write the
matmul block, reverse_compute_at the copy under loop ``j``, ``loop_partition(j, [10, None])``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class LoopPartition(Primitive):
    name = "loop_partition"
    weight = 3
    covers = ("loop_partition", "sample_partitioned_tile")

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        known = state.known_site()
        loops = [lp for lp in state.loops(block) if (state.extent(lp) or 0) >= 2
                 and (known or len(state.sch.get_child_blocks(lp)) == 1)]
        if not loops:
            return None
        loop = state.draw(st.sampled_from(loops))
        extent = state.extent(loop)
        how = state.draw(st.sampled_from(["two", "three", "sampled"]))
        a = state.draw(st.integers(1, extent - 1))
        b = state.draw(st.integers(1, max(extent - 1 - a, 1)))  # a + b < extent: three pieces
        if how == "two" or (how == "three" and a + b >= extent):
            factors = state.draw(st.sampled_from([[None, a], [a, None]]))
            return lambda: state.sch.loop_partition(loop, factors=factors)
        if how == "three":
            return lambda: state.sch.loop_partition(loop, factors=[a, b, None])
        n = state.draw(st.integers(2, 3))
        pos = state.draw(st.integers(0, n - 1))
        inner = state.draw(st.sampled_from([1, 2, 4, 8, 16]))

        def sampled():
            tiles = state.sch.sample_partitioned_tile(loop, n=n, partition_pos=pos,
                                                      innerpart_factor=inner)
            state.sch.loop_partition(loop, factors=tiles)

        return sampled
