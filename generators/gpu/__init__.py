"""GPU schedule generation (CUDA, OpenCL, Adreno).  Importing registers every style below.

The workloads made for GPU targets (``matmul_tc``, ``matmul_texture``) live in the workload
catalog (``generators/workloads/gpu_matmul.py``).
"""

from fuzzharness.generators.gpu import dlight_style, metaschedule_style, texture, tiled  # noqa: F401
from fuzzharness.generators.gpu.base import GpuSchedule, GpuTarget, Style, gpu_schedule, styles

GPU_KINDS = frozenset({"cuda", "opencl"})


def is_gpu_target(target: dict) -> bool:
    return str(target.get("kind")) in GPU_KINDS


__all__ = ["GPU_KINDS", "GpuSchedule", "GpuTarget", "Style", "gpu_schedule", "is_gpu_target", "styles"]
