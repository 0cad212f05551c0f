"""Graph cases: a Relax program through TVM's whole pipeline, run, and judged.

A graph case (``case.workload["name"] == "graph"``, the graph spec in its params, see
:mod:`fuzzharness.generators.graphs`) is compiled in one of these *modes* — each a differential axis,
judged against the same float64 reference:

``graph:default``       TVM's default Relax pipeline for the target: library dispatch,
                        ``LegalizeOps``, ``AnnotateTIROpPattern``, ``FoldConstant``,
                        ``FuseOps``, ``FuseTIR`` (on GPU targets also the default dlight
                        schedules), then dataflow lowering, memory planning and the VM
                        codegen — what ``relax.get_default_pipeline(target)`` runs
``graph:dlight``        the same, with dlight's CPU rules (``GEMV``, ``Reduction``) scheduling
                        the fused PrimFuncs (llvm)
``graph:random``        the fused PrimFuncs re-scheduled by the random schedule generator
                        (:func:`fuzzharness.generators.schedules.random_schedule`), one stored trace per
                        function (``case.schedule["functions"]``)
``graph:metaschedule``  the same with MetaSchedule design-space samples
                        (:mod:`fuzzharness.generators.schedules.metaschedule`)

Independently, ``case.schedule["layout"]`` names a ``ConvertLayout`` applied first
(:data:`LAYOUTS`: NCHW → NHWC, NCHW → NCHW4c, ...).  The target decides how the program
runs: on llvm with ``relax.VirtualMachine`` (the real runtime: VM codegen, memory planning,
the packed calls); on a GPU target — the Adreno texture pipeline (``{"kind": "opencl",
"device": "adreno"}`` with the ``texture`` key) or plain OpenCL/CUDA — the PyPI wheel has no
device runtime, so :class:`CallInterpreter` executes the lowered ``main`` itself: every
``call_tir`` is one PrimFunc compiled and launched by the harness's TIR backend for that
target (:mod:`fuzzharness.backends`), intermediate tensors handed over as arrays (texture
scopes are laid out and read back as TVM lays them out).

Stages (announced like the TIR path's, :class:`fuzzharness.execution.stages.Execution`):
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

from typing import Any

import numpy as np

from fuzzharness.backends import backends
from fuzzharness.backends.base import poison
from fuzzharness.core.kinds import RunKind
from fuzzharness.core.relax_pipeline import (
    apply_schedules,
    build,
    graph_target,
    legalize,
    load_vm,
    prim_functions,
    run_vm,
    runs_on_vm,
)
from fuzzharness.core.verdict import Stage
from fuzzharness.execution import rejections, relax_check
from fuzzharness.execution.census import census
from fuzzharness.execution.facts import frontend_facts, schedule_facts
from fuzzharness.execution.stages import CaseRun, Execution
from fuzzharness.generators.graphs import reference
from fuzzharness.generators.graphs.program import build_module
from fuzzharness.generators.graphs.spec import Graph
from fuzzharness.generators.inputs import make_inputs
from fuzzharness.oracles import target_math
from fuzzharness.oracles.compare import judge
from fuzzharness.oracles.numerics import numpy_dtype


class UnsupportedBinding(Exception):
    """The lowered ``main`` holds something the call interpreter cannot execute."""


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

    def called(self) -> list[str]:
        names = []
        for b in self.calls():
            v = b.value
            if _is_call_tir(v) and v.args[0].name_hint not in names:
                names.append(v.args[0].name_hint)
        return names

    def lower(self) -> None:
        import tvm

        funcs = prim_functions(self.mod)
        for name in self.called():
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
def run_graph(execution: Execution, result: CaseRun) -> None:
    """Run a graph case's stages (see the module docstring), filling ``result``."""
    case, stage = execution.case, execution.stage
    target = graph_target(case.target)
    schedule = case.schedule or {}
    with stage(Stage.GENERATE):
        graph = Graph.from_dict(case.params)
        mod = build_module(graph)
        specs = reference.input_specs(graph)
        inputs = make_inputs(specs, case.inputs["distribution"], case.inputs["seed"])
        result.inputs = inputs
        args = [inputs[s.name] for s in specs]
        vm = runs_on_vm(target)
        backend = None if vm else backends[target["kind"]]
    with stage(Stage.LOWER):
        legalized = legalize(mod, target, schedule.get("layout"))
    with stage(Stage.SCHEDULE):
        # a StaleTrace is the case's fault, not TVM's: a harness_error
        scheduled = apply_schedules(legalized, schedule, target)
        result.scheduled = scheduled
        funcs = prim_functions(legalized)
        for name, entry in sorted((schedule.get("functions") or {}).items()):
            rejections.check_request(funcs[name], entry.get("trace"))  # an edited trace's
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
            result.verdict = execution.not_run(not_run)
            return
        with stage(Stage.RUN):
            copies = [a.copy() for a in args]
            results = interp.run(dict(zip([s.name for s in specs], copies, strict=True)))
    with stage(Stage.VERIFY):
        outputs = dict(zip(graph.outputs, results, strict=True))
        result.outputs = outputs
        clobbered = [s.name for s, a, c in zip(specs, args, copies, strict=True)
                     if not np.array_equal(a, c, equal_nan=True)]
        exact = case.oracle.get("mode") == "exact"
        # the target's division/library error (fuzzharness.oracles.target_math)
        with np.errstate(all="ignore"), target_math.applied(case.target):
            expected = reference.expected(graph, inputs, exact=exact)
        result.expected = expected
        j = judge(expected, outputs)
    problems = [f"the compiled graph overwrote its input(s) {', '.join(clobbered)}"] if clobbered else []
    result.verdict = execution.conclude(
        j, outputs, details={"functions": len(prim_functions(scheduled))}, problems=problems,
        facts=lambda: graph_facts(target, scheduled, legalized, schedule))


def graph_facts(target: dict[str, Any], scheduled=None, legalized=None,
                schedule: dict[str, Any] | None = None) -> list[str]:
    """Facts for the bucket of a wrong answer (what the graph's ops and schedule primitives
    do not say): that it is a whole-graph case, on which runtime it ran, and the schedule
    facts of its PrimFuncs (:func:`fuzzharness.execution.facts.schedule_facts`: a mechanism
    fact such as ``alloc_in_vectorized_loop`` is the same bug in a graph as in one kernel),
    and the frontend facts of the fused functions its schedule acts on, before it did
    (:func:`fuzzharness.execution.facts.frontend_facts`)."""
    facts = ["relax"]
    if "texture" in (target.get("keys") or []):
        facts.append("texture")
    elif not runs_on_vm(target):
        facts.append(f"device:{target.get('kind')}")
    if scheduled is not None:
        import tvm

        facts += schedule_facts(tvm.IRModule(prim_functions(scheduled)))
    if legalized is not None:  # the fused functions a schedule acts on, as FuseTIR made them
        funcs = prim_functions(legalized)
        facts += frontend_facts([funcs[n] for n in (schedule or {}).get("functions") or {}
                                 if n in funcs])
    return facts


class RelaxRun(RunKind):
    """The Relax kind's protocol at the execution layer (:mod:`fuzzharness.core.kinds`)."""

    name = "relax"

    def run(self, execution, result) -> None:
        run_graph(execution, result)

    def check_case(self, case) -> str | None:
        return relax_check.check_case(case)


RUN = RelaxRun()
