"""compute_at / reverse_compute_at: move a producer under a consumer's loop, or the reverse.

Sites are producer/consumer pairs through an intermediate buffer (one some block allocates):
only those blocks can move.  The loop is drawn among the other block's loops, or — as
MetaSchedule does — taken from a ``sample_compute_location`` decision.

**Illegal proposals.**  In :data:`WILD_PERCENT` % of the proposals the pair is drawn from
*every* ordered pair of distinct blocks instead: a block moved under the loop of one it
has no dataflow with, of its own consumer's consumer, or of its producer's producer — moves
that break a dependence or have no meaning.  TVM must refuse them with a ``ScheduleError``
(a refused step, not a finding); one it accepts is compiled and judged like any other
schedule, so a miscompiled acceptance is the finding "TVM accepts an illegal schedule".
The flag is always drawn, so the number of draws of a proposal does not depend on it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import (
    ILLEGAL_PERCENT,
    Primitive,
    ScheduleState,
    register,
)

#: share of compute_at / reverse_compute_at proposals drawn from every pair of blocks
WILD_PERCENT = ILLEGAL_PERCENT  # 25, like every illegal proposal (base.py)


def _sites(state: ScheduleState) -> list[tuple[str, str]]:
    """The pairs of this proposal: dataflow pairs, or — drawn first, always — every ordered
    pair of distinct blocks (see the module docstring)."""
    wild = state.illegal(WILD_PERCENT)  # the same draw as ever: st.integers(0, 99)
    if wild:
        names = state.facts.names()
        return [(a, b) for a in names for b in names if a != b]
    return _pairs(state)


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
        pairs = _sites(state)
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
        pairs = _sites(state)
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
