"""unroll: full unrolling of a short loop (the auto-unroll pragmas live in ``pragma``)."""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register

# Full unrolling of long loops only measures LLVM's patience (seconds per case): a 1024-long
# reduction unrolled under a 64-wide one is 65k statements for the optimiser, not a new bug.
# Nested unrolls multiply, hence a budget on the product over the block's loop nest; and
# unrolling an outer loop copies everything inside it, which TVM's and LLVM's own unrollers
# may then unroll further (a 60-wide outer loop over a 256-long fp16 reduction took LLVM more
# than 30 s), hence a budget on the iterations under the unrolled loop.
MAX_FULL_UNROLL = 64
MAX_UNROLLED_PRODUCT = 256
MAX_UNROLLED_WORK = 4096


@register
class Unroll(Primitive):
    name = "unroll"
    weight = 3
    covers = ("unroll",)

    def propose(self, state: ScheduleState):
        from tvm import tirx

        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        extents = [state.extent(lp) for lp in loops]
        unrolled = 1
        for lp, e in zip(loops, extents, strict=True):
            if state.sch.get(lp).kind == tirx.ForKind.UNROLLED:
                unrolled *= e or MAX_UNROLLED_PRODUCT
        def work(i: int) -> int:  # iterations of the block's loops from i inwards
            total = 1
            for e in extents[i:]:
                total *= e or MAX_UNROLLED_WORK
            return total

        short = [lp for i, (lp, e) in enumerate(zip(loops, extents, strict=True))
                 if e is not None and e <= MAX_FULL_UNROLL and e * unrolled <= MAX_UNROLLED_PRODUCT
                 and work(i) <= MAX_UNROLLED_WORK
                 and state.sch.get(lp).kind == tirx.ForKind.SERIAL]
        if not short:
            return None
        loop = state.draw(st.sampled_from(short))
        return lambda: state.sch.unroll(loop)
