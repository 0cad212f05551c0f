"""reorder: permute loops of one block.

Three kinds of proposals, because they test different things:

``any``         a random subset of the block's loops in a random order;
``interleave``  a reduction loop moved among the spatial loops (outermost, or swapped with a
                spatial loop): per-output accumulation order is unchanged, so on llvm the bits
                must not change — a cheap, sharp oracle in the exact-integer mode;
``reductions``  a permutation of the reduction loops only (needs ≥ 2, e.g. after a split of
                the reduction loop, or a conv/pool window): changes the summation order.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class Reorder(Primitive):
    name = "reorder"
    weight = 4
    covers = ("reorder",)

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if len(loops) < 2:
            return None
        kinds = state.loop_kinds(block)
        spatial = [i for i, k in enumerate(kinds) if k == "S"]
        reduction = [i for i, k in enumerate(kinds) if k == "R"]
        how = state.draw(st.sampled_from(["any", "interleave", "reductions"]))
        if how == "interleave" and spatial and reduction:
            r = state.draw(st.sampled_from(reduction))
            s = state.draw(st.sampled_from(spatial))
            order = sorted({r, s})
            order = [order[1], order[0]]  # swap their positions
        elif how == "reductions" and len(reduction) >= 2:
            order = state.draw(st.permutations(reduction))
        else:
            chosen = state.draw(st.lists(st.sampled_from(range(len(loops))), min_size=2,
                                         max_size=len(loops), unique=True))
            order = state.draw(st.permutations(chosen))
        picked = [loops[i] for i in order]
        return lambda: state.sch.reorder(*picked)
