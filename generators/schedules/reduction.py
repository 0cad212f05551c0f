"""decompose_reduction and rfactor: the two ways to restructure a reduction block.

``decompose_reduction`` moves the init out in front of a loop at or above the outermost
reduction loop.  ``rfactor`` turns a reduction loop into a data-parallel dimension of a new
partial-sum buffer (at a drawn position), then sums it: the summation order changes, within
the error bound; in the exact-integer mode the bits must not.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class DecomposeReduction(Primitive):
    name = "decompose_reduction"
    weight = 3
    covers = ("decompose_reduction",)

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: b.has_init)
        if block is None:
            return None
        loops = state.loops(block)
        kinds = state.loop_kinds(block)
        if "R" not in kinds:
            return None
        at = state.draw(st.integers(0, kinds.index("R")))
        return lambda: state.sch.decompose_reduction(block, loops[at])


@register
class RFactor(Primitive):
    name = "rfactor"
    weight = 3
    covers = ("rfactor",)

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: b.has_init)
        if block is None:
            return None
        loops = state.loops(block)
        kinds = state.loop_kinds(block)
        reduction = [lp for lp, k in zip(loops, kinds, strict=True) if k == "R"]
        if not reduction:
            return None
        loop = state.draw(st.sampled_from(reduction))
        ndim = state.block_facts(block).writes[0].ndim
        axis = state.draw(st.integers(0, ndim))
        return lambda: state.sch.rfactor(loop, axis)
