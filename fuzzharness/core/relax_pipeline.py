"""TVM's Relax pipeline in pieces, as the harness compiles graph cases (TVM support).

Thin wrappers over TVM's public Relax API, without anything of the harness above them:
the graph generator (which legalizes and fuses a graph to draw per-function schedules), the
Relax case kind's stages and its repro writer use the same pieces, so a graph is compiled
the same way wherever it is compiled.

``legalize``            layout conversion (optional), the target's library dispatch and the
                        legalization passes up to ``FuseTIR``
``apply_schedules``     the fused PrimFuncs re-scheduled by stored traces (or dlight)
``build``               dataflow lowering, memory planning, VM codegen and the TIR build
``load_vm`` / ``run_vm`` the Relax VM on llvm

Per-function traces are stored with a fingerprint of the function they were drawn for
(:func:`fingerprint`); replaying a trace on a function with another fingerprint (the graph
was edited, or another TVM version fuses differently) raises :class:`StaleTrace` — the
case's fault, never TVM's.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from fuzzharness.core.tvm_support import replay_trace

SOURCES = ("graph:default", "graph:dlight", "graph:random", "graph:metaschedule")
#: ConvertLayout targets: conv2d's desired (data, kernel) layouts; pools, elementwise ops
#: and the rest follow (TVM inserts the transposes)
LAYOUTS: dict[str, list[str]] = {
    "NHWC": ["NHWC", "OHWI"],
    "NHWC-HWIO": ["NHWC", "HWIO"],
    "NCHW": ["NCHW", "OIHW"],
    "NCHW4c": ["NCHW4c", "OIHW4o"],
}
#: layouts whose conversion TVM 0.27 cannot compile on llvm: after ConvertLayout to NCHW4c,
#: LegalizeOps leaves ``relax.nn.conv2d`` (NCHW4c/OIHW4o) as it is and the VM codegen fails
#: ("CodeGenVM cannot emit this Relax operator directly"); drawn only with known_bug_sites
KNOWN_BUG_LAYOUTS = frozenset({"NCHW4c"})
TEXTURE_KEYS = ["adreno", "opencl", "gpu", "texture"]


class StaleTrace(Exception):
    """A stored trace was drawn for another function than the one it meets (harness side)."""


def graph_target(target: dict[str, Any]) -> dict[str, Any]:
    """The target a graph case compiles for: an Adreno target gets the ``texture`` key, which
    switches the Relax Adreno pipeline to texture memory scopes."""
    t = dict(target)
    if t.get("kind") == "opencl" and t.get("device") == "adreno" and "keys" not in t:
        t["keys"] = list(TEXTURE_KEYS)
    return t


def runs_on_vm(target: dict[str, Any]) -> bool:
    return target.get("kind") == "llvm"


# -- the pipeline, in pieces ------------------------------------------------------------------
def legalize(mod, target: dict[str, Any], layout: str | None):
    """Layout conversion (optional), then the target's library dispatch and legalization
    passes — up to and including ``FuseTIR`` (and the default GPU schedules)."""
    import tvm
    from tvm import relax
    from tvm.relax import pipeline as rp

    tgt = tvm.target.Target(target)
    with tgt:
        if layout:
            mod = relax.transform.ConvertLayout({"relax.nn.conv2d": LAYOUTS[layout]})(mod)
            mod = relax.transform.Normalize()(mod)
        passes = rp.library_dispatch_passes(tgt) + rp.legalize_passes(tgt)
        return tvm.transform.Sequential(passes)(mod)


def prim_functions(mod) -> dict[str, Any]:
    """The module's PrimFuncs by name (sorted: draws over them are stable)."""
    from tvm import tirx

    return {gv.name_hint: f for gv, f in sorted(mod.functions.items(), key=lambda kv: kv[0].name_hint)
            if isinstance(f, tirx.PrimFunc)}


