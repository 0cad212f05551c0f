"""Double buffering on llvm, through software pipelining.

The idiom: cache a block's input (``cache_read``), compute the copy at one of the block's
loops (``compute_at``), and annotate that loop with ``software_pipeline_stage`` (copy in stage
0, everything else in stage 1) and ``software_pipeline_order`` (copy first, or copy last),
plus ``double_buffer_scope`` on the copy block — so that InjectSoftwarePipeline prefetches
iteration i+1 into the second buffer while iteration i computes.  A bare
``double_buffer_scope`` annotation is dropped by LowerOpaqueBlock on llvm, hence the pipeline.

Stages never put a consumer before its producer (that would be an illegal pipeline the
annotation asks for, not a TVM bug); the annotation arrays have exactly one entry per
statement of the loop body.
"""

from __future__ import annotations

from hypothesis import strategies as st

from generators.schedules.base import Primitive, Refused, ScheduleState, register


def body_length(state: ScheduleState, loop) -> int:
    from tvm import tirx

    body = state.sch.get(loop).body
    return len(body.seq) if isinstance(body, tirx.SeqStmt) else 1


@register
class SoftwarePipeline(Primitive):
    name = "software_pipeline"
    weight = 4
    covers = ("cache_read", "compute_at", "annotate")

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: bool(b.reads))
        if block is None:
            return None
        loops = state.loops(block)
        if not loops:
            return None
        kinds = state.loop_kinds(block)
        # reduction loops first: there the cached slice changes every iteration
        ranked = [i for i, k in enumerate(kinds) if k == "R"] + [i for i, k in enumerate(kinds) if k == "S"]
        at = state.draw(st.sampled_from(ranked))
        index = state.draw(st.integers(0, len(state.block_facts(block).reads) - 1))
        scope = state.draw(st.sampled_from(["global", "local"]))
        copy_last = state.draw(st.booleans())
        loop = loops[at]

        def apply():
            cache = state.sch.cache_read(block, index, scope)
            state.sch.compute_at(cache, loop)
            n = body_length(state, loop)
            if n < 2:
                raise Refused("software_pipeline: nothing in the loop body to overlap the copy with")
            stages = [0] + [1] * (n - 1)
            order = [*range(1, n), 0] if copy_last else list(range(n))
            state.sch.annotate(loop, "software_pipeline_stage", stages)
            state.sch.annotate(loop, "software_pipeline_order", order)
            state.sch.annotate(cache, "double_buffer_scope", 0)

        return apply

