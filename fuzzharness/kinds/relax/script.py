"""Repro scripts for graph cases: the Relax program as TVMScript, tvm + numpy only.

A script holds: a header (versions, target, mode, what is expected, how to read the exit
status); the graph as a Relax ``@I.ir_module`` (``mod.script()`` of the program the harness
built — checked to parse back to a structurally equal module); the compilation steps of the
case's mode, spelled with TVM's public API (layout conversion, the Relax legalization and
fusion passes, each re-scheduled PrimFunc as plain ``sch.<primitive>(...)`` calls from TVM's
``Trace.as_python`` — or the trace JSON applied with ``Trace.apply_json_to_schedule`` where
the Python form does not rebuild the same function —, dlight, the rest of the pipeline and
``relax.build``); the inputs and the float64 reference values and per-element bounds (literal
when small, else packed exactly); and the shared runner (:data:`fuzzharness.repro.template.RUNNER`)
that compiles and runs in a child process (so a crash of TVM is reported, not fatal) and
judges in the parent.  The expected failure, the schedule calls, the header and the exit
statuses come from the shared kit (:mod:`fuzzharness.repro.kit`), as for TIR repros: exit 1
the bug reproduces, 0 fixed, 2 something else happened.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from fuzzharness.backends import redzone
from fuzzharness.core import hygiene
from fuzzharness.core.case import Case
from fuzzharness.core.relax_pipeline import (
    LAYOUTS,
    graph_target,
    legalize,
    prim_functions,
    runs_on_vm,
)
from fuzzharness.core.tvm_support import structural_equal
from fuzzharness.core.tvm_support import versions as tvm_versions
from fuzzharness.core.verdict import Status, Verdict
from fuzzharness.generators.graphs import reference
from fuzzharness.generators.graphs.program import build_module
from fuzzharness.generators.graphs.spec import Graph
from fuzzharness.generators.inputs import make_inputs
from fuzzharness.kinds.relax import graph_opencl
from fuzzharness.repro import arrays, gpu_runtime, kit, template

#: what a graph script can check: its runner judges outputs and catches errors and signals
CHECKED = (Status.WRONG_RESULT, Status.NAN_INF, Status.CRASH, Status.COMPILE_ERROR)


def write_script(case: Case, verdict: Verdict, *, bucket: str = "", versions: dict | None = None,
                 title: str = "", **_unused: Any) -> kit.Script:
    """The repro script of graph ``case`` whose verdict is ``verdict``."""
    import tvm

    target = graph_target(case.target)
    # on OpenCL the script launches TVM's kernels itself (through pyopencl), call by call
    opencl = target.get("kind") == "opencl" and verdict.stage.value not in ("generate", "lower")
    if not runs_on_vm(target) and not opencl and verdict.stage.value not in ("generate", "lower"):
        raise kit.NotReproducible(f"running on {target.get('kind')!r} needs a device runtime this "
                              "TVM wheel lacks; scripts cover llvm, OpenCL and the Relax passes")
    if verdict.status not in CHECKED:
        raise kit.NotReproducible(f"a {verdict.status.value} at {verdict.stage.value} is not "
                              "something a graph repro script checks")
    expect = kit.expectation_of(verdict)
    graph = Graph.from_dict(case.params)
    mod = build_module(graph)
    module_text = mod.script()
    if not structural_equal(tvm.script.from_source(module_text), mod):
        raise kit.NotReproducible("the Relax module does not print and parse back to itself")
    specs = reference.input_specs(graph)
    inputs = make_inputs(specs, case.inputs["distribution"], case.inputs["seed"])
    with np.errstate(all="ignore"):
        expected = reference.expected(graph, inputs, exact=case.oracle.get("mode") == "exact")
    schedule = case.schedule or {}
    source = schedule.get("source", "graph:default")
    notes: list[str] = []
    sched_defs, sched_lines = [], []
    functions = schedule.get("functions") or {}
    if functions:
        funcs = prim_functions(legalize(mod, target, schedule.get("layout")))
        for i, name in enumerate(sorted(functions)):
            body, lines, note = _schedule_source(funcs[name], functions[name]["trace"])
            sched_defs.append(f"def schedule_{i}(sch):  # {name}\n{body}\n")
            sched_lines += [f"# {name}"] + lines
            if note:
                notes.append(f"{name}: {note}")
    schedules = "{" + ", ".join(f"{n!r}: schedule_{i}" for i, n in enumerate(sorted(functions))) + "}"
    vers = versions or tvm_versions()
    layout = LAYOUTS.get(schedule.get("layout") or "", None)
    ref_lines = ["def reference(x):", '    """{output: (float64 value, per-element bound)} for the '
                 'inputs above (tvm-fuzzharness oracles/bounds.py, composed per op)."""',
                 "    return {"]
    for name, e in expected.items():
        ref_lines.append(f"        {name!r}: ({arrays.array_source(e.value)}, "
                         f"{arrays.array_source(e.bound)}),")
    ref_lines.append("    }")
    input_lines = ["def make_inputs():", "    return {"]
    input_lines += [f"        {s.name!r}: {arrays.array_source(inputs[s.name])}," for s in specs]
    input_lines.append("    }")
    data = "\n".join(input_lines) + "\n\n\n" + "\n".join(ref_lines) + "\n"
    needs_ml = "ml_dtypes" in data
    parts = [
        _header(case, verdict, bucket, vers, expect, title, source, schedule.get("layout"),
                "tvm, numpy and pyopencl (with an OpenCL device)" if opencl else "tvm and numpy"),
        template.STDLIB_IMPORTS + template.PRELUDE,
        ("import ml_dtypes\n" if needs_ml else "")
        + "import numpy as np\nimport tvm\nfrom tvm import relax, s_tir\n"
        "from tvm.script import ir as I\nfrom tvm.script import relax as R\n"
        "from tvm.script import tirx as T\n" + kit.tensor_intrinsics_import(case.schedule),
        f"TARGET = {kit.py_literal(target)}\nPASS_CONFIG = {kit.py_literal(case.pass_config)}\n"
        f"MODE = {source!r}\nLAYOUT = {kit.py_literal(layout)}  # ConvertLayout desired (data, kernel) "
        "layouts of conv2d\n"
        f"TIMEOUT = {kit.DEFAULT_CHILD_TIMEOUT}  # seconds for the child process\n"
        f"# what tvm-fuzzharness saw: {verdict.line()[:200]}\n"
        f"EXPECT = {kit.py_literal(expect)}\n"
        f"INPUTS = {[s.name for s in specs]!r}  # main's parameters\n"
        f"OUTPUTS = {list(graph.outputs)!r}  # in the order main returns them\n",
        "# -- the graph, as Relax TVMScript " + "-" * 57 + "\n" + _strip_comments(module_text),
        "# -- schedules of the fused PrimFuncs " + "-" * 52 + "\n" + "\n\n".join(sched_defs)
        + f"\nSCHEDULES = {schedules}\n",
        "# -- inputs and the float64 reference " + "-" * 52 + "\n" + data,
    ]
    if opencl:
        parts.append(graph_opencl.launches_source(mod, target, schedule, case.pass_config))
    if "_unpack(" in data:
        parts.append(arrays.UNPACK_HELPER.strip("\n") + "\n")
    if opencl:
        notes.append("OpenCL kernels generated by TVM, launched call by call through pyopencl")
        parts += [gpu_runtime.OPENCL_RUNTIME.strip("\n") + "\n", redzone.SCRIPT_SOURCE.strip("\n") + "\n"]
    parts += [LOWER.strip("\n") + "\n", (graph_opencl.COMPILE if opencl else COMPILE).strip("\n") + "\n",
              hygiene.SCRIPT_SOURCE.strip("\n") + "\n",  # the child runs with heap hygiene
              template.RUNNER.strip("\n") + "\n"]
    text = "\n\n".join(p.rstrip("\n") + "\n" for p in parts)
    return kit.Script(text, expect, notes, sched_lines)


