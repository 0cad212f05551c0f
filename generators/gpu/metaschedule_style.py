"""MetaSchedule CUDA design spaces, sampled once: what ``ms.tune`` would measure first.

``TuneContext(post-order-apply)`` with the ``cuda`` or ``cuda-tensorcore`` rule set
(MultiLevelTiling / MultiLevelTilingTensorCore with TVM's wmma intrinsics for fp16 and int8,
cross-thread reduction, auto-bind, auto-inline...) generates the design spaces; one is
drawn, its trace is replayed on a fresh schedule seeded from the case's draws with every
sampling instruction re-sampled (``decision_provider`` returning None), and the postprocessors
of the rule set are applied (cooperative fetch, unbound blocks, tensorize, VerifyGPUCode).
A sample the postprocessors refuse is re-drawn with the next seed (a few tries), then the
style gives up to dlight.  No runner, no measurement: the point is the schedules' code.

Cost: the first TuneContext in a process imports every tensor intrinsic (≈10 s); later
samples take milliseconds.  Applies to CUDA targets only.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.core import warmup
from fuzzharness.generators.gpu.base import GpuSchedule, Style, register
from fuzzharness.generators.gpu.dlight_style import DlightStyle

TRIES = 4


def attempt_seed(seed: int, attempt: int) -> int:
    """The schedule seed of sample ``attempt``: TVM takes seeds in [1, 2**31 - 1], so the
    samples after a drawn seed near the top wrap around (``seed + attempt`` was refused by
    TVM as a schedule error on a GPU host: 2147483648)."""
    return 1 + (seed - 1 + attempt) % (2**31 - 1)


@register
class MetaScheduleStyle(Style):
    name = "metaschedule"

    def applies(self, func, target):
        return target.is_cuda

    def schedule(self, func, data, target):
        import tvm


        warmup.tensor_intrinsics()  # wmma/mma intrinsics are registered by name
        from tvm import s_tir
        from tvm.s_tir import meta_schedule as ms

        kind = data.draw(st.sampled_from(["cuda", "cuda-tensorcore"]))
        seed = data.draw(st.integers(1, 2**31 - 2))
        which = data.draw(st.integers(0, 15))
        mod = tvm.IRModule({"main": func})
        ctx = ms.TuneContext(
            mod=mod, target=target.tvm_target(),
            space_generator=ms.space_generator.PostOrderApply(
                sch_rules=kind, postprocs=kind, mutator_probs=kind),
            rand_state=seed, num_threads=1,
        )
        spaces = ctx.generate_design_space()
        space = spaces[which % len(spaces)]
        postprocs = ctx.space_generator.postprocs
        for attempt in range(TRIES):
            sch = s_tir.Schedule(func, seed=attempt_seed(seed, attempt))
            space.trace.apply_to_schedule(sch, remove_postproc=True,
                                          decision_provider=lambda *_: None)
            if all(p.apply(sch) for p in postprocs):
                return GpuSchedule(sch, self.name, notes=[
                    f"{kind} space {which % len(spaces)}/{len(spaces)}, sample {attempt}"])

        fallback = DlightStyle().schedule(func, data, target)
        fallback.notes.append(f"metaschedule {kind}: {TRIES} samples refused by postprocessors")
        return fallback
