"""Write a standalone repro script for one failing case: one Python file, tvm + numpy only.

The script holds, in this order: a header (TVM, tvm-ffi, LLVM, numpy and Python versions,
target, date, harness version, bucket signature, how to read the exit status); the target
and PassContext configuration; the unscheduled program as TVMScript; the schedule as plain
``sch.<primitive>(...)`` calls (TVM's ``Trace.as_python``); the inputs (literal or packed
arrays, or regenerated from the seed with numpy); the float64 reference and the error bound
(:mod:`fuzzharness.kinds.tir.reference`); and the fixed runner (:mod:`fuzzharness.repro.template`)
that compiles and runs in a child process and judges in the parent.

Nothing of this harness is imported by the script.  Every generated part is checked here
before the text is returned: the schedule calls rebuild a module structurally equal to the
replayed trace (else the trace is embedded as JSON and applied with TVM's
``Trace.apply_json_to_schedule``), the input code reproduces the harness's inputs bit for
bit, the reference function the harness's reference and bounds.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import numpy as np

from fuzzharness.backends import redzone
from fuzzharness.buckets.signatures import Signature
from fuzzharness.core import hygiene
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status, Verdict
from fuzzharness.generators.inputs import TINY_INT
from fuzzharness.kinds.tir import gpu_compile
from fuzzharness.kinds.tir import template as tir_template
from fuzzharness.kinds.tir.reference import Expectation, expectation, reference_source
from fuzzharness.kinds.tir.snippet import expected_failure, snippet
from fuzzharness.oracles import numerics
from fuzzharness.oracles.numerics import numpy_dtype
from fuzzharness.repro import arrays, gpu_runtime, template
from fuzzharness.repro.kit import (
    DEFAULT_CHILD_TIMEOUT,
    NotReproducible,
    Script,
    expectation_of,
    header,
    py_literal,
    schedule_calls,
    tensor_intrinsics_import,
)


# -- sections ------------------------------------------------------------------------------------
def schedule_source(case: Case, func, failing_call: str | None = None) -> tuple[str, list[str], list[str]]:
    """(``def schedule(sch)`` source, the call lines, notes).

    ``failing_call``: a last ``sch.<primitive>(...)`` line, the call that raises (a failure
    while the schedule was drawn, :mod:`fuzzharness.kinds.tir.generation_failure`).
    """
    text, lines, notes = _trace_source(case, func)
    if failing_call is None:
        return text, lines, notes
    if text.rstrip().endswith("pass  # no schedule: the program as written"):
        text = "def schedule(sch):\n"
    why = ("the dlight rule TVM fails in (it should return a schedule, or None when it does not "
           "apply)" if ".dlight." in failing_call else
           "the call TVM fails on (it should apply, or raise a ScheduleError)")
    return (text.rstrip("\n") + f"\n    # {why}:\n    {failing_call}\n", lines, notes)


def _trace_source(case: Case, func) -> tuple[str, list[str], list[str]]:
    if not case.trace or not case.trace[0]:
        return ("def schedule(sch):\n    pass  # no schedule: the program as written\n", [], [])
    lines, why = schedule_calls(func, case.trace)
    if lines is not None:
        body = "\n".join("    " + ln for ln in lines)
        return f"def schedule(sch):\n{body}\n", lines, []
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

    code = _DIST_CODE.get(case.inputs.get("distribution"))
    if code is None:
        return None
    shape = tuple(int(d) for d in spec.shape)
    lines = [f"rng = np.random.default_rng([{int(case.inputs['seed'])}, {index}])  # PCG64"]

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
        return tir_template.IDENTITY_LAYOUTS
    position, kshape, pad, shape = {}, {}, {}, {}
    for name, layout in e.layouts.items():
        ks = tuple(int(s) for s in layout.kernel_shape())
        position[name] = np.ravel_multi_index(layout.coordinates(), ks).astype(np.int64).tolist()
        kshape[name], pad[name], shape[name] = ks, float(layout.pad_value), tuple(layout.shape)
    return (f"POSITION = {position!r}\nKERNEL_SHAPE = {kshape!r}\nPAD = {pad!r}\n"
            f"ORIGINAL_SHAPE = {shape!r}\n" + tir_template.RELAYOUT)


GPU_NAMES = {"opencl": "OpenCL", "cuda": "CUDA"}
GPU_NEEDS = {"opencl": "tvm, numpy and pyopencl (with an OpenCL device)",
             "cuda": "tvm, numpy, nvcc and cuda-bindings (with an NVIDIA GPU)"}


# -- the whole script ----------------------------------------------------------------------------
def write_script(case: Case, verdict: Verdict, *, bucket: str, signature: Signature | None,
                 versions: dict[str, str], timeout: float | None = None,
                 date: str | None = None, title: str = "",
                 failing_call: str | None = None, first_seen: str = "") -> Script:
    """The repro script of ``case`` (whose verdict is ``verdict``) as text."""
    kind = case.target.get("kind")
    runs_kernel = verdict.stage.value in ("run", "verify", "done")
    if kind not in ("llvm", "opencl", "cuda") and runs_kernel:
        raise NotReproducible(f"running on a {kind!r} target needs its runtime; "
                              "a standalone script is written for llvm, OpenCL and CUDA, or "
                              "for compile-time bugs")
    e = expectation(case, verdict)
    if verdict.status is Status.TIMEOUT:
        timeout = float(verdict.details.get("timeout_s") or timeout or 60)
    expect = expectation_of(verdict, timeout)
    # OpenCL (and Adreno: tvm.compile skips its pipeline) and CUDA are lowered as the harness
    # lowers them, and kernels run through pyopencl (repro.gpu_runtime) or nvcc and the CUDA driver
    gpu = kind if kind in ("opencl", "cuda") and verdict.stage.value not in ("generate", "schedule") else None
    if gpu and expect["compare"] == "unscheduled":
        raise NotReproducible(f"a {GPU_NAMES[gpu]} kernel compared with its unscheduled program: "
                              "the script runs GPU kernels only")
    child_timeout = int(round(timeout)) if verdict.status is Status.TIMEOUT and timeout else DEFAULT_CHILD_TIMEOUT
    sched_text, sched_lines, notes = schedule_source(case, e.func, failing_call)
    inputs_text, in_notes = inputs_source(case, e)
    ref_text, inline = reference_source(case, e)
    notes += in_notes + ([] if inline else ["reference values and bounds embedded"])
    needs_ml = any(arrays.needs_ml_dtypes(a.dtype) for a in e.inputs.values()) or any(
        "bfloat16" in str(o.dtype) for o in e.output_specs)
    outputs = {o.name: (tuple(int(s) for s in o.shape), _np_dtype_name(o.dtype)) for o in e.output_specs}
    when = date or datetime.date.today().isoformat()
    header = _header(case, verdict, bucket, signature, versions, when, title, expect, first_seen,
                     GPU_NEEDS[gpu] if gpu and runs_kernel else "tvm and numpy")
    parts = [
        header,
        template.STDLIB_IMPORTS + template.PRELUDE,
        ("import ml_dtypes\n" if needs_ml else "") +
        "import numpy as np\nimport tvm\nfrom tvm import s_tir\nfrom tvm.script import tirx as T\n"
        + tensor_intrinsics_import(case.trace),
        f"TARGET = {py_literal(case.target)}\nPASS_CONFIG = {py_literal(case.pass_config)}\n"
        f"TIMEOUT = {child_timeout}  # seconds for the child process\n"
        f"# what tvm-fuzzharness saw: {verdict.line()[:200]}\n"
        f"EXPECT = {py_literal(expect)}\n",
        "# -- the program, unscheduled " + "-" * 62 + "\n" + e.source,
        "# -- the schedule " + "-" * 73 + "\n" + sched_text,
        *([_launch_section(case, e)] if gpu else []),
        "# -- inputs and the float64 reference " + "-" * 52 + "\n"
        f"INPUTS = {[s.name for s in e.input_specs]!r}  # kernel parameters: these, then OUTPUTS\n"
        f"OUTPUTS = {outputs!r}  # name: (shape, dtype)\n\n\n" + inputs_text,
        ref_text,
        layouts_source(e),
    ]
    if any("_unpack(" in p for p in (inputs_text, ref_text)):
        parts.append(arrays.UNPACK_HELPER.strip("\n") + "\n")
    if gpu == "opencl":
        parts.append(gpu_runtime.OPENCL_RUNTIME.strip("\n") + "\n")
    elif gpu == "cuda":
        parts += [gpu_runtime.SOURCE_OF.strip("\n") + "\n", gpu_runtime.CUDA_RUNTIME.strip("\n") + "\n"]
    compile_part = {"opencl": gpu_compile.OPENCL_COMPILE, "cuda": gpu_compile.CUDA_COMPILE}.get(gpu, tir_template.COMPILE)
    parts.append(compile_part.strip("\n") + "\n")
    parts.append(hygiene.SCRIPT_SOURCE.strip("\n") + "\n")
    parts.append(redzone.SCRIPT_SOURCE.strip("\n") + "\n")
    parts.append(template.RUNNER.strip("\n") + "\n")
    text = "\n\n".join(p.rstrip("\n") + "\n" for p in parts)
    short = None
    if gpu:
        notes.append(f"{GPU_NAMES[gpu]} kernels generated by TVM, launched through "
                     + ("pyopencl" if gpu == "opencl" else "nvcc and the CUDA driver (cuda-bindings)"))
    elif not any(n.startswith("schedule as JSON") for n in notes) and verdict.status is not Status.TIMEOUT:
        short = snippet(case, verdict, e, sched_lines, inputs_text, failing_call)
    return Script(text, expect, notes, sched_lines, short, expected_failure(verdict))


def _launch_section(case: Case, e) -> str:
    """The launch plan of the scheduled program (the schedule replayed as the script does)."""
    from tvm import s_tir

    from fuzzharness.core.tvm_support import replay_trace

    mod = replay_trace(e.func, case.trace).mod if case.trace and case.trace[0] else \
        s_tir.Schedule(e.func).mod
    try:
        text = gpu_runtime.launch_source(case, mod)
    except NotReproducible:
        raise
    except Exception:  # noqa: BLE001 - TVM fails while it lowers or generates: no kernels
        text = "LAUNCH = None  # TVM fails before it generates the kernels (see EXPECT)\n"
    name = GPU_NAMES[case.target["kind"]]
    return f"# -- the {name} launches " + "-" * (73 - len(name)) + "\n" + text


def _np_dtype_name(dtype: str) -> str:

    return numpy_dtype(dtype).name


def _header(case, verdict, bucket, signature, versions, when, title, expect, first_seen,
            needs: str) -> str:
    sig_title = signature.title() if signature is not None else ""
    key = signature.key if signature is not None else bucket
    return header(title or "TVM bug reproducer", [
        f"Bucket  {key}" + (f", found as bucket {bucket}" if bucket != key else "")
        + (f" ({first_seen})" if first_seen and first_seen != sig_title else ""),
        f"        this case: {sig_title}",
        f"TVM {versions.get('tvm')} · tvm-ffi {versions.get('tvm_ffi')} · LLVM {versions.get('llvm')}"
        f" · numpy {versions.get('numpy')} · Python {versions.get('python')}",
        f"Target  {json.dumps(case.target)} · PassContext config {json.dumps(case.pass_config)}",
        f"Written {when} by tvm-fuzzharness {versions.get('harness')} (case {case.id}"
        + (f", minimized from {case.origin['minimized_from']}" if case.origin.get("minimized_from") else "")
        + ")",
    ], expect, needs)
