"""vectorize: the innermost loop (or another) becomes a vector loop — as it is, or split
first so that the vector loop has 4, 8 or 16 lanes (``lanes``, steered: with the loop's own
extent, vector stores of the widths the hardware has — 8 × fp16, 4 or 8 × fp32 — were rare),
the lanes then moved innermost (a vector loop around a serial one is scalarised by lowering)
and a remainder the lanes do not divide partitioned off into a scalar loop; optionally the
outermost spatial loop in parallel too (``parallel_outer``).

Spatial loops come first in the loop choice, those whose extent the lanes divide first
among them, innermost first: vectorising a reduction loop is always refused with a
ScheduleError on llvm, and a non-dividing lane split leaves a predicated tail that lowering
scalarises."""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register
from fuzzharness.generators.steering import weighted

# Thousands of lanes only test LLVM's patience (minutes per case), not numerics; 64 lanes of
# fp16 are already four 512-bit registers.
MAX_LANES = 64
#: lanes of the split before vectorising (0: vectorise the loop as it is; first, where
#: shrinking goes)
LANES = (0, 4, 8, 16)


@register
class Vectorize(Primitive):
    name = "vectorize"
    weight = 3
    covers = ("vectorize", "split", "reorder", "loop_partition", "parallel")

    def propose(self, state: ScheduleState):
        def written(name: str) -> str:
            writes = state.facts.blocks[name].writes
            return writes[0].dtype if writes else ""

        def kind(name: str) -> str:
            return "reduction" if "R" in state.facts.blocks[name].iter_kinds else "spatial"

        names = weighted("vectorize.block", state.block_names(), key=written)
        name = state.pick_name(weighted("vectorize.block_kind", names, key=kind))
        if name is None:
            return None
        block = state.sch.get_sblock(name)
        loops = state.loops(block)
        if not loops:
            return None
        lanes = state.draw(st.sampled_from(weighted("vectorize.lanes", LANES, written(name))))
        offset = state.draw(st.integers(0, len(loops) - 1))
        outer = state.draw(st.sampled_from(weighted("vectorize.parallel_outer", [False, True])))
        # spatial loops first, those the lanes divide first among them (a tail is scalar),
        # innermost first: index 0 of the drawn offset shrinks to the innermost spatial loop
        kinds = state.loop_kinds(block)
        extents = [state.extent(lp) for lp in loops]

        def rank(i: int) -> tuple[bool, bool, int]:
            ragged = bool(lanes) and (extents[i] is None or extents[i] % lanes != 0)
            return kinds[i] != "S", ragged, -i

        order = sorted(range(len(loops)), key=rank)
        loop = loops[order[offset]]
        extent = state.extent(loop)
        if extent is None:
            return None
        if lanes and extent > lanes:
            # loop_partition segfaults on a loop holding more than one block and re-runs a
            # reduction's init per piece: known TVM bugs (generators/schedules/loop_partition.py)
            partition = state.known_site() or (
                kinds[order[offset]] == "S" and len(state.sch.get_child_blocks(loop)) == 1)
            return lambda: _vector_lanes(state, block, loop, extent, lanes, partition, outer)
        if extent > MAX_LANES:
            return None
        return lambda: state.sch.vectorize(loop)


def _vector_lanes(state: ScheduleState, block, loop, extent: int, lanes: int, partition: bool,
                  outer: bool) -> None:
    """Split ``loop`` by ``lanes``, move the lanes innermost, vectorise them.  A non-dividing
    extent is first partitioned (where ``partition``) into a part the lanes divide and a scalar
    remainder loop (``loop_partition``: the main loop + tail shape of hand-written kernels),
    since a predicated vector loop is scalarised by lowering.  With ``outer``, the block's
    outermost loop also runs in parallel when it is spatial, another one than ``loop`` and no
    loop of the block is parallel yet (nested parallel loops do not build)."""
    from tvm import tirx

    sch = state.sch
    if outer:
        loops = state.loops(block)
        first = loops[0]
        if (state.loop_kinds(block)[0] == "S" and not sch.get(first).same_as(sch.get(loop))
                and all(sch.get(lp).kind != tirx.ForKind.PARALLEL for lp in loops)):
            state.attempt(lambda: sch.parallel(first))
    if extent % lanes and partition:
        loop = sch.loop_partition(loop, [extent - extent % lanes, None])[0]
    _, inner = sch.split(loop, [None, lanes])
    blocks = sch.get_child_blocks(inner)
    if len(blocks) == 1:  # the lanes innermost, or lowering scalarises the vector loop
        loops = list(sch.get_loops(blocks[0]))
        at = next(i for i, lp in enumerate(loops) if sch.get(lp).same_as(sch.get(inner)))
        if loops[at + 1:]:
            sch.reorder(*loops[at + 1:], inner)
    sch.vectorize(inner)
