"""vectorize: the innermost loop (or another) becomes a vector loop."""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register

# Thousands of lanes only test LLVM's patience (minutes per case), not numerics; 64 lanes of
# fp16 are already four 512-bit registers.
MAX_LANES = 64


@register
class Vectorize(Primitive):
    name = "vectorize"
    weight = 3
    covers = ("vectorize",)

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if not loops:
            return None
        # innermost first: index 0 of the drawn offset shrinks to the innermost loop
        offset = state.draw(st.integers(0, len(loops) - 1))
        loop = loops[len(loops) - 1 - offset]
        extent = state.extent(loop)
        if extent is None or extent > MAX_LANES:
            return None
        return lambda: state.sch.vectorize(loop)
