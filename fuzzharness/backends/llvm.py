"""The llvm (CPU) backend: TVM's own build steps, split by stage, run in-process."""

from __future__ import annotations

from typing import Any

from fuzzharness.backends.base import Backend, register


def lower_tir(mod, target: dict[str, Any], pass_config: dict[str, Any]):
    """BindTarget + the default TIR pipeline + host/device split + finalisation.

    The same steps as ``tvm.tirx.build`` (tvm/tirx/build.py), stopped before codegen so that a
    failure in a pass is told apart from a failure in code generation.
    Returns ``(host_mod, device_mods, target_host)``.
    """
    import tvm
    from tvm.target import Target
    from tvm.tirx.build import split_host_device_mods

    tgt = Target(target)
    host = tgt.host if tgt.host is not None else (tgt if tgt.get_target_device_type() == 1 else Target("llvm"))
    tgt = tgt.with_host(host)
    with tvm.transform.PassContext(opt_level=3, config=pass_config):
        mod = tvm.tirx.transform.BindTarget(tgt)(mod)
        pipeline, finalize_host, finalize_device = tvm.tirx.get_default_tir_pipeline(tgt)
        mod = pipeline(mod)
        host_mod, device_mods = split_host_device_mods(mod)
        host_mod = finalize_host()(host_mod)
        device_mods = {t: finalize_device()(m) for t, m in device_mods.items()}
    return host_mod, device_mods, host


def codegen_tir(lowered, pass_config: dict[str, Any] | None = None):
    import tvm
    from tvm.tirx.build import tir_to_runtime

    host_mod, device_mods, host = lowered
    with tvm.transform.PassContext(opt_level=3, config=pass_config or {}):
        return tir_to_runtime(host_mod, device_mods, host)


@register
class LLVMBackend(Backend):
    name = "llvm"

    def lower(self, mod, target, pass_config):
        return lower_tir(mod, target, pass_config)

    def codegen(self, lowered, target):
        return codegen_tir(lowered)

    def build(self, runtime_module):
        # LLVM compiles lazily: looking the function up runs the JIT.
        return runtime_module["main"]

    def run(self, program, args, n_outputs):
        import tvm

        tensors = [tvm.runtime.tensor(a) for a in args]
        program(*tensors)
        return [t.numpy() for t in tensors[len(tensors) - n_outputs :]]
