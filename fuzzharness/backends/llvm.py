"""The llvm (CPU) backend: TVM's own build steps, split by stage, run in-process.

Arguments are passed to the kernel between guard zones (:mod:`fuzzharness.backends.redzone`,
unless ``$FUZZHARNESS_GUARD_ZONES`` is 0): an out-of-bounds write is a ``crash`` of kind
``out_of_bounds`` naming the parameter, at the case that did it.  The parameter names travel
from :meth:`LLVMBackend.lower` (which sees the PrimFunc) through :class:`LLVMCode` and
:class:`LLVMProgram` to :meth:`LLVMBackend.run`.
"""

from __future__ import annotations

import dataclasses
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


class LoweredTIR(tuple):
    """``(host_mod, device_mods, target_host)`` as :func:`lower_tir` returns it, plus the
    names of the PrimFunc's buffer parameters in call order (``param_names``)."""

    param_names: list[str]


@dataclasses.dataclass
class LLVMCode:
    runtime_module: Any  # what tir_to_runtime made (exported as is by the RPC backend)
    param_names: list[str]


@dataclasses.dataclass
class LLVMProgram:
    function: Any  # the JIT-compiled ``main``
    param_names: list[str]


def param_names(mod) -> list[str]:
    return [str(p.name) for p in mod["main"].params]  # TVM 0.27: buffer parameters


@register
class LLVMBackend(Backend):
    name = "llvm"

    def lower(self, mod, target, pass_config):
        lowered = LoweredTIR(lower_tir(mod, target, pass_config))
        lowered.param_names = param_names(mod)
        return lowered

    def codegen(self, lowered, target):
        return LLVMCode(codegen_tir(lowered), list(getattr(lowered, "param_names", [])))

    def build(self, code):
        # LLVM compiles lazily: looking the function up runs the JIT.
        if isinstance(code, LLVMCode):
            return LLVMProgram(code.runtime_module["main"], code.param_names)
        return LLVMProgram(code["main"], [])  # a runtime module from elsewhere

    def run(self, program, args, n_outputs):
        from fuzzharness.core.hygiene import guard_zones_enabled

        function, names = (program.function, program.param_names) \
            if isinstance(program, LLVMProgram) else (program, [])
        if guard_zones_enabled():
            from fuzzharness.backends.redzone import run_guarded

            return run_guarded(function, args, n_outputs, names)
        import tvm

        tensors = [tvm.runtime.tensor(a) for a in args]
        function(*tensors)
        return [t.numpy() for t in tensors[len(tensors) - n_outputs :]]
