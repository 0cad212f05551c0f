"""compute_at / reverse_compute_at: move a producer under a consumer's loop, or the reverse.

Sites are producer/consumer pairs through an intermediate buffer (one some block allocates):
only those blocks can move.  The loop is drawn among the other block's loops, or — as
MetaSchedule does — taken from a ``sample_compute_location`` decision.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


def _pairs(state: ScheduleState) -> list[tuple[str, str]]:
    """(producer, consumer) block names linked by an intermediate buffer, sorted."""
    f = state.facts
    pairs = set()
    for buf in f.intermediates:
        for p in f.producers(buf):
            for c in f.consumers(buf):
                if p != c:
                    pairs.add((p, c))
    return sorted(pairs)


@register
class ComputeAt(Primitive):
    name = "compute_at"
    weight = 3
    covers = ("compute_at", "sample_compute_location")

    def propose(self, state: ScheduleState):
        pairs = _pairs(state)
        if not pairs:
            return None
        producer, consumer = state.draw(st.sampled_from(pairs))
        block = state.sch.get_sblock(producer)
        loops = state.loops(state.sch.get_sblock(consumer))
        how = state.draw(st.sampled_from(["loop", "sampled"]))
        at = state.draw(st.integers(0, max(len(loops) - 1, 0)))
        preserve = state.draw(st.booleans())
        if how == "sampled" or not loops:
            def sampled():
                loc = state.sch.sample_compute_location(block)
                state.sch.compute_at(block, loc, preserve_unit_loops=preserve)

            return sampled
        return lambda: state.sch.compute_at(block, loops[at], preserve_unit_loops=preserve)


@register
class ReverseComputeAt(Primitive):
    name = "reverse_compute_at"
    weight = 3
    covers = ("reverse_compute_at",)

    def propose(self, state: ScheduleState):
        pairs = _pairs(state)
        if not pairs:
            return None
        producer, consumer = state.draw(st.sampled_from(pairs))
        block = state.sch.get_sblock(consumer)
        loops = state.loops(state.sch.get_sblock(producer))
        if not loops:
            return None
        at = state.draw(st.integers(0, len(loops) - 1))
        preserve = state.draw(st.booleans())
        return lambda: state.sch.reverse_compute_at(block, loops[at], preserve_unit_loops=preserve)
