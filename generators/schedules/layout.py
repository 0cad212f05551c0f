"""transform_layout (buffers) and transform_block_layout (block iteration spaces).

Index maps are drawn from four bijective families over the buffer's (or block's) dimensions:

``permute``  a permutation of the dimensions (a transpose)
``split``    one dimension ``i`` → ``(i // f, i % f)``; when ``f`` does not divide the extent the
             new layout has padding, which ``transform_layout`` requires a ``pad_value`` for
``fuse``     two adjacent dimensions → ``i * n + j``
``reverse``  one dimension ``i`` → ``n - 1 - i`` (in KNOWN_SITE_PERMILLE ‰ of the draws: TVM 0.27
             fails an internal check, ``is_zero(range->min)``, on any reversal, in both
             transform_layout and transform_block_layout)

On a *parameter* buffer the function's signature changes: the harness lays the inputs out in
the new layout before the call, fills input padding with the pad value (TVM may assume it is
there), and reads outputs back through the same map (:mod:`fuzzharness.execution.relayout`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register

FAMILIES = ("permute", "split", "fuse")
KNOWN_BUG_FAMILIES = ("reverse",)


def draw_index_map(state: ScheduleState, shape: list[int], *, allow_split: bool = True):
    """A drawn ``IndexMap`` over ``len(shape)`` indices and whether it introduces padding
    (``(None, False)`` when no family fits the shape)."""
    from tvm.tirx import IndexMap

    n = len(shape)
    known = state.known_site()
    families = [f for f in FAMILIES + KNOWN_BUG_FAMILIES
                if (f not in ("permute", "fuse") or n >= 2) and (f != "split" or allow_split)
                and (f not in KNOWN_BUG_FAMILIES or known)]
    if not families:
        return None, False
    family = state.draw(st.sampled_from(families))
    pads = False
    if family == "permute":
        order = state.draw(st.permutations(range(n)))

        def fn(*ix):
            return [ix[i] for i in order]
    elif family == "fuse":
        d = state.draw(st.integers(0, n - 2))
        inner = shape[d + 1]

        def fn(*ix):
            return [*ix[:d], ix[d] * inner + ix[d + 1], *ix[d + 2:]]
    elif family == "split":
        d = state.draw(st.integers(0, n - 1))
        f = state.draw(st.sampled_from([2, 3, 4, 8, 16]))
        pads = shape[d] % f != 0

        def fn(*ix):
            return [*ix[:d], ix[d] // f, ix[d] % f, *ix[d + 1:]]
    else:  # reverse
        d = state.draw(st.integers(0, n - 1))
        extent = shape[d]

        def fn(*ix):
            return [*ix[:d], extent - 1 - ix[d], *ix[d + 1:]]
    # int32 like the buffers' indices: the default int64 map trips an internal check in TVM
    return IndexMap.from_func(fn, ndim=n, index_dtype="int32"), pads


def _shape(buf) -> list[int] | None:
    from tvm import tirx

    if not all(isinstance(s, tirx.IntImm) for s in buf.shape):
        return None
    return [int(s.value) for s in buf.shape]


@register
class TransformLayout(Primitive):
    name = "transform_layout"
    weight = 4
    covers = ("transform_layout",)

    def propose(self, state: ScheduleState):
        from tvm import tirx

        block = state.pick_block(lambda b: bool(b.reads or b.writes))
        if block is None:
            return None
        kind, index = state.pick_access(block)
        node = state.sch.get(block)
        buf = (node.reads if kind == "read" else node.writes)[index].source
        shape = _shape(buf)
        if not shape:
            return None
        index_map, pads = draw_index_map(state, shape)
        if index_map is None:
            return None
        pad_value = tirx.const(0, str(buf.dtype)) if pads else None
        return lambda: state.sch.transform_layout(block, (kind, index), index_map,
                                                  pad_value=pad_value)


@register
class TransformBlockLayout(Primitive):
    name = "transform_block_layout"
    weight = 2
    covers = ("transform_block_layout",)

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: bool(b.iter_kinds) and None not in b.iter_extents)
        if block is None:
            return None
        shape = list(state.block_facts(block).iter_extents)
        # splitting a block iterator needs a predicate the primitive cannot add: not drawn
        index_map, _ = draw_index_map(state, shape, allow_split=False)
        if index_map is None:
            return None
        return lambda: state.sch.transform_block_layout(block, index_map)
