"""rolling_buffer: a stencil's producer keeps only a sliding window of rows.

Sites: a producer of an intermediate buffer whose consumer reads it through composite
indices (a window).  The idiom (as in TVM's own examples) first tiles a drawn loop of the
consumer (split by a small factor) and computes the producer at the outer tile loop — the
rows a tile needs overlap the previous tile's, which is what a rolling buffer keeps; each
of these steps is attempted, and rolling_buffer is applied either way.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class RollingBuffer(Primitive):
    name = "rolling_buffer"
    weight = 3
    covers = ("rolling_buffer", "split", "compute_at")

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
        consumer = state.sch.get_sblock(c)
        # the spatial loops: the window (reduction) loops cannot carry a rolling tile
        consumer_loops = [lp for lp, k in zip(state.loops(consumer), state.loop_kinds(consumer),
                                              strict=True) if k == "S"]
        at = state.draw(st.integers(0, max(len(consumer_loops) - 1, 0)))
        tile = state.draw(st.sampled_from([None, 2, 3, 4]))

        def apply():
            producer = state.sch.get_sblock(p)
            if consumer_loops:
                loop = consumer_loops[at]
                if tile is not None:
                    def split():
                        nonlocal loop
                        loop = state.sch.split(loop, factors=[None, tile])[0]
                    state.attempt(split)
                state.attempt(lambda: state.sch.compute_at(producer, loop))
            state.sch.rolling_buffer(producer, index)

        return apply