def fingerprint(func) -> str:
    """A stable name for one PrimFunc's content (its TVMScript, hashed)."""
    return hashlib.sha256(func.script().encode()).hexdigest()[:16]


def param_signature(func) -> list[tuple]:
    """What a caller relies on: each parameter buffer's shape, dtype and scope."""
    out = []
    for p in func.params:  # TVM 0.27: a buffer parameter is a Var with shape, dtype, scope
        shape = getattr(p, "shape", None)
        dims = tuple(int(s) for s in shape) if shape is not None else None
        out.append((dims, str(p.dtype), str(p.scope()) if hasattr(p, "scope") else ""))
    return out


def apply_schedules(mod, schedule: dict[str, Any], target: dict[str, Any]):
    """The fused PrimFuncs re-scheduled as the case says (a new module)."""
    import tvm


    source = schedule.get("source", "graph:default")
    if source == "graph:dlight":
        from tvm.s_tir import dlight as dl

        with tvm.target.Target(target):
            return dl.ApplyDefaultSchedule(dl.cpu.GEMV(), dl.cpu.Reduction())(mod)
    functions = schedule.get("functions") or {}
    if not functions:
        return mod
    funcs = prim_functions(mod)
    out = mod
    for name in sorted(functions):
        entry = functions[name]
        if name not in funcs:
            raise StaleTrace(f"the stored trace for {name} meets no such function")
        func = funcs[name]
        if fingerprint(func) != entry.get("fingerprint"):
            raise StaleTrace(f"the stored trace for {name} was drawn for another function")
        sch = replay_trace(func, entry.get("trace"))
        new = sch.mod["main"]
        if param_signature(new) != param_signature(func):
            raise StaleTrace(f"the trace for {name} changes the function's signature")
        out = _replace(out, name, new.with_attr("tirx.is_scheduled", True))
    return out


def _replace(mod, name: str, func):
    import tvm

    funcs = {gv: (func if gv.name_hint == name else f) for gv, f in mod.functions.items()}
    return tvm.IRModule(funcs, attrs=mod.attrs)


def build(mod, target: dict[str, Any], pass_config: dict[str, Any]):
    """Dataflow lowering, memory planning, VM codegen and TIR build: a VM executable."""
    import tvm
    from tvm import relax
    from tvm.relax import pipeline as rp

    tgt = tvm.target.Target(target)
    with tvm.transform.PassContext(opt_level=3, config=pass_config), tgt:
        mod = tvm.transform.Sequential(dataflow_lower_passes(tgt) + rp.finalize_passes(tgt))(mod)
        return relax.build(mod, target=tgt, relax_pipeline=None)


#: TVM 0.27: ``relax.pipeline.dataflow_lower_passes(llvm)`` raises AttributeError —
#: ``tvm.relax.backend.cpu_generic`` does not re-export the function its ``pipeline`` module
#: defines (the public dispatcher is broken for CPU targets; ``get_default_pipeline`` works
#: because it calls the module's own functions)
DATAFLOW_LOWER_FINDING = ("tvm.relax.pipeline.dataflow_lower_passes(Target('llvm')) raises "
                          "AttributeError: tvm.relax.backend.cpu_generic does not export it")


def dataflow_lower_passes(tgt) -> list:
    from tvm.relax import pipeline as rp

    try:
        return rp.dataflow_lower_passes(tgt)
    except AttributeError:
        if tgt.kind.name != "llvm":
            raise
        from tvm.relax.backend.cpu_generic import pipeline as cpu

        return cpu.dataflow_lower_passes(tgt)


def load_vm(executable):
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(executable, tvm.cpu())
    return vm["main"]


def run_vm(main, inputs: list[np.ndarray]) -> list[np.ndarray]:
    import tvm

    result = main(*[tvm.runtime.tensor(a) for a in inputs])
    if isinstance(result, tvm.runtime.Tensor):
        return [result.numpy()]
    return [r.numpy() for r in result]
