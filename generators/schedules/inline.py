"""compute_inline / reverse_compute_inline: a producer folded into its consumers, or the reverse.

Illegal proposals (``base.ILLEGAL_PERCENT``): any block — an output block, a reduction, a
consumer of two producers — which TVM must refuse with a ScheduleError."""

from __future__ import annotations

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class ComputeInline(Primitive):
    name = "compute_inline"
    weight = 3
    covers = ("compute_inline",)

    def propose(self, state: ScheduleState):
        f = state.facts
        legal = None if state.illegal() else (lambda b: f.writes_intermediate(b) and not b.is_reduction)
        block = state.pick_block(legal)
        if block is None:
            return None
        return lambda: state.sch.compute_inline(block)


@register
class ReverseComputeInline(Primitive):
    name = "reverse_compute_inline"
    weight = 3
    covers = ("reverse_compute_inline",)

    def propose(self, state: ScheduleState):
        f = state.facts

        def site(b) -> bool:
            # TVM inlines a consumer only into a single, complete (non-reduction) producer
            producers = {p for r in b.reads if r.buffer in f.intermediates
                         for p in f.producers(r.buffer) if p != b.name}
            return (not b.is_reduction and len(producers) == 1
                    and not f.blocks[producers.pop()].is_reduction)

        block = state.pick_block(None if state.illegal() else site)
        if block is None:
            return None
        return lambda: state.sch.reverse_compute_inline(block)
