"""Graph cases: a Relax program through TVM's whole pipeline, run, and judged.

A graph case (``case.workload["name"] == "graph"``, the graph spec in its params, see
:mod:`generators.graphs`) is compiled in one of these *modes* — each a differential axis,
judged against the same float64 reference:

``graph:default``       TVM's default Relax pipeline for the target: library dispatch,
                        ``LegalizeOps``, ``AnnotateTIROpPattern``, ``FoldConstant``,
                        ``FuseOps``, ``FuseTIR`` (on GPU targets also the default dlight
                        schedules), then dataflow lowering, memory planning and the VM
                        codegen — what ``relax.get_default_pipeline(target)`` runs
``graph:dlight``        the same, with dlight's CPU rules (``GEMV``, ``Reduction``) scheduling
                        the fused PrimFuncs (llvm)
``graph:random``        the fused PrimFuncs re-scheduled by the random schedule generator
                        (:func:`generators.schedules.random_schedule`), one stored trace per
                        function (``case.schedule["functions"]``)
``graph:metaschedule``  the same with MetaSchedule design-space samples
                        (:mod:`generators.schedules.metaschedule`)

Independently, ``case.schedule["layout"]`` names a ``ConvertLayout`` applied first
(:data:`LAYOUTS`: NCHW → NHWC, NCHW → NCHW4c, ...).  The target decides how the program
runs: on llvm with ``relax.VirtualMachine`` (the real runtime: VM codegen, memory planning,
the packed calls); on a GPU target — the Adreno texture pipeline (``{"kind": "opencl",
"device": "adreno"}`` with the ``texture`` key) or plain OpenCL/CUDA — the PyPI wheel has no
device runtime, so :class:`CallInterpreter` executes the lowered ``main`` itself: every
``call_tir`` is one PrimFunc compiled and launched by the harness's TIR backend for that
target (:mod:`fuzzharness.backends`), intermediate tensors handed over as arrays (texture
scopes are laid out and read back as TVM lays them out).

Stages (announced like the TIR path's, :class:`fuzzharness.execute.Execution`):
``generate`` (graph → Relax module, inputs), ``lower`` (the Relax passes up to ``FuseTIR``),
``schedule`` (the stored per-function traces, or dlight), ``codegen`` (the rest of the Relax
pipeline and ``relax.build``: TIR lowering and LLVM/device code), ``build`` (the VM and its
JIT, or the device programs), ``run``, ``verify``.  A ``ScheduleError`` replaying a stored
trace is ``schedule_rejected``; a TVM exception anywhere else is a ``compile_error`` (a
``crash`` at ``run``), as for TIR cases.

Per-function traces are stored with a fingerprint of the function they were drawn for
(:func:`fingerprint`); replaying a trace on a function with another fingerprint (the graph
was edited, or another TVM version fuses differently) is refused as a harness error
("stale trace"), never blamed on TVM.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

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


class UnsupportedBinding(Exception):
    """The lowered ``main`` holds something the call interpreter cannot execute."""


def is_graph_case(case) -> bool:
    from generators.graphs.spec import GRAPH_WORKLOAD

    return case.workload_name == GRAPH_WORKLOAD


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


def signature(func) -> list[tuple]:
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

    from fuzzharness.tvm_support import replay_trace

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
        if signature(new) != signature(func):
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


class CallInterpreter:
    """Execute a legalized Relax ``main`` (a dataflow block of ``call_tir`` bindings) by
    compiling and launching each PrimFunc with a TIR backend (GPU targets: no device
    runtime in this TVM wheel, see the module docstring)."""

    def __init__(self, mod, backend, target: dict[str, Any], pass_config: dict[str, Any]):
        self.mod, self.backend, self.target, self.pass_config = mod, backend, target, pass_config
        self.lowered: dict[str, Any] = {}
        self.code: dict[str, Any] = {}
        self.programs: dict[str, Any] = {}

    def calls(self) -> list[Any]:
        main = self.mod["main"]
        return [b for blk in main.body.blocks for b in blk.bindings]

    def _called(self) -> list[str]:
        names = []
        for b in self.calls():
            v = b.value
            if _is_call_tir(v) and v.args[0].name_hint not in names:
                names.append(v.args[0].name_hint)
        return names

    def lower(self) -> None:
        import tvm

        funcs = prim_functions(self.mod)
        for name in self._called():
            f = funcs[name].with_attr("global_symbol", "main")
            self.lowered[name] = self.backend.lower(tvm.IRModule({"main": f}), self.target,
                                                    self.pass_config)

    def codegen(self) -> None:
        for name, low in self.lowered.items():
            self.code[name] = self.backend.codegen(low, self.target)

    def build(self) -> str | None:
        """Build every program; the first reason one cannot run here (None: all can)."""
        why = None
        for name, code in self.code.items():
            self.programs[name] = self.backend.build(code)
            why = why or self.backend.not_runnable(self.programs[name])
        return why

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        from fuzzharness.execute import poison
        from oracles.numerics import numpy_dtype

        main = self.mod["main"]
        env: dict[Any, Any] = {}
        for p in main.params:
            env[p] = inputs[p.name]
        for b in self.calls():
            v = b.value
            if _is_call_tir(v):
                args = [np.ascontiguousarray(env[a]).copy() for a in v.args[1].fields]
                ty = b.var.ty
                out = poison(tuple(int(s) for s in ty.shape), np.dtype(numpy_dtype(str(ty.dtype))))
                env[b.var] = self.backend.run(self.programs[v.args[0].name_hint], [*args, out], 1)[0]
            else:
                env[b.var] = _evaluate(v, env)
        return [np.asarray(x) for x in _flatten(_evaluate(main.body.body, env))]


def _is_call_tir(expr) -> bool:
    op = getattr(expr, "op", None)
    return op is not None and getattr(op, "name", "") == "relax.call_tir"


def _evaluate(expr, env):
    from tvm import relax

    if isinstance(expr, relax.Var) and expr in env:
        return env[expr]
    if isinstance(expr, relax.Tuple):
        return tuple(_evaluate(f, env) for f in expr.fields)
    if isinstance(expr, relax.TupleGetItem):
        return _evaluate(expr.tuple_value, env)[expr.index]
    raise UnsupportedBinding(f"the call interpreter cannot execute {type(expr).__name__}: "
                             f"{str(expr)[:200]}")


def _flatten(x) -> list:
    return [y for item in x for y in _flatten(item)] if isinstance(x, tuple) else [x]


# -- the execution hook ---------------------------------------------------------------------------
def run_graph(execution):
    """:meth:`fuzzharness.execute.Execution.run` for a graph case (see the module docstring)."""
    from fuzzharness.backends import backends
    from fuzzharness.census import census
    from fuzzharness.execute import FACT_STATUSES, Outcome, _StageFailed, output_digest
    from fuzzharness.verdict import Stage, Status, Verdict
    from generators.graphs import reference
    from generators.graphs.program import build_module
    from generators.graphs.spec import Graph
    from generators.inputs import make_inputs
    from oracles.compare import judge

    case = execution.case
    stage = execution.stage
    outcome = Outcome(Verdict(Status.HARNESS_ERROR, Stage.GENERATE))
    target = graph_target(case.target)
    schedule = case.schedule or {}
    try:
        with stage(Stage.GENERATE):
            graph = Graph.from_dict(case.params)
            mod = build_module(graph)
            specs = reference.input_specs(graph)
            inputs = make_inputs(specs, case.inputs["distribution"], case.inputs["seed"])
            outcome.inputs = inputs
            args = [inputs[s.name] for s in specs]
            vm = runs_on_vm(target)
            backend = None if vm else backends[target["kind"]]
        with stage(Stage.LOWER):
            legalized = legalize(mod, target, schedule.get("layout"))
        with stage(Stage.SCHEDULE):
            # a StaleTrace is the case's fault, not TVM's: a harness_error
            scheduled = apply_schedules(legalized, schedule, target)
            outcome.scheduled = scheduled
        if vm:
            with stage(Stage.CODEGEN):
                executable = build(scheduled, target, case.pass_config)
            with stage(Stage.BUILD):
                main = load_vm(executable)
            with stage(Stage.RUN):
                copies = [a.copy() for a in args]
                results = run_vm(main, copies)
        else:
            interp = CallInterpreter(scheduled, backend, target, case.pass_config)
            with stage(Stage.CODEGEN):
                interp.lower()
                interp.codegen()
            # (on the VM, relax.build lowers inside: no lowered program to read, no census)
            execution.features = census(scheduled, interp.lowered)
            with stage(Stage.BUILD):
                not_run = interp.build()
            if not_run is not None:
                outcome.verdict = Verdict(Status.INCONCLUSIVE, Stage.RUN,
                                          message=f"compiled, not run: {not_run}",
                                          timings=execution.timings,
                                          details={"not_run": not_run})
                return outcome
            with stage(Stage.RUN):
                copies = [a.copy() for a in args]
                results = interp.run(dict(zip([s.name for s in specs], copies, strict=True)))
        with stage(Stage.VERIFY):
            outputs = dict(zip(graph.outputs, results, strict=True))
            outcome.outputs = outputs
            clobbered = [s.name for s, a, c in zip(specs, args, copies, strict=True)
                         if not np.array_equal(a, c, equal_nan=True)]
            exact = case.oracle.get("mode") == "exact"
            with np.errstate(all="ignore"):
                expected = reference.expected(graph, inputs, exact=exact)
            outcome.expected = expected
            j = judge(expected, outputs)
        verdict = Verdict(j.status, Stage.VERIFY if j.status is not Status.PASS else Stage.DONE,
                          message=j.message, worst_error=j.worst_error, ratio=j.ratio,
                          worst_index=j.worst_index, worst_output=j.worst_output,
                          digest=output_digest(outputs), timings=execution.timings,
                          details={"functions": len(prim_functions(scheduled))})
        if j.inconclusive:
            verdict.details["inconclusive"] = j.inconclusive
        if clobbered and verdict.status in (Status.PASS, Status.INCONCLUSIVE):
            verdict.status, verdict.stage = Status.WRONG_RESULT, Stage.VERIFY
            verdict.message = f"the compiled graph overwrote its input(s) {', '.join(clobbered)}"
        if verdict.status in FACT_STATUSES:
            verdict.details["facts"] = graph_facts(target)
        outcome.verdict = verdict
    except _StageFailed as failed:
        outcome.verdict = failed.verdict
    return outcome


def graph_facts(target: dict[str, Any]) -> list[str]:
    """Facts for the bucket of a wrong answer (what the graph's ops and schedule primitives
    do not say): that it is a whole-graph case, and on which runtime it ran."""
    facts = ["relax"]
    if "texture" in (target.get("keys") or []):
        facts.append("texture")
    elif not runs_on_vm(target):
        facts.append(f"device:{target.get('kind')}")
    return facts