def _schedule_source(func, trace) -> tuple[str, list[str], str | None]:
    """(body lines of a ``def ...(sch)``, the call lines, a note) for one function's trace."""
    lines, why = kit.schedule_calls(func, trace)
    if lines is not None:
        return "\n".join("    " + ln for ln in lines) or "    pass", lines, None
    text = json.dumps(trace)
    return (f"    s_tir.Trace.apply_json_to_schedule(json.loads({text!r}), sch)  # {why}",
            ["s_tir.Trace.apply_json_to_schedule(<trace JSON>, sch)"], f"schedule as JSON: {why}")


def _strip_comments(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith("# from tvm.script"))


def _header(case, verdict, bucket, vers, expect, title, source, layout, needs) -> str:
    return kit.header(title or f"TVM bug reproducer: a Relax graph ({', '.join(case.origin.get('ops') or [])})", [
        f"Bucket  {bucket}" if bucket else "Bucket  (not bucketed)",
        f"TVM {vers.get('tvm')} · tvm-ffi {vers.get('tvm_ffi')} · LLVM {vers.get('llvm')} · "
        f"numpy {vers.get('numpy')} · Python {vers.get('python')}",
        f"Target  {json.dumps(case.target)} · PassContext config {json.dumps(case.pass_config)}",
        f"Mode    {source}" + (f" after ConvertLayout to {layout}" if layout else ""),
        f"Written by tvm-fuzzharness {vers.get('harness')} (case {case.id}"
        + (f", minimized from {case.origin['minimized_from']}" if case.origin.get("minimized_from") else "")
        + ")",
    ], expect, needs)


