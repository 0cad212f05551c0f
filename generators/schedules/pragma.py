"""pragma: loop annotations that the llvm lowering acts on.

``pragma_auto_unroll_max_step`` (+ ``pragma_unroll_explicit``)  UnrollLoop unrolls every loop
    below whose total step count is at most the value — drawn literally or, as MetaSchedule
    does, through ``sample_categorical`` so that the decision sits in the trace;
``pragma_loop_partition_hint``  LoopPartition splits the loop at its predicate boundaries
    (the tails that non-divisible splits leave).

Left out on purpose: ``pragma_parallel_stride_pattern`` / ``_barrier_when_finish`` /
``_launch_point`` (legacy TE pragmas whose preconditions codegen enforces with internal checks,
so misplacing them is our error, not TVM's), ``pragma_debug_skip_region`` (skips code by
design), ``pragma_import_*`` (external code).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register

# The unroll budgets MetaSchedule uses on CPU; larger values only measure LLVM's patience.
UNROLL_STEPS = (0, 16, 64, 512)


@register
class Pragma(Primitive):
    name = "pragma"
    weight = 3
    covers = ("annotate", "sample_categorical")

    def propose(self, state: ScheduleState):
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if not loops:
            return None
        loop = state.draw(st.sampled_from(loops))
        how = state.draw(st.sampled_from(["unroll", "unroll_sampled", "partition_hint"]))
        step = state.draw(st.sampled_from(UNROLL_STEPS))
        explicit = state.draw(st.booleans())
        if how == "partition_hint":
            return lambda: state.sch.annotate(loop, "pragma_loop_partition_hint", 1)

        def unroll():
            value = step
            if how == "unroll_sampled":
                value = state.sch.sample_categorical(list(UNROLL_STEPS), [0.25] * 4)
            state.sch.annotate(loop, "pragma_auto_unroll_max_step", value)
            state.sch.annotate(loop, "pragma_unroll_explicit", int(explicit))

        return unroll


# Annotations that only make sense together: removing one of them alone leaves a loop that
# InjectSoftwarePipeline refuses with an internal check (our error, not TVM's).
TOGETHER = {"software_pipeline_stage": ("software_pipeline_stage", "software_pipeline_order"),
            "software_pipeline_order": ("software_pipeline_stage", "software_pipeline_order")}


@register
class Unannotate(Primitive):
    """unannotate: remove an annotation an earlier step (or MetaSchedule) put on a loop/block."""

    name = "unannotate"
    weight = 2
    covers = ("unannotate",)

    def propose(self, state: ScheduleState):
        sites, seen = [], set()
        for name in state.block_names():
            block = state.sch.get_sblock(name)
            # a loop appears under every block it encloses: dedupe by node and key
            for target in (block, *state.loops(block)):
                for key in state.annotations(target):
                    ident = (hash(state.sch.get(target)), key)
                    if ident not in seen:
                        seen.add(ident)
                        sites.append((target, key))
        if not sites:
            return None
        target, key = state.draw(st.sampled_from(sites))
        keys = TOGETHER.get(key, (key,))

        def apply():
            for k in keys:
                state.sch.unannotate(target, k)

        return apply
