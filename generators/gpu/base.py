"""GPU schedule styles: how a case for a GPU target (CUDA, OpenCL, Adreno) gets its schedule.

A GPU kernel must bind its loops to ``blockIdx``/``threadIdx``; a random sequence of CPU
primitives would nearly always leave loops unbound and end in a build error that says
nothing about TVM.  So GPU schedules are drawn *whole*, one **style** per case, each a
registered :class:`Style` that always produces a bound schedule when it applies:

``tiled``        hand-rolled multi-level tiling: block/thread bindings, shared and local cache
                 stages, cooperative fetch, software pipelining with double-buffered shared
                 memory (async copy on CUDA ≥ sm_80), cross-thread reductions
``dlight``       TVM's default GPU schedules (``s_tir.dlight.gpu``: Matmul with its tensor-core
                 path, GEMV, Reduction, GeneralReduction, Fallback)
``metaschedule`` a MetaSchedule CUDA design space (``cuda`` or ``cuda-tensorcore`` rules:
                 wmma tensorize for fp16 and int8), re-sampled and post-processed
``texture``      Adreno: an input staged into a texture scope with ``cache_read`` and packed
                 to RGBA pixels with ``transform_layout``

Invariants:

* the style is drawn from *all* registered styles in name order; one that does not apply to
  the function/target falls back to ``dlight`` (whose Fallback rule binds anything), so
  registering a style is a harness version change but the draws stay deterministic;
* every draw goes through ``data.draw`` (shrinkable, replayable); TVM's sampling instructions
  are seeded from it and their decisions land in the trace;
* the result is TVM's own trace, replayed by ``fuzzharness.core.tvm_support.replay_trace``; the
  pass configuration a style needs (e.g. ``tirx.use_async_copy``) is returned with it and
  stored in the case.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from hypothesis import strategies as st

from fuzzharness.core import warmup
from fuzzharness.core.registry import Registry
from fuzzharness.core.tvm_support import is_schedule_error
from fuzzharness.generators.steering import weighted
from fuzzharness.generators.targets import label


@dataclasses.dataclass
class GpuTarget:
    """What the styles need to know about the target (from the case's target dict)."""

    target: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.target["kind"])

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    @property
    def is_adreno(self) -> bool:
        return self.kind == "opencl" and (
            self.target.get("device") == "adreno" or "adreno" in self.target.get("keys", ()))

    @property
    def sm(self) -> int:
        arch = str(self.target.get("arch", "sm_90"))
        digits = "".join(c for c in arch[3:] if c.isdigit())
        return int(digits) if digits else 0

    @property
    def max_threads(self) -> int:
        return 1024 if self.is_cuda else 256

    def tvm_target(self):
        from tvm.target import Target

        return Target(self.target)


@dataclasses.dataclass
class GpuSchedule:
    sch: Any
    style: str
    pass_config: dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)


class Style:
    name: ClassVar[str]

    def applies(self, func, target: GpuTarget) -> bool:
        return True

    def schedule(self, func, data: Any, target: GpuTarget) -> GpuSchedule:
        raise NotImplementedError


styles: Registry[Style] = Registry("GPU schedule style")


def register(cls: type[Style]) -> type[Style]:
    styles.add(cls.name, cls())
    return cls


def gpu_schedule(func, data: Any, target: dict[str, Any], enabled: tuple[str, ...] | None = None) -> GpuSchedule:
    """Draw a style and schedule ``func`` with it (see the module docstring)."""

    gt = GpuTarget(target)
    if gt.is_cuda:
        # dlight's and MetaSchedule's tensor-core schedules name TVM's registered intrinsics

        warmup.tensor_intrinsics()  # wmma/mma intrinsics are registered by name
    # steered per target (generators/steering.py: on Adreno the style that lowers textures)
    name = data.draw(st.sampled_from(weighted("gpu_style", styles.names(), label(target))))
    if (enabled is not None and name not in enabled) or not styles[name].applies(func, gt):
        name = "dlight"
    try:
        return styles[name].schedule(func, data, gt)
    except Exception as e:  # noqa: BLE001
        if not is_schedule_error(e) or name == "dlight":
            raise
        # TVM refused a step of the style: not a finding; fall back (and say so).
        fallback = styles["dlight"].schedule(func, data, gt)
        first = str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__
        fallback.notes.append(f"{name} refused by the schedule API: {first}")
        return fallback
