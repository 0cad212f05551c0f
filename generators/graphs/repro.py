"""Repro scripts for graph cases: the Relax program as TVMScript, tvm + numpy only.

A script holds: a header (versions, target, mode, what is expected, how to read the exit
status); the graph as a Relax ``@I.ir_module`` (``mod.script()`` of the program the harness
built — checked to parse back to a structurally equal module); the compilation steps of the
case's mode, spelled with TVM's public API (layout conversion, the Relax legalization and
fusion passes, each re-scheduled PrimFunc as plain ``sch.<primitive>(...)`` calls from TVM's
``Trace.as_python`` — or the trace JSON applied with ``Trace.apply_json_to_schedule`` where
the Python form does not rebuild the same function —, dlight, the rest of the pipeline and
``relax.build``); the inputs and the float64 reference values and per-element bounds, packed
(zlib + base64 of the exact bytes); and a runner that compiles and runs in a child process
(so a crash of TVM is reported, not fatal) and judges in the parent.

Exit status, as for the single-PrimFunc repros of the minimizer engineer's writer: **1** the
bug reproduces, **0** fixed (a correct result), **2** something else happened.
:func:`verify` runs the script in a fresh isolated interpreter (``python -I``, from its own
directory, so an accidental import of this harness fails).

The campaign's repro writer (:func:`fuzzharness.repro.package.write_repro`) calls
:func:`write_script` here for graph cases; the returned :class:`Script` has the fields of the
TIR writer's (``text``, ``expect``, ``notes``, ``schedule_lines``).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from fuzzharness.case import Case
from fuzzharness.engine import hygiene
from fuzzharness.verdict import Status, Verdict

REPRODUCES, FIXED, OTHER = 1, 0, 2
CHILD_TIMEOUT = 300


class NotReproducible(Exception):
    """This graph case cannot be written as a standalone script (the reason says why)."""


@dataclasses.dataclass
class Script:
    text: str
    expect: dict[str, Any]
    notes: list[str]
    schedule_lines: list[str]


# -- expectations --------------------------------------------------------------------------
def error_pattern(message: str) -> str:
    """A regex for the identifying line of ``message`` (numbers and addresses may vary)."""
    from fuzzharness.buckets import salient_line

    line = salient_line(message).strip()
    parts, last = [], 0
    for m in re.finditer(r"0x[0-9a-fA-F]+|\d+", line):
        parts.append(re.escape(line[last:m.start()]))
        parts.append(r"0x[0-9a-fA-F]+" if m.group().startswith("0x") else r"\d+")
        last = m.end()
    parts.append(re.escape(line[last:]))
    return "".join(parts)


def expectation(verdict: Verdict) -> dict[str, Any]:
    d = verdict.details or {}
    exp: dict[str, Any] = {"symptom": verdict.status.value, "stage": verdict.stage.value}
    if verdict.status in (Status.WRONG_RESULT, Status.NAN_INF):
        exp["summary"] = ("an output element farther from the float64 reference than its error "
                          "bound" if verdict.status is Status.WRONG_RESULT else
                          "nan/inf where the float64 reference is finite")
    elif verdict.status is Status.CRASH and d.get("kind") == "signal":
        exp["signal"] = d.get("signal")
        exp["summary"] = f"the process killed by {d.get('signal')} in stage {verdict.stage.value}"
    elif verdict.status in (Status.COMPILE_ERROR, Status.CRASH) and verdict.message:
        exp["error"] = error_pattern(verdict.message)
        exp["summary"] = f"an error in stage {verdict.stage.value}: {verdict.message.splitlines()[0][:160]}"
    else:
        raise NotReproducible(f"a {verdict.status.value} at {verdict.stage.value} is not "
                              "something a repro script checks")
    return exp


# -- arrays -----------------------------------------------------------------------------------
def pack(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    blob = base64.b64encode(zlib.compress(a.tobytes(), 9)).decode()
    return f"_unpack({blob!r}, {a.dtype.str!r}, {tuple(int(s) for s in a.shape)!r})"


UNPACK = '''
def _unpack(blob, dtype, shape):
    """An array from its exact bytes (zlib + base64)."""
    return np.frombuffer(zlib.decompress(base64.b64decode(blob)), dtype=np.dtype(dtype)).reshape(shape).copy()
'''


# -- schedules --------------------------------------------------------------------------------
def _schedule_source(func, trace) -> tuple[str, list[str], str | None]:
    """(body lines of a ``def ...(sch)``, the call lines, a note) for one function's trace."""
    import tvm
    from tvm import s_tir

    from fuzzharness.tvm_support import replay_trace, structural_equal

    sch = replay_trace(func, trace)
    try:
        lines = [str(ln) for ln in sch.trace.as_python()]
        check = s_tir.Schedule(func)
        exec("\n".join(lines), {"sch": check, "T": tvm.script.tirx, "tvm": tvm})  # noqa: S102
        if structural_equal(check.mod, sch.mod):
            return "\n".join("    " + ln for ln in lines) or "    pass", lines, None
        why = "its Python form builds another function"
    except Exception as e:  # noqa: BLE001 - some instructions cannot be printed
        why = f"Trace.as_python failed ({type(e).__name__})"
    text = json.dumps(trace)
    return (f"    s_tir.Trace.apply_json_to_schedule(json.loads({text!r}), sch)  # {why}",
            ["s_tir.Trace.apply_json_to_schedule(<trace JSON>, sch)"], f"schedule as JSON: {why}")


