"""annotate_buffer_access: widen a block's read region, then cache it.

The annotation replaces the region TVM infers for one read; a following ``cache_read`` then
copies the annotated region.  Only *reads* are widened, and only within the buffer's bounds
(per dimension: the original access, or the whole extent), so the program still computes the
same values — it just copies more.  A wrong write region would make the cache write back
garbage: that is a false annotation, not a compiler bug, so writes are not proposed.

Known TVM bug, proposed only in ``KNOWN_SITE_PERMILLE`` ‰ of the draws
(always with ``known_bug_sites``; ``base.ScheduleState.known_site``): the Python wrapper checks the number
of ranges against the block's *iterator* count instead of the buffer's rank (``ValueError:
Number of iter_vars (3) must match number of new_ranges_spec (2)`` for matmul's ``A``), so
only accesses whose rank equals the block's iterator count are proposed.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class AnnotateBufferAccess(Primitive):
    name = "annotate_buffer_access"
    weight = 2
    covers = ("annotate_buffer_access", "cache_read")

    def propose(self, state: ScheduleState):
        from tvm import tirx

        known = state.known_site()
        sites = [(n, i) for n in state.block_names()
                 for i, r in enumerate(state.facts.blocks[n].reads)
                 if known or r.ndim == len(state.facts.blocks[n].iter_kinds)]
        if not sites:
            return None
        name, index = state.draw(st.sampled_from(sites))
        block = state.sch.get_sblock(name)
        region = state.sch.get(block).reads[index]
        shape = region.source.shape
        if not all(isinstance(s, tirx.IntImm) for s in shape):
            return None
        # a 0-d buffer has nothing to widen; Hypothesis's lists(max_size=0) is builds(list),
        # which only draws inside @given ("No build context registered")
        widen = state.draw(st.lists(st.booleans(), min_size=len(shape),
                                    max_size=len(shape))) if shape else []
        ranges = []
        for r, dim, w in zip(region.region, shape, widen, strict=True):
            if w:
                ranges.append((0, int(dim.value)))
            elif isinstance(r.extent, tirx.IntImm) and int(r.extent.value) == 1:
                ranges.append(r.min)
            else:
                ranges.append((r.min, r.min + r.extent))
        cache = state.draw(st.booleans())

        def apply():
            state.sch.annotate_buffer_access(block, index, "read", lambda *_: tuple(ranges))
            if cache:
                state.attempt(lambda: state.sch.cache_read(block, index, "global"))

        return apply
