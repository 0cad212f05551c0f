"""The short inline snippet of an issue: compile, run, assert — the way TVM bug reports read.

``repro.py`` is the complete, self-checking script (child process, exit status, error model
written out).  The issue's snippet is the part a maintainer reads first: the program, the
``sch.<primitive>(...)`` calls, ``tvm.compile``, the inputs, the operator's definition in
numpy and one assertion::

    lib = tvm.compile(sch.mod, target={"kind": "llvm"})
    A = np.ones((1, 3), dtype="float32")
    B = tvm.runtime.tensor(np.full((1,), np.nan, dtype="float32"))  # unwritten stays nan
    lib["main"](tvm.runtime.tensor(A), B)
    expected = A.astype("float64").sum(axis=1)
    np.testing.assert_array_equal(B.numpy(), expected)  # fails: 1.0 != 3.0

For a compile error or a crash it stops where TVM fails.  It is written only when every part
is short and plain: inputs as literals or a seeded numpy generator, the reference as numpy
source (:mod:`fuzzharness.kinds.tir.numpy_reference`), no parameter re-layout.  The repro
writer runs it in a fresh process (:func:`fuzzharness.repro.package.write_repro`) and keeps it
only when it fails the way the harness saw.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status, Verdict
from fuzzharness.kinds.tir.numpy_reference import needs_rounding, numpy_source
from fuzzharness.oracles import numerics
from fuzzharness.oracles.numerics import numpy_dtype
from fuzzharness.repro import arrays
from fuzzharness.repro.kit import MEMORY_SIGNALS, py_literal


def snippet(case: Case, verdict: Verdict, e: Any, schedule_lines: list[str], inputs_text: str,
            failing_call: str | None = None) -> str | None:
    """The snippet's source (None when it cannot be short and plain; see the module docstring)."""
    if e.layouts or "_unpack(" in inputs_text or case.target.get("kind") != "llvm":
        return None
    status, stage = verdict.status, verdict.stage.value
    needs_ml = any(arrays.needs_ml_dtypes(a.dtype) for a in e.inputs.values()) or any(
        "bfloat16" in str(o.dtype) for o in e.output_specs)
    lines = ["import numpy as np", "import tvm"]
    if needs_ml:
        lines.append("import ml_dtypes")
    lines += ["from tvm.script import tirx as T", "", e.source.strip("\n"), "",
              "sch = tvm.s_tir.Schedule(main)", *schedule_lines]
    if failing_call:
        lines.append(f"{failing_call}  # raises: {_said(verdict)}")
        return "\n".join(lines) + "\n"
    if stage == "schedule":
        return None  # a schedule that fails while it is applied: its last call raised above
    compile_line = f"lib = tvm.compile(sch.mod, target={py_literal(case.target)})"
    if case.pass_config:
        lines += [f"with tvm.transform.PassContext(opt_level=3, config={py_literal(case.pass_config)}):",
                  "    " + compile_line]
    else:
        lines.append(compile_line)
    if status is Status.COMPILE_ERROR:
        lines[-1] += f"  # raises: {_said(verdict)}"
        return "\n".join(lines) + "\n"
    body = _input_lines(inputs_text)
    if body is None:
        return None
    lines += body
    outs = []
    for o in e.output_specs:
        dt = np.dtype(numpy_dtype(o.dtype))
        fill = "np.nan" if np.issubdtype(dt, np.floating) or needs_ml and "bfloat16" in o.dtype \
            else str(np.iinfo(dt).min)
        shape = tuple(int(s) for s in o.shape)
        lines.append(f"{o.name} = tvm.runtime.tensor(np.full({shape}, {fill}, "
                     f"dtype={arrays.dtype_source(dt)}))  # unwritten elements keep this")
        outs.append(o.name)
    args = ", ".join([f"tvm.runtime.tensor({s.name})" for s in e.input_specs] + outs)
    call = f'lib["main"]({args})'
    if status is Status.CRASH or status is Status.TIMEOUT:
        what = verdict.details.get("signal") or verdict.details.get("kind") or "crash"
        if status is Status.TIMEOUT:
            what = "does not return"
        lines.append(f"{call}  # {what}")
        return "\n".join(lines) + "\n"
    if status not in (Status.WRONG_RESULT, Status.NAN_INF):
        return None
    lines.append(call)
    defined = numpy_source(case.workload_name, case.params)
    if defined is None:
        return None
    lines.append("# what the kernel should compute (float64):")
    lines += [f"{s.name}64 = {s.name}.astype(np.float64)" for s in e.input_specs]
    rename = {s.name: f"{s.name}64" for s in e.input_specs}
    rename.update({o.name: f"{o.name}_expected" for o in e.output_specs})
    lines += [_rename(ln, rename) for ln in defined]
    for o in e.output_specs:
        exp = e.expected[o.name]
        got = f"{o.name}.numpy().astype(np.float64)"
        want = rename[o.name]
        if e.exact or not np.any(exp.bound):
            if e.exact and not numerics.is_int(o.dtype) and needs_rounding(case, e, o.name):
                want = f"{want}.astype({arrays.dtype_source(numpy_dtype(o.dtype))}).astype(np.float64)"
            lines.append(f"np.testing.assert_array_equal({got}, {want})"
                         + ("  # exact-integer inputs: any legal order gives this value"
                            if e.exact else "  # an exact operation"))
        else:
            bound = np.asarray(exp.bound, dtype=np.float64)
            finite = bound[np.isfinite(bound)]
            if not finite.size:
                return None
            atol = float(finite.max())
            lines.append(f"np.testing.assert_allclose({got}, {want}, rtol=0, atol={atol:.3g})"
                         f"  # atol: the largest per-element bound of the \"{exp.model}\" error model")
    return "\n".join(lines) + "\n"


def _rename(line: str, names: dict[str, str]) -> str:
    import re

    for old, new in names.items():
        line = re.sub(rf"(?<![\w.]){re.escape(old)}(?!\w)", new, line)
    return line


def _said(verdict: Verdict) -> str:
    from fuzzharness.buckets.signatures import salient_line

    return salient_line(verdict.message)[:120] or verdict.status.value


def _input_lines(inputs_text: str) -> list[str] | None:
    """The body of ``make_inputs()`` without its ``return``, dedented."""
    out = []
    for ln in inputs_text.splitlines()[1:]:
        s = ln[4:] if ln.startswith("    ") else ln
        if s.startswith("return "):
            continue
        out.append(s)
    return out


def expected_failure(verdict: Verdict) -> dict[str, Any]:
    """How a run of the snippet shows the bug: ``{"assertion": True}``, ``{"signal": …}``,
    ``{"error": pattern}`` or ``{"hang": True}`` (used by the repro writer)."""
    from fuzzharness.repro.kit import error_pattern

    if verdict.status in (Status.WRONG_RESULT, Status.NAN_INF):
        return {"assertion": True}
    if verdict.status is Status.CRASH and verdict.details.get("kind") == "signal":
        sig = verdict.details.get("signal")
        if sig in MEMORY_SIGNALS and verdict.stage.value in ("run", "verify"):
            return {"signal": sig, "signals": list(MEMORY_SIGNALS)}
        return {"signal": sig}
    if verdict.status is Status.TIMEOUT:
        return {"hang": True}
    return {"error": error_pattern(verdict.message)} if verdict.message else {}


def dumps(d: dict[str, Any]) -> str:
    return json.dumps(d, sort_keys=True)