# -- the script -------------------------------------------------------------------------------
def write_script(case: Case, verdict: Verdict, *, bucket: str = "", versions: dict | None = None,
                 title: str = "") -> Script:
    """The repro script of graph ``case`` whose verdict is ``verdict``."""
    from fuzzharness.pipelines.relax import (
        LAYOUTS,
        graph_target,
        legalize,
        prim_functions,
        runs_on_vm,
    )
    from fuzzharness.tvm_support import versions as tvm_versions
    from generators.graphs import reference
    from generators.graphs.program import build_module
    from generators.graphs.spec import Graph
    from generators.inputs import make_inputs

    target = graph_target(case.target)
    if not runs_on_vm(target) and verdict.stage.value not in ("generate", "lower"):
        raise NotReproducible(f"running on {target.get('kind')!r} needs a device runtime this "
                              "TVM wheel lacks; scripts cover llvm and the Relax passes")
    expect = expectation(verdict)
    graph = Graph.from_dict(case.params)
    mod = build_module(graph)
    module_text = mod.script()
    _check_roundtrip(mod, module_text)
    specs = reference.input_specs(graph)
    inputs = make_inputs(specs, case.inputs["distribution"], case.inputs["seed"])
    exact = case.oracle.get("mode") == "exact"
    with np.errstate(all="ignore"):
        expected = reference.expected(graph, inputs, exact=exact)
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
    head = _header(case, verdict, bucket, vers, expect, title, source, schedule.get("layout"))
    ref_lines = ["def reference():", '    """{output: (float64 value, per-element bound)} '
                 '(tvm-fuzzharness oracles/bounds.py, composed per op)."""', "    return {"]
    for name, e in expected.items():
        ref_lines.append(f"        {name!r}: ({pack(e.value)}, {pack(e.bound)}),")
    ref_lines.append("    }")
    input_lines = ["def make_inputs():", "    return ["]
    input_lines += [f"        {pack(inputs[s.name])},  # {s.name}" for s in specs]
    input_lines.append("    ]")
    parts = [
        head,
        "import base64\nimport json\nimport os\nimport re\nimport signal\nimport subprocess\n"
        "import sys\nimport tempfile\nimport zlib\n\nimport numpy as np\nimport tvm\n"
        "from tvm import relax, s_tir\nfrom tvm.script import ir as I\n"
        "from tvm.script import relax as R\nfrom tvm.script import tirx as T\n",
        f"TARGET = {_py(target)}\nPASS_CONFIG = {_py(case.pass_config)}\n"
        f"MODE = {source!r}\nLAYOUT = {_py(layout)}  # ConvertLayout desired (data, kernel) layouts of conv2d\n"
        f"TIMEOUT = {CHILD_TIMEOUT}  # seconds for the child process\n"
        f"# what tvm-fuzzharness saw: {verdict.line()[:200]}\n"
        f"EXPECT = {_py(expect)}\nOUTPUTS = {list(graph.outputs)!r}  # in the order main returns them\n",
        "# -- the graph, as Relax TVMScript " + "-" * 57 + "\n" + _strip_comments(module_text),
        "# -- schedules of the fused PrimFuncs " + "-" * 52 + "\n" + "\n\n".join(sched_defs)
        + f"\nSCHEDULES = {schedules}\n",
        "# -- inputs and the float64 reference " + "-" * 52 + "\n" + "\n".join(input_lines) + "\n\n\n"
        + "\n".join(ref_lines) + "\n" + UNPACK,
        hygiene.SCRIPT_SOURCE.strip("\n") + "\n",  # the child runs with heap hygiene
        RUNNER,
    ]
    text = "\n\n".join(p.rstrip("\n") + "\n" for p in parts)
    return Script(text, expect, notes, sched_lines)


