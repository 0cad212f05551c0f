"""fuse: consecutive loops of one block into one (same-kind runs preferred: S with S, R with R)."""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class Fuse(Primitive):
    name = "fuse"
    weight = 3
    covers = ("fuse",)

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if len(loops) < 2:
            return None
        kinds = state.loop_kinds(block)
        runs = [i for i in range(len(loops) - 1) if kinds[i] == kinds[i + 1]]
        same_kind = state.draw(st.booleans()) and bool(runs)
        if same_kind:
            start = state.draw(st.sampled_from(runs))
            end = start + 2
            while end < len(loops) and kinds[end] == kinds[start] and state.draw(st.booleans()):
                end += 1
        else:
            start = state.draw(st.integers(0, len(loops) - 2))
            end = start + state.draw(st.integers(2, len(loops) - start))
        picked = loops[start:end]
        if state.illegal():  # loops that need not be consecutive: TVM must refuse a gap
            chosen = state.draw(st.lists(st.sampled_from(range(len(loops))), min_size=2,
                                         max_size=len(loops), unique=True))
            picked = [loops[i] for i in sorted(chosen)]
        return lambda: state.sch.fuse(*picked)
