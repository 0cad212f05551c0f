"""Intermediate-buffer storage: storage_align, set_scope, unsafe_set_dtype.

All three act on buffers some block allocates (TVM refuses parameters).

``unsafe_set_dtype`` is proposed only as a *widening* of a floating-point intermediate
(float16/bfloat16 → float32, float32 → float64).  TVM inserts casts at every access, so every
value the original program stores is still exactly representable: the widened program is at
least as accurate and stays within the original's error bound (copies and max/min stay
bit-exact).  Narrowing, or widening integers (which would remove a wrap-around the reference
models), changes the program's meaning and is not a compiler bug when results differ.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register

SCOPES = ("global", "local")
WIDER = {"float16": "float32", "bfloat16": "float32", "float32": "float64"}


def _intermediate_writes(state: ScheduleState):
    """(block name, write index, access) for every write of an intermediate buffer."""
    f = state.facts
    return [(n, i, w) for n in f.names() for i, w in enumerate(f.blocks[n].writes)
            if w.buffer in f.intermediates]


@register
class StorageAlign(Primitive):
    name = "storage_align"
    weight = 3
    covers = ("storage_align",)

    def propose(self, state: ScheduleState):
        sites = _intermediate_writes(state)
        if not sites:
            return None
        name, index, acc = state.draw(st.sampled_from(sites))
        if acc.ndim < 1:
            return None
        axis = state.draw(st.integers(0, acc.ndim - 1))
        factor = state.draw(st.sampled_from([2, 4, 8, 16, 32]))
        offset = state.draw(st.integers(0, factor - 1))
        return lambda: state.sch.storage_align(state.sch.get_sblock(name), index, axis, factor, offset)


@register
class SetScope(Primitive):
    name = "set_scope"
    weight = 3
    covers = ("set_scope",)

    def propose(self, state: ScheduleState):
        sites = _intermediate_writes(state)
        if not sites:
            return None
        name, index, _ = state.draw(st.sampled_from(sites))
        scope = state.draw(st.sampled_from(SCOPES))
        return lambda: state.sch.set_scope(state.sch.get_sblock(name), index, scope)


@register
class WidenDtype(Primitive):
    name = "unsafe_set_dtype"
    covers = ("unsafe_set_dtype",)

    def propose(self, state: ScheduleState):
        sites = [s for s in _intermediate_writes(state) if s[2].dtype in WIDER]
        if not sites:
            return None
        name, index, acc = state.draw(st.sampled_from(sites))
        return lambda: state.sch.unsafe_set_dtype(state.sch.get_sblock(name), index, WIDER[acc.dtype])