def _check_roundtrip(mod, text: str) -> None:
    import tvm

    from fuzzharness.tvm_support import structural_equal

    if not structural_equal(tvm.script.from_source(text), mod):
        raise NotReproducible("the Relax module does not print and parse back to itself")


def _strip_comments(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith("# from tvm.script"))


def _py(obj: Any) -> str:
    return repr(json.loads(json.dumps(obj)))


def _header(case, verdict, bucket, vers, expect, title, source, layout) -> str:
    lines = [
        "#!/usr/bin/env python3",
        '"""' + (title or f"TVM bug reproducer: a Relax graph ({', '.join(case.origin.get('ops') or [])})"),
        "",
        f"Bucket  {bucket}" if bucket else "Bucket  (not bucketed)",
        f"TVM {vers.get('tvm')} · tvm-ffi {vers.get('tvm_ffi')} · LLVM {vers.get('llvm')} · "
        f"numpy {vers.get('numpy')} · Python {vers.get('python')}",
        f"Target  {json.dumps(case.target)} · PassContext config {json.dumps(case.pass_config)}",
        f"Mode    {source}" + (f" after ConvertLayout to {layout}" if layout else ""),
        f"Written by tvm-fuzzharness {vers.get('harness')} (case {case.id}"
        + (f", minimized from {case.origin['minimized_from']}" if case.origin.get("minimized_from") else "")
        + ")",
        f"Expects {expect['summary']}",
        "",
        "Needs only tvm and numpy:  python repro.py",
        "Exit status: 1 = the bug reproduces, 0 = fixed (a correct result), 2 = something else",
        "happened.  Compiling and running happen in a child process, so a crash of TVM is",
        "reported rather than fatal.",
        '"""',
    ]
    return "\n".join(lines) + "\n"


