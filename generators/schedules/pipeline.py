"""Double buffering on llvm, through software pipelining.

The idiom: cache a block's input (``cache_read``), compute the copy at one of the block's
loops (``compute_at``), and annotate that loop with ``software_pipeline_stage`` (copy in stage
0, everything else in stage 1) and ``software_pipeline_order`` (copy first, or copy last),
plus ``double_buffer_scope`` on the copy block — so that InjectSoftwarePipeline prefetches
iteration i+1 into the second buffer while iteration i computes.  A bare
``double_buffer_scope`` annotation is dropped by LowerOpaqueBlock on llvm, hence the pipeline.
A reduction under the pipelined loop is decomposed first (its init moved in front of the
loop), as MetaSchedule does before pipelining: TVM 0.27 fails an internal check
(``pipeline_stages.size() == original_order.size()``) when a ``T.init`` is left inside a
pipelined loop — a known bug, proposed only with ``known_bug_sites``.

Stages never put a consumer before its producer (that would be an illegal pipeline the
annotation asks for, not a TVM bug): the copy must be the loop body's first statement and
read nothing the rest of the body writes.  The annotation arrays have exactly one entry per
statement of the loop body — and must still have after later steps, which may move blocks
into or out of the loop: :meth:`SoftwarePipeline.finalize` drops annotations that no longer
fit (an ``unannotate`` in the trace, step outcome ``dropped``), so a lowering error on a
pipeline is never our own stale annotation.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, Refused, ScheduleState, Step, register

STAGE, ORDER, SCOPE = "software_pipeline_stage", "software_pipeline_order", "double_buffer_scope"


def body_length(state: ScheduleState, loop) -> int:
    from tvm import tirx

    body = state.sch.get(loop).body
    return len(body.seq) if isinstance(body, tirx.SeqStmt) else 1


def _blocks(stmt) -> list:
    import tvm_ffi
    from tvm import s_tir

    found: list = []
    tvm_ffi.structural_walk(stmt, [(s_tir.SBlock, found.append)])
    return found


def fits(state: ScheduleState, loop) -> bool:
    """The loop's pipeline annotations match its body: one entry per statement, the first
    statement a copy (``double_buffer_scope``) reading nothing the others write, and (unless
    ``known_bug_sites``) no reduction init left inside the loop."""
    from tvm import tirx

    node = state.sch.get(loop)
    body = node.body
    stages = node.annotations.get(STAGE)
    order = node.annotations.get(ORDER)
    if not isinstance(body, tirx.SeqStmt) or stages is None or order is None:
        return False
    if not len(body.seq) == len(stages) == len(order):
        return False
    first = _blocks(body.seq[0])
    copies = [b for b in first if SCOPE in b.annotations]
    if len(first) != 1 or not copies:
        return False
    read = {str(r.source.name) for r in copies[0].reads}
    rest = [b for stmt in list(body.seq)[1:] for b in _blocks(stmt)]
    written = {str(w.source.name) for b in rest for w in b.writes}
    if not state.options.known_bug_sites and any(b.init is not None for b in rest):
        return False
    return not read & written


def pipelined_loops(state: ScheduleState) -> list:
    """The loops annotated with a pipeline, found from the blocks beneath them (lookups)."""
    if not _annotated_anywhere(state.sch.mod["main"]):
        return []  # nothing to look up (the usual case: one walk instead of every block's loops)
    loops, seen = [], set()
    for name in state.block_names():
        for lp in state.loops(state.sch.get_sblock(name)):
            node = state.sch.get(lp)
            if STAGE in node.annotations and hash(node) not in seen:
                seen.add(hash(node))
                loops.append(lp)
    return loops


def _annotated_anywhere(func) -> bool:
    import tvm_ffi
    from tvm import tirx

    found: list = []
    tvm_ffi.structural_walk(func, [(tirx.For, lambda f: found.append(STAGE in f.annotations))])
    return any(found)


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
            if state.sch.get(block).init is not None:
                state.attempt(lambda: state.sch.decompose_reduction(block, loop))
            n = body_length(state, loop)
            if n < 2:
                raise Refused("software_pipeline: nothing in the loop body to overlap the copy with")
            stages = [0] + [1] * (n - 1)
            # copy-last only with two statements: with more, InjectSoftwarePipeline refuses a
            # dependent pair whose order is reversed (ValueError src_info.order < dst_info.order)
            order = [1, 0] if copy_last and n == 2 else list(range(n))
            state.sch.annotate(loop, STAGE, stages)
            state.sch.annotate(loop, ORDER, order)
            state.sch.annotate(cache, SCOPE, 0)
            if not fits(state, loop):
                raise Refused("software_pipeline: the copy is not the first, independent "
                              "statement of the loop body")

        return apply

    def finalize(self, state: ScheduleState) -> list[Step]:
        stale = [lp for lp in pipelined_loops(state) if not fits(state, lp)]
        for lp in stale:
            for key in (STAGE, ORDER):
                if key in state.annotations(lp):
                    state.sch.unannotate(lp, key)
        return [Step(self.name, "dropped", "later steps changed the pipelined loop body")
                for _ in stale]

