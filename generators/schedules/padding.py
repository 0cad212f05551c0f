"""pad_einsum (pad an einsum block's iteration space) and decompose_padding (split a padding
block into a constant fill and an in-bounds copy).

``decompose_padding`` sites are found by asking TVM (``can_decompose_padding``) for every
block and loop: padding blocks come from the workloads (conv2d's pad) or from an earlier
``pad_einsum``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register

PAD_FACTORS = (1, 2, 4, 8, 16)


@register
class PadEinsum(Primitive):
    name = "pad_einsum"
    weight = 3
    covers = ("pad_einsum",)

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: bool(b.iter_kinds) and not b.composite_index)
        if block is None:
            return None
        n = len(state.block_facts(block).iter_kinds)
        padding = state.draw(st.lists(st.sampled_from(PAD_FACTORS), min_size=n, max_size=n))
        return lambda: state.sch.pad_einsum(block, padding)


@register
class DecomposePadding(Primitive):
    name = "decompose_padding"
    weight = 3
    covers = ("decompose_padding", "can_decompose_padding")

    def propose(self, state: ScheduleState):
        sites = []
        for name in state.facts.names(lambda b: b.composite_index or not b.is_reduction):
            block = state.sch.get_sblock(name)
            for i, lp in enumerate(state.loops(block)):
                if state.sch.can_decompose_padding(block, lp):
                    sites.append((name, i))
        if not sites:
            return None
        name, i = state.draw(st.sampled_from(sites))

        def apply():
            block = state.sch.get_sblock(name)
            state.sch.decompose_padding(block, state.sch.get_loops(block)[i])

        return apply
