"""Write a standalone repro script for one failing case: one Python file, tvm + numpy only.

The script holds, in this order: a header (TVM, tvm-ffi, LLVM, numpy and Python versions,
target, date, harness version, bucket signature, how to read the exit status); the target
and PassContext configuration; the unscheduled program as TVMScript; the schedule as plain
``sch.<primitive>(...)`` calls (TVM's ``Trace.as_python``); the inputs (literal or packed
arrays, or regenerated from the seed with numpy); the float64 reference and the error bound
(:mod:`fuzzharness.repro.reference`); and the fixed runner (:mod:`fuzzharness.repro.template`)
that compiles and runs in a child process and judges in the parent.

Nothing of this harness is imported by the script.  Every generated part is checked here
before the text is returned: the schedule calls rebuild a module structurally equal to the
replayed trace (else the trace is embedded as JSON and applied with TVM's
``Trace.apply_json_to_schedule``), the input code reproduces the harness's inputs bit for
bit, the reference function the harness's reference and bounds.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from typing import Any

import numpy as np

from fuzzharness.buckets import Signature, salient_line
from fuzzharness.case import Case
from fuzzharness.repro import arrays, template
from fuzzharness.repro.reference import Expectation, expectation, reference_source
from fuzzharness.verdict import Status, Verdict

DEFAULT_CHILD_TIMEOUT = 300  # seconds; a hang bucket uses the harness's own timeout
#: the harness's stages → the script's (tvm.compile lowers and generates code in one call)
SCRIPT_STAGES = {"lower": "compile", "codegen": "compile", "build": "build", "run": "run",
                 "schedule": "schedule", "verify": "run"}


class NotReproducible(Exception):
    """This case cannot be written as a standalone script (the reason says why)."""


@dataclasses.dataclass
class Script:
    text: str
    expect: dict[str, Any]
    notes: list[str]  # what the script embeds rather than computes, and why
    schedule_lines: list[str]  # the sch.<primitive>(...) calls (for the issue text)


# -- the expected failure ------------------------------------------------------------------------
_VARIABLE = re.compile(r"0x[0-9a-fA-F]+|\d+")


def error_pattern(message: str) -> str:
    """A regular expression matching ``message``'s identifying line in any run: numbers and
    addresses (which vary between runs and instances) match any number or address."""
    line = salient_line(message).strip()
    parts, last = [], 0
    for m in _VARIABLE.finditer(line):
        parts.append(re.escape(line[last:m.start()]))
        parts.append(r"0x[0-9a-fA-F]+" if m.group().startswith("0x") else r"\d+")
        last = m.end()
    parts.append(re.escape(line[last:]))
    return "".join(parts).strip()


def expectation_of(case: Case, verdict: Verdict, timeout: float | None) -> dict[str, Any]:
    d = verdict.details or {}
    exp: dict[str, Any] = {"symptom": verdict.status.value, "stage": verdict.stage.value,
                           "compare": "reference"}
    if verdict.status is Status.ORDER_PRESERVING_DIVERGENCE:
        exp["compare"] = "unscheduled"
        exp["summary"] = "output bits that differ from the unscheduled program's"
    elif verdict.status in (Status.WRONG_RESULT, Status.NAN_INF) and \
            str(d.get("decided_by", "")).startswith("emulation"):
        exp["summary"] = ("an output element that differs bit for bit from the program's own "
                          "arithmetic in its own dtypes (same-order emulation)")
    elif verdict.status in (Status.WRONG_RESULT, Status.NAN_INF):
        exp["summary"] = ("an output element farther from the float64 reference than its "
                          "error bound" if verdict.status is Status.WRONG_RESULT
                          else "nan/inf where the float64 reference is finite")
    elif verdict.status is Status.CRASH and d.get("kind") == "signal":
        exp["signal"] = d.get("signal")
        exp["summary"] = f"the process killed by {d.get('signal')} in stage {verdict.stage.value}"
    elif verdict.status is Status.TIMEOUT:
        exp["summary"] = f"no result within {timeout:g} s (stage {verdict.stage.value})"
    elif verdict.message:
        exp["error"] = error_pattern(verdict.message)  # numbers and addresses may vary
        when = SCRIPT_STAGES.get(verdict.stage.value, verdict.stage.value)
        exp["summary"] = (f"an error in stage {when} (the harness's {verdict.stage.value}): "
                          f"{salient_line(verdict.message)[:160]}")
    else:
        raise NotReproducible(f"a {verdict.status.value} without a message or signal "
                              "cannot be checked by a script")
    return exp


# -- sections ------------------------------------------------------------------------------------
def schedule_source(case: Case, func, failing_call: str | None = None) -> tuple[str, list[str], list[str]]:
    """(``def schedule(sch)`` source, the call lines, notes).

    ``failing_call``: a last ``sch.<primitive>(...)`` line, the call that raises (a failure
    while the schedule was drawn, :mod:`fuzzharness.repro.generation_failure`).
    """
    text, lines, notes = _trace_source(case, func)
    if failing_call is None:
        return text, lines, notes
    if text.rstrip().endswith("pass  # no schedule: the program as written"):
        text = "def schedule(sch):\n"
    return (text.rstrip("\n") + f"\n    # the call TVM fails on (it should apply, or raise a ScheduleError):\n"
            f"    {failing_call}\n", lines, notes)


def _trace_source(case: Case, func) -> tuple[str, list[str], list[str]]:
    import tvm
    from tvm import s_tir

    from fuzzharness.tvm_support import replay_trace, structural_equal

    if not case.trace or not case.trace[0]:
        return ("def schedule(sch):\n    pass  # no schedule: the program as written\n", [], [])
    sch = replay_trace(func, case.trace)
    try:
        lines = [str(ln) for ln in sch.trace.as_python()]
        check = s_tir.Schedule(func)
        exec("\n".join(lines), {"sch": check, "T": tvm.script.tirx, "tvm": tvm})  # noqa: S102
        if structural_equal(check.mod, sch.mod):
            body = "\n".join("    " + ln for ln in lines)
            return f"def schedule(sch):\n{body}\n", lines, []
        why = "its Python form builds a different module"
    except Exception as e:  # noqa: BLE001 - e.g. DecomposePadding cannot be printed
        why = f"Trace.as_python failed ({type(e).__name__}: {str(e).splitlines()[0][:120]})"
    text = json.dumps(case.trace)
    return (f"TRACE_JSON = json.loads({text!r})\n\n\ndef schedule(sch):\n"
            f"    # {why}: the trace is applied with TVM's own trace API\n"
            "    s_tir.Trace.apply_json_to_schedule(TRACE_JSON, sch)\n",
            [f"s_tir.Trace.apply_json_to_schedule({text}, sch)"], [f"schedule as JSON: {why}"])


_DIST_CODE = {
    "uniform": ["x = rng.uniform(-{s}, {s}, {shape})"],
    "normal": ["x = np.clip(rng.normal(0.0, {s} / 4, {shape}), -{s}, {s})"],
    "cancellation": [
        "base = rng.uniform(0.5, 1.0, {shape}) * {s}",
        "flat = base.reshape(-1)  # odd elements nearly cancel their even neighbours",
        "flat[1::2] = -flat[0 : flat.size - flat.size % 2 : 2] * (1 + rng.uniform(-1e-3, 1e-3, flat.size // 2))",
        "x = flat.reshape({shape}) * rng.choice([-1.0, 1.0])",
    ],
    "wide_range": ["x = {s} * np.exp2(rng.uniform(-12.0, 0.0, {shape})) * rng.choice([-1.0, 1.0], {shape})"],
    "small_ints": ["x = rng.integers(-{m}, {m}, {shape}, endpoint=True).astype(np.float64)"],
    "ones": ["x = np.ones({shape})"],
    "tiny_ints": ["x = rng.integers(-{t}, {t}, {shape}, endpoint=True).astype(np.float64)"],
}


def _generated_input(case: Case, index: int, spec) -> list[str] | None:
    from oracles import numerics

    code = _DIST_CODE.get(case.inputs.get("distribution"))
    if code is None:
        return None
    shape = tuple(int(d) for d in spec.shape)
    lines = [f"rng = np.random.default_rng([{int(case.inputs['seed'])}, {index}])  # PCG64"]
    from generators.inputs import TINY_INT

    lines += [ln.format(s=repr(float(spec.scale)), m=int(spec.int_max),
                        t=min(int(spec.int_max), TINY_INT), shape=shape) for ln in code]
    if numerics.is_int(spec.dtype):
        lo, hi = numerics.int_range(spec.dtype)
        lines.append(f"x = np.clip(np.rint(x), {lo}, {hi})")
    lines.append(f"{spec.name} = x.astype({arrays.dtype_source(numerics.numpy_dtype(spec.dtype))})"
                 "  # rounded once to the kernel's dtype")
    return lines


def inputs_source(case: Case, e: Expectation) -> tuple[str, list[str]]:
    """``def make_inputs()`` source (checked against the harness's arrays) and notes."""
    body, notes = [], []
    for i, spec in enumerate(e.input_specs):
        a = e.inputs[spec.name]
        literal = arrays.array_source(a)
        if not arrays.is_packed(literal):
            body.append(f"{spec.name} = {literal}")
            continue
        gen = _generated_input(case, i, spec)
        if gen is not None and _run_lines(gen, spec.name, a):
            body.append(f"# {case.inputs['distribution']} inputs from seed {case.inputs['seed']}, "
                        f"as tvm-fuzzharness draws them (generators/inputs.py)")
            body += gen
        else:
            body.append(f"{spec.name} = {literal}")
            notes.append(f"input {spec.name} embedded (packed)")
    body.append("return {" + ", ".join(f"{s.name!r}: {s.name}" for s in e.input_specs) + "}")
    text = "def make_inputs():\n" + "\n".join("    " + ln for ln in body) + "\n"
    ns = _namespace()
    exec(text, ns)  # noqa: S102 - our own generated source
    got = ns["make_inputs"]()
    for spec in e.input_specs:
        if not arrays.same_bits(got[spec.name], e.inputs[spec.name]):
            raise AssertionError(f"generated inputs differ from the harness's ({spec.name})")
    return text, notes


def _namespace() -> dict[str, Any]:
    import ml_dtypes

    ns: dict[str, Any] = {"np": np, "ml_dtypes": ml_dtypes}
    exec(arrays.UNPACK_HELPER, ns)  # noqa: S102
    return ns


def _run_lines(lines: list[str], name: str, want: np.ndarray) -> bool:
    ns = _namespace()
    try:
        exec("\n".join(lines), ns)  # noqa: S102
    except Exception:  # noqa: BLE001
        return False
    return arrays.same_bits(np.asarray(ns[name]), want)


def layouts_source(e: Expectation) -> str:
    if not e.layouts:
        return template.IDENTITY_LAYOUTS
    position, kshape, pad, shape = {}, {}, {}, {}
    for name, layout in e.layouts.items():
        ks = tuple(int(s) for s in layout.kernel_shape())
        position[name] = np.ravel_multi_index(layout.coordinates(), ks).astype(np.int64).tolist()
        kshape[name], pad[name], shape[name] = ks, float(layout.pad_value), tuple(layout.shape)
    return (f"POSITION = {position!r}\nKERNEL_SHAPE = {kshape!r}\nPAD = {pad!r}\n"
            f"ORIGINAL_SHAPE = {shape!r}\n" + template.RELAYOUT)


# -- the whole script ----------------------------------------------------------------------------
def write_script(case: Case, verdict: Verdict, *, bucket: str, signature: Signature | None,
                 versions: dict[str, str], timeout: float | None = None,
                 date: str | None = None, title: str = "",
                 failing_call: str | None = None, first_seen: str = "") -> Script:
    """The repro script of ``case`` (whose verdict is ``verdict``) as text."""
    kind = case.target.get("kind")
    if kind != "llvm" and verdict.stage.value in ("run", "verify", "done"):
        raise NotReproducible(f"running on a {kind!r} target needs its runtime; "
                              "a standalone script is written for llvm, or for compile-time bugs")
    e = expectation(case, verdict)
    if verdict.status is Status.TIMEOUT:
        timeout = float(verdict.details.get("timeout_s") or timeout or 60)
    expect = expectation_of(case, verdict, timeout)
    child_timeout = int(round(timeout)) if verdict.status is Status.TIMEOUT and timeout else DEFAULT_CHILD_TIMEOUT
    sched_text, sched_lines, notes = schedule_source(case, e.func, failing_call)
    inputs_text, in_notes = inputs_source(case, e)
    ref_text, inline = reference_source(case, e)
    notes += in_notes + ([] if inline else ["reference values and bounds embedded"])
    needs_ml = any(arrays.needs_ml_dtypes(a.dtype) for a in e.inputs.values()) or any(
        "bfloat16" in str(o.dtype) for o in e.output_specs)
    outputs = {o.name: (tuple(int(s) for s in o.shape), _np_dtype_name(o.dtype)) for o in e.output_specs}
    when = date or datetime.date.today().isoformat()
    header = _header(case, verdict, bucket, signature, versions, when, title, expect, first_seen)
    parts = [
        header,
        "import json\nimport os\nimport re\nimport signal\nimport subprocess\nimport sys\n"
        "import tempfile\n\n" + ("import ml_dtypes\n" if needs_ml else "") +
        "import numpy as np\nimport tvm\nfrom tvm import s_tir\nfrom tvm.script import tirx as T\n",
        f"TARGET = {_py(case.target)}\nPASS_CONFIG = {_py(case.pass_config)}\n"
        f"TIMEOUT = {child_timeout}  # seconds for the child process\n"
        f"# what tvm-fuzzharness saw: {verdict.line()[:200]}\n"
        f"EXPECT = {_py(expect)}\n",
        "# -- the program, unscheduled " + "-" * 62 + "\n" + e.source,
        "# -- the schedule " + "-" * 73 + "\n" + sched_text,
        "# -- inputs and the float64 reference " + "-" * 52 + "\n"
        f"INPUTS = {[s.name for s in e.input_specs]!r}  # kernel parameters: these, then OUTPUTS\n"
        f"OUTPUTS = {outputs!r}  # name: (shape, dtype)\n\n\n" + inputs_text,
        ref_text,
        layouts_source(e),
    ]
    if any("_unpack(" in p for p in (inputs_text, ref_text)):
        parts.append(arrays.UNPACK_HELPER.strip("\n") + "\n")
    parts.append(template.RUNNER.strip("\n") + "\n")
    text = "\n\n".join(p.rstrip("\n") + "\n" for p in parts)
    return Script(text, expect, notes, sched_lines)


def _np_dtype_name(dtype: str) -> str:
    from oracles.numerics import numpy_dtype

    return numpy_dtype(dtype).name


def _py(obj: Any) -> str:
    """A Python literal for plain JSON data (True/False/None spelled the Python way)."""
    return repr(json.loads(json.dumps(obj)))


def _header(case, verdict, bucket, signature, versions, when, title, expect, first_seen) -> str:
    sig_title = signature.title() if signature is not None else ""
    lines = [
        "#!/usr/bin/env python3",
        '"""' + (title or "TVM bug reproducer"),
        "",
        f"Bucket  {bucket}" + (f", first seen as {first_seen}" if first_seen and first_seen != sig_title else ""),
        f"        this case: {sig_title}",
        f"TVM {versions.get('tvm')} · tvm-ffi {versions.get('tvm_ffi')} · LLVM {versions.get('llvm')}"
        f" · numpy {versions.get('numpy')} · Python {versions.get('python')}",
        f"Target  {json.dumps(case.target)} · PassContext config {json.dumps(case.pass_config)}",
        f"Written {when} by tvm-fuzzharness {versions.get('harness')} (case {case.id}"
        + (f", minimized from {case.origin['minimized_from']}" if case.origin.get("minimized_from") else "")
        + ")",
        f"Expects {expect['summary']}",
        "",
        "Needs only tvm and numpy:  python repro.py",
        "Exit status: 1 = the bug reproduces, 0 = fixed (a correct result, or TVM now refuses the",
        "schedule with a ScheduleError), 2 = something else happened.  Compiling and running",
        "happen in a child process, so a crash of TVM is reported rather than fatal.",
        '"""',
    ]
    return "\n".join(lines) + "\n"
