"""decompose_reduction and rfactor: the two ways to restructure a reduction block.

``decompose_reduction`` moves the init out in front of a loop at or above the outermost
reduction loop (an illegal proposal, ``base.ILLEGAL_PERCENT``: any loop of the block, which
TVM must refuse below the outermost reduction loop).  ``rfactor`` turns a reduction loop into a data-parallel dimension of a new
partial-sum buffer (at a drawn position), then sums it: the summation order changes, within
the error bound; in the exact-integer mode the bits must not.

**Illegal proposals.**  In :data:`RFACTOR_WILD_PERCENT` % of the rfactor proposals the loop
is drawn among *every* loop of the reduction block: a loop a data-parallel iterator is bound
to, which TVM must refuse (a ``ScheduleError``: a refused step, not a finding), or a unit loop
no iterator is bound to (``add_unit_loop``), which TVM accepts and which is then compiled and
judged like any schedule.  The flag is always drawn, so the number of draws of a proposal
does not depend on it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import (
    ILLEGAL_PERCENT,
    Primitive,
    ScheduleState,
    register,
)

#: share of rfactor proposals drawn among every loop of the block (see the module docstring)
RFACTOR_WILD_PERCENT = ILLEGAL_PERCENT  # 25, like every illegal proposal (base.py)


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
        # illegal proposal (base.ILLEGAL_PERCENT): a loop below the outermost reduction loop
        last = len(loops) - 1 if state.illegal() else kinds.index("R")
        at = state.draw(st.integers(0, last))
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
        wild = state.illegal(RFACTOR_WILD_PERCENT)
        loops = state.loops(block)
        kinds = state.loop_kinds(block)
        reduction = [lp for lp, k in zip(loops, kinds, strict=True) if k == "R"]
        if not reduction:
            return None
        loop = state.draw(st.sampled_from(list(loops) if wild else reduction))
        ndim = state.block_facts(block).writes[0].ndim
        axis = state.draw(st.integers(0, ndim))
        return lambda: state.sch.rfactor(loop, axis)
