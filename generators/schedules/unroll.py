"""unroll: full unrolling of a loop, or the auto-unroll pragmas on an outer loop."""

from __future__ import annotations

from hypothesis import strategies as st

from generators.schedules.base import Primitive, ScheduleState, register

MAX_FULL_UNROLL = 64


@register
class Unroll(Primitive):
    name = "unroll"

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if not loops:
            return None
        loop = state.draw(st.sampled_from(loops))
        # Full unrolling of long loops only measures LLVM's patience (seconds per case).
        if state.extent(loop) > MAX_FULL_UNROLL:
            return None
        how = state.draw(st.sampled_from(["unroll", "pragma"]))
        max_step = state.draw(st.sampled_from([0, 16, 64, 512]))
        explicit = state.draw(st.booleans())
        sch = state.sch
        if how == "unroll":
            return lambda: sch.unroll(loop)

        def pragma():
            sch.annotate(loop, "pragma_auto_unroll_max_step", max_step)
            sch.annotate(loop, "pragma_unroll_explicit", int(explicit))

        return pragma
