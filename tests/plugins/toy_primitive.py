"""A schedule primitive registered from outside the package (tests/test_plugins.py).

``toy_mark`` annotates one loop of a block with a pragma TVM ignores: a legal, inert step, so
every case it is drawn in must still pass — and its trace shows that the plugin was drawn.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class ToyMark(Primitive):
    name = "toy_mark"
    weight = 1
    covers = ("annotate",)

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if not loops:
            return None
        loop = state.draw(st.sampled_from(loops))
        return lambda: state.sch.annotate(loop, "toy_mark", 1)
