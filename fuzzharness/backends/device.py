"""What the GPU backends (CUDA, OpenCL) share: lowering, codegen and the compiled program.

Lowering is TVM's own ``tvm.tirx.build`` split by stage (as for llvm), with two differences:

* the host function is kept *before* the host finalisation passes, because the launch plan
  (:mod:`fuzzharness.backends.launch`) is read from it;
* the pipeline is the one TVM selects for the target through its public
  ``tvm.tirx.get_default_tir_pipeline(target)``.  For an Adreno target that selection is
  broken in TVM 0.27 (a finding, see :func:`select_pipeline`); the harness then runs the
  Adreno pipeline TVM selected, completed with the s_tir finalisation passes, which is what
  TVM's own texture tests do by hand.

Codegen runs TVM's ``tir_to_runtime`` — host code generation included, exactly as
``tvm.compile`` does — and takes the device source from the imported device module.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fuzzharness.backends import launch
from fuzzharness.backends.launch_plan import LaunchPlan


class GeneratedCodeError(Exception):
    """Code TVM generated was refused downstream (nvcc, an OpenCL compiler, a launch).

    Blamed on TVM (``fuzzharness.execution.stages`` checks ``blame_tvm``); ``fuzz_details`` goes into
    the verdict's details so that the failing source and the compiler log are kept.
    """

    blame_tvm = True

    def __init__(self, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.fuzz_details = details or {}


@dataclasses.dataclass
class DeviceLowered:
    func: Any  # the scheduled PrimFunc, before lowering (parameter shapes and scopes)
    host_mod: Any  # host IRModule after the pipeline, before finalisation (the launch plan)
    host_final: Any
    device_mods: dict  # device Target → finalised IRModule of kernels
    host_target: Any
    pipeline: str
    pass_config: dict[str, Any]


@dataclasses.dataclass
class DeviceCode:
    """Output of codegen: the device source, its launch plan, the host runtime module."""

    source: str
    plan: LaunchPlan
    target: dict[str, Any]
    pipeline: str
    runtime_module: Any = None


@dataclasses.dataclass
class DeviceProgram:
    """Output of build: something the backend's ``run`` can launch."""

    code: DeviceCode
    binary: Any = None  # cubin bytes, a pyopencl Program, ...
    not_runnable: str | None = None  # why this machine cannot run it (then run is skipped)


PIPELINE_FINDING = (
    "tvm.tirx.get_default_tir_pipeline returns a bare Pass for Adreno targets (every caller "
    "unpacks three values), and tvm.tirx.build/tvm.compile never call it with their default "
    "pipeline='default': TVM's public API cannot select the Adreno lowering pipeline"
)


def select_pipeline(tgt):
    """``(name, pipeline, finalize_host, finalize_device)`` that TVM chooses for ``tgt``."""
    import tvm
    import tvm.s_tir  # noqa: F401  (registers the s_tir and adreno pipelines)
    from tvm.tirx import compilation_pipeline as cp

    chosen = tvm.tirx.get_default_tir_pipeline(tgt)
    if isinstance(chosen, tuple | list):
        name = "adreno" if "adreno" in tgt.keys and tgt.kind.name == "opencl" else "s_tir"
        return (name, *chosen)
    # TVM 0.27: the Adreno factory returns only its main pass (PIPELINE_FINDING).
    return "adreno", chosen, cp.finalize_host_passes, cp.finalize_device_passes


def lower_device(mod, target: dict[str, Any], pass_config: dict[str, Any]) -> DeviceLowered:
    import tvm
    from tvm.target import Target
    from tvm.tirx.build import split_host_device_mods

    tgt = Target(target)
    host = tgt.host if tgt.host is not None else Target("llvm")
    tgt = tgt.with_host(host)
    func = mod["main"]
    with tvm.transform.PassContext(opt_level=3, config=pass_config):
        bound = tvm.tirx.transform.BindTarget(tgt)(mod)
        name, pipeline, finalize_host, finalize_device = select_pipeline(tgt)
        lowered = pipeline(bound)
        host_mod, device_mods = split_host_device_mods(lowered)
        host_final = finalize_host()(host_mod)
        device_final = {t: finalize_device()(m) for t, m in device_mods.items()}
    return DeviceLowered(func, host_mod, host_final, device_final, host, name, dict(pass_config))


def device_tir(lowered: DeviceLowered) -> str:
    return "\n".join(m.script() for m in lowered.device_mods.values())


def codegen_device(lowered: DeviceLowered, target: dict[str, Any]) -> DeviceCode:
    """TVM's codegen for host and device; the device source and launch plan come out."""
    import tvm
    from tvm.tirx.build import tir_to_runtime


    if not lowered.device_mods:
        raise launch.UnsupportedHostCode("the lowered module has no device kernel")
    try:
        # In the target's scope: on a host with an NVIDIA driver TVM's CUDA codegen also
        # compiles (tvm.support.nvcc, NVRTC) and takes the arch from Target.current(), else
        # from the GPU through TVM's CUDA runtime — which failed intermittently in campaign
        # workers (cudaErrorInitializationError in CUDADeviceAPI::GetAttr, on an H200): the
        # case's own arch, never the machine's, decides what is compiled.
        with tvm.transform.PassContext(opt_level=3, config=lowered.pass_config), \
                tvm.target.Target(target):
            rt = tir_to_runtime(lowered.host_final, lowered.device_mods, lowered.host_target)
    except Exception as e:
        # Keep what failed to generate: the device TIR (there is no source yet).
        e.fuzz_details = {"device_tir": device_tir(lowered), "pipeline": lowered.pipeline}  # type: ignore[attr-defined]
        raise
    sources = [m.inspect_source() for m in rt.imports]
    plan = launch.extract(lowered.host_mod, lowered.device_mods, lowered.func)
    return DeviceCode("\n".join(sources), plan, dict(target), lowered.pipeline, rt)