RUNNER = r'''
# -- compile and run: in a child process ------------------------------------------------------
def _stage(name):
    print(f"[repro] stage: {name}", file=sys.stderr, flush=True)


def _phase(name, tgt):
    """relax.pipeline.<name>(target); TVM 0.27's dispatcher misses the CPU dataflow_lower_passes."""
    from tvm.relax import pipeline as rp
    try:
        return getattr(rp, name)(tgt)
    except AttributeError:
        from tvm.relax.backend.cpu_generic import pipeline as cpu
        return getattr(cpu, name)(tgt)


def compile_and_run(inputs):
    tgt = tvm.target.Target(TARGET)
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
    _stage("codegen")
    with tvm.transform.PassContext(opt_level=3, config=PASS_CONFIG), tgt:
        mod = tvm.transform.Sequential(_phase("dataflow_lower_passes", tgt)
                                       + _phase("finalize_passes", tgt))(mod)
        ex = relax.build(mod, target=tgt, relax_pipeline=None)
    _stage("build")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    main = vm["main"]
    _stage("run")
    result = main(*[tvm.runtime.tensor(x) for x in inputs])
    results = [result] if isinstance(result, tvm.runtime.Tensor) else list(result)
    return {name: r.numpy() for name, r in zip(OUTPUTS, results)}


def _child(path):
    np.savez(path, **compile_and_run(make_inputs()))
    _stage("done")


# -- judge ----------------------------------------------------------------------------------
def _judge(outputs, expected):
    """(failed, message): the worst |output - reference| / bound (bound 0: bitwise equal)."""
    worst, message = -1.0, "no output elements"
    for name, (value, bound) in expected.items():
        got = np.asarray(outputs[name]).astype(np.float64)
        judged = np.isfinite(bound)
        bad = judged & np.isfinite(value) & ~np.isfinite(got)
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            return True, f"{name}{list(i)} = {float(got[i])!r} where the float64 reference is {float(value[i])!r}"
        special = ~np.isfinite(value) & ~((np.isnan(value) & np.isnan(got)) | (value == got))
        if special.any():
            i = tuple(int(v) for v in np.argwhere(special)[0])
            return True, f"{name}{list(i)} = {float(got[i])!r} where IEEE arithmetic gives {float(value[i])!r}"
        err = np.where(judged & np.isfinite(value), np.abs(got - np.where(np.isfinite(value), value, 0)), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(bound > 0, err / bound, np.where(err > 0, np.inf, 0.0))
        ratio = np.where(judged, ratio, 0.0)
        if ratio.size and ratio.max() > worst:
            i = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
            worst = float(ratio[i])
            message = (f"{name}{[int(v) for v in i]}: got {float(got[i])!r}, float64 reference "
                       f"{float(value[i])!r}, |error| {err[i]:.6g}, bound {bound[i]:.6g}, "
                       f"error/bound {worst:.6g}")
    return worst > 1.0, message


def check():
    print(f"TVM {tvm.__version__}, target {json.dumps(TARGET)}, mode {MODE}")
    print(f"expecting: {EXPECT['summary']}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "outputs.npz")
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path],
                                  capture_output=True, text=True, timeout=TIMEOUT,
                                  env=_hygiene_env())
        except subprocess.TimeoutExpired:
            print(f"actual:    no result within {TIMEOUT} s")
            return 2
        stages = [ln.split(": ", 1)[1] for ln in proc.stderr.splitlines() if ln.startswith("[repro] stage: ")]
        stage = stages[-1] if stages else "?"
        log = "\n".join(ln for ln in proc.stderr.splitlines() if not ln.startswith("[repro] stage: "))
        if proc.returncode < 0:
            name = signal.Signals(-proc.returncode).name
            print(f"actual:    the process died with {name} in stage {stage}")
            print("\n".join(log.splitlines()[-15:]))
            return 1 if EXPECT["symptom"] == "crash" and EXPECT.get("signal") in (None, name) else 2
        if proc.returncode != 0 or stage != "done":
            print(f"actual:    an exception in stage {stage}:")
            print("\n".join([ln for ln in log.splitlines() if ln.strip()][-12:]))
            return 1 if EXPECT.get("error") and re.search(EXPECT["error"], log) else 2
        with np.load(path) as data:
            outputs = {k: data[k] for k in data.files}
    failed, message = _judge(outputs, reference())
    print(f"actual:    {message}")
    if failed:
        return 1 if EXPECT["symptom"] in ("wrong_result", "nan_inf") else 2
    print("the output is correct" + ("" if EXPECT["symptom"] in ("wrong_result", "nan_inf")
                                     else f" (expected a {EXPECT['symptom']})"))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2])
        sys.exit(0)
    status = check()
    print({1: "RESULT: the bug reproduces (exit 1)", 0: "RESULT: fixed (exit 0)",
           2: "RESULT: something else happened (exit 2)"}[status])
    sys.exit(status)
'''


# -- verification -------------------------------------------------------------------------------
@dataclasses.dataclass
class Run:
    exit_code: int | None
    output: str

    @property
    def reproduced(self) -> bool:
        return self.exit_code == REPRODUCES


def run_script(path: str | Path, *, timeout: float = 900.0) -> Run:
    """Run ``path`` once in a fresh, isolated interpreter (``python -I``, from its folder)."""
    path = Path(path).resolve()
    try:
        p = subprocess.run([sys.executable, "-I", str(path)], capture_output=True, text=True,
                           timeout=timeout, cwd=path.parent)
    except subprocess.TimeoutExpired:
        return Run(None, f"(the repro script ran for more than {timeout:g} s)")
    return Run(p.returncode, (p.stdout + ("\n" + p.stderr if p.stderr.strip() else "")).strip())


def write_and_verify(case: Case, verdict: Verdict, out: str | Path, **kwargs) -> tuple[Script, Run]:
    """Write ``out/repro.py`` and ``out/case.json``; run the script once, fresh."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    script = write_script(case, verdict, **kwargs)
    (d / "case.json").write_text(case.to_json() + "\n")
    (d / "repro.py").write_text(script.text)
    return script, run_script(d / "repro.py")
