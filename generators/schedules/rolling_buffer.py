"""rolling_buffer: a stencil's producer keeps only a sliding window of rows.

Sites: a producer of an intermediate buffer whose consumer reads it through composite
indices (a window).  If the producer is not yet under one of the consumer's loops, the idiom
first computes it at a drawn loop of the consumer (rolling_buffer needs the two to share a
loop); the compute_at is attempted and the step proceeds either way.
"""

from __future__ import annotations

from hypothesis import strategies as st

from generators.schedules.base import Primitive, ScheduleState, register


@register
class RollingBuffer(Primitive):
    name = "rolling_buffer"
    weight = 3
    covers = ("rolling_buffer", "compute_at")

    def propose(self, state: ScheduleState):
        f = state.facts
        sites = []
        for buf in sorted(f.intermediates):
            for c in f.consumers(buf):
                if not f.blocks[c].composite_index:
                    continue
                for p in f.producers(buf):
                    if p != c:
                        index = [w.buffer for w in f.blocks[p].writes].index(buf)
                        sites.append((p, c, index))
        if not sites:
            return None
        p, c, index = state.draw(st.sampled_from(sites))
        consumer_loops = state.loops(state.sch.get_sblock(c))
        at = state.draw(st.integers(0, max(len(consumer_loops) - 1, 0)))
        move = state.draw(st.booleans())

        def apply():
            producer = state.sch.get_sblock(p)
            if move and consumer_loops:
                state.attempt(lambda: state.sch.compute_at(producer, consumer_loops[at]))
            state.sch.rolling_buffer(producer, index)

        return apply