#: the Relax passes up to the scheduled fused PrimFuncs (every graph script; then its compile_and_run)
LOWER = r'''
# -- the compilation steps of the case's mode -------------------------------------------------
def _phase(name, tgt):
    """relax.pipeline.<name>(target); TVM 0.27's dispatcher misses the CPU dataflow_lower_passes."""
    from tvm.relax import pipeline as rp
    try:
        return getattr(rp, name)(tgt)
    except AttributeError:
        from tvm.relax.backend.cpu_generic import pipeline as cpu
        return getattr(cpu, name)(tgt)


def lower_and_schedule(tgt):
    """The graph through layout conversion, library dispatch and legalization (FuseOps,
    FuseTIR), its fused PrimFuncs scheduled as the case says."""
    mod = Module
    _stage("lower")
    with tgt:
        if LAYOUT:
            mod = relax.transform.ConvertLayout({"relax.nn.conv2d": LAYOUT})(mod)
            mod = relax.transform.Normalize()(mod)
        mod = tvm.transform.Sequential(_phase("library_dispatch_passes", tgt)
                                       + _phase("legalize_passes", tgt))(mod)
    _stage("schedule")
    if MODE == "graph:dlight":
        from tvm.s_tir import dlight as dl
        with tgt:
            mod = dl.ApplyDefaultSchedule(dl.cpu.GEMV(), dl.cpu.Reduction())(mod)
    for name, fn in SCHEDULES.items():
        funcs = dict(mod.functions.items())
        gv = next(g for g in funcs if g.name_hint == name)
        sch = s_tir.Schedule(funcs[gv])
        fn(sch)
        funcs[gv] = sch.mod["main"].with_attr("tirx.is_scheduled", True)
        mod = tvm.IRModule(funcs, attrs=mod.attrs)
    return mod
'''

#: the graph's compile_and_run on the VM (the rest of the runner is the shared template.RUNNER)
COMPILE = r'''
def compile_and_run(x, scheduled=True):
    tgt = tvm.target.Target(TARGET)
    mod = lower_and_schedule(tgt)
    _stage("codegen")
    with tvm.transform.PassContext(opt_level=3, config=PASS_CONFIG), tgt:
        mod = tvm.transform.Sequential(_phase("dataflow_lower_passes", tgt)
                                       + _phase("finalize_passes", tgt))(mod)
        ex = relax.build(mod, target=tgt, relax_pipeline=None)
    _stage("build")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    main = vm["main"]
    _stage("run")
    result = main(*[tvm.runtime.tensor(x[name]) for name in INPUTS])
    results = [result] if isinstance(result, tvm.runtime.Tensor) else list(result)
    return {name: r.numpy() for name, r in zip(OUTPUTS, results)}
'''
