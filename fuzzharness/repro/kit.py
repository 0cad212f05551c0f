"""What every repro script shares, whatever kind of case it reproduces.

A repro script is one Python file that needs only tvm and numpy.  Each case kind writes its
own program section (:meth:`fuzzharness.core.kinds.CaseKind.write_script`: a TIR PrimFunc
with its schedule, or a Relax module with its fused functions' schedules) and its own
``compile_and_run``; the rest is here: the expected failure (:func:`expectation_of`, with
:func:`error_pattern` for messages), the schedule as ``sch.<primitive>(...)`` calls
(:func:`schedule_calls`), Python literals for plain data (:func:`py_literal`), the result
(:class:`Script`), and the exception a writer raises when a case cannot be a script
(:class:`NotReproducible`).  The fixed runner every script ends with — child process,
judge, exit status — is :data:`fuzzharness.repro.template.RUNNER`.

Exit status of every repro: 1 the bug reproduces, 0 fixed, 2 something else happened.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from fuzzharness.buckets.signatures import salient_line
from fuzzharness.core.tvm_support import replay_trace, structural_equal
from fuzzharness.core.verdict import Status, Verdict
from fuzzharness.repro.trace_python import python_lines

REPRODUCES, FIXED, OTHER = 1, 0, 2
DEFAULT_CHILD_TIMEOUT = 300  # seconds; a hang bucket uses the harness's own timeout
#: the harness's stages → the script's (tvm.compile lowers and generates code in one call)
SCRIPT_STAGES = {"lower": "compile", "codegen": "compile", "build": "build", "run": "run",
                 "schedule": "schedule", "verify": "run"}
#: what varies between runs and machines in an error line: addresses, numbers, and file paths
#: (an OpenCL compiler names its temporary copy of the source: /root/.cache/pocl/kcache/tempfile_Ab12.cl)
_VARIABLE = re.compile(r"(?<![\w/])/(?:[\w.+-]+/)+[\w.+-]+|0x[0-9a-fA-F]+|\d+")
#: signals by which a process that corrupted its memory dies
MEMORY_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGABRT")


class NotReproducible(Exception):
    """This case cannot be written as a standalone script (the reason says why)."""


@dataclasses.dataclass
class Script:
    text: str
    expect: dict[str, Any]
    notes: list[str]  # what the script embeds rather than computes, and why
    schedule_lines: list[str]  # the sch.<primitive>(...) calls (for the issue text)
    snippet: str | None = None  # the short compile-run-assert snippet, if it has one
    snippet_expect: dict[str, Any] = dataclasses.field(default_factory=dict)  # how it fails


def py_literal(obj: Any) -> str:
    """A Python literal for plain JSON data (True/False/None spelled the Python way)."""
    return repr(json.loads(json.dumps(obj)))


def error_pattern(message: str) -> str:
    """A regular expression matching ``message``'s identifying line in any run: numbers and
    addresses (which vary between runs and instances) match any number or address."""
    line = salient_line(message).strip()
    if line.endswith(":"):  # an exception without a message: Python prints its bare name
        line = line[:-1].rstrip()  # (stripped before escaping: a trailing "\\ " would break)
    parts, last = [], 0
    for m in _VARIABLE.finditer(line):
        parts.append(re.escape(line[last:m.start()]))
        g = m.group()
        parts.append(r"\S+" if g.startswith("/") else r"0x[0-9a-fA-F]+" if g.startswith("0x") else r"\d+")
        last = m.end()
    parts.append(re.escape(line[last:]))
    return "".join(parts).strip()


def tensor_intrinsics_import(schedule: Any) -> str:
    """The import a script needs before it replays ``schedule`` (a trace as JSON data, or
    anything holding traces): TVM registers its tensor intrinsics (wmma, mma, ...) by name
    when ``tvm.s_tir.tensor_intrin`` is imported, and a trace that tensorizes names them."""
    if '"Tensorize"' not in json.dumps(schedule):
        return ""
    return "import tvm.s_tir.tensor_intrin  # noqa: F401  (registers the intrinsics Tensorize names)\n"


def expectation_of(verdict: Verdict, timeout: float | None = None) -> dict[str, Any]:
    """What the script checks for: ``symptom``, ``stage``, ``compare`` and a ``summary`` line,
    plus ``signal`` (a crash by a signal) or ``error`` (a pattern of the message)."""
    d = verdict.details or {}
    exp: dict[str, Any] = {"symptom": verdict.status.value, "stage": verdict.stage.value,
                           "compare": "reference"}
    if verdict.status is Status.ORDER_PRESERVING_DIVERGENCE:
        exp["compare"] = "unscheduled"
        exp["summary"] = "output bits that differ from the unscheduled program's"
    elif verdict.status in (Status.WRONG_RESULT, Status.NAN_INF) and \
            str(d.get("decided_by", "")).startswith("emulation"):
        exp["summary"] = ("an output element that differs bit for bit from the program's own "
                          "arithmetic in its own dtypes " + (
                              "(same-order emulation)" if d.get("emulation_ordered", True) else
                              "on exact inputs, where every summation order and every wider "
                              "accumulator gives the same bits"))
    elif verdict.status in (Status.WRONG_RESULT, Status.NAN_INF):
        exp["summary"] = ("an output element farther from the float64 reference than its "
                          "error bound" if verdict.status is Status.WRONG_RESULT
                          else "nan/inf where the float64 reference is finite")
    elif verdict.status is Status.CRASH and d.get("victim") is not None:
        raise NotReproducible(  # campaign/confirm.py: found by replaying its worker's cases
            f"this case fails nothing alone: it damages its worker process, and case "
            f"#{d['victim']} fails after it ({d.get('victim_verdict', '')[:120]})")
    elif verdict.status is Status.CRASH and d.get("kind") == "signal":
        exp["signal"] = d.get("signal")
        exp["summary"] = f"the process killed by {d.get('signal')} in stage {verdict.stage.value}"
        if d.get("signal") in MEMORY_SIGNALS and verdict.stage.value in ("run", "verify"):
            # a kernel that corrupts memory dies by whichever check notices first: the MMU
            # (SIGSEGV, SIGBUS) or glibc's heap checks (SIGABRT) — one bug, any of them
            exp["signals"] = list(MEMORY_SIGNALS)
            exp["summary"] += " (or another memory-corruption signal: " + \
                ", ".join(s for s in MEMORY_SIGNALS if s != d.get("signal")) + ")"
    elif verdict.status is Status.CRASH and d.get("kind") == "heap_damage":
        exp["summary"] = (f"the process killed when glibc finds its heap damaged "
                          f"({d.get('malloc_error')}) in stage {verdict.stage.value}")
    elif verdict.status is Status.TIMEOUT:
        exp["summary"] = f"no result within {timeout or 0:g} s (stage {verdict.stage.value})"
    elif verdict.message:
        exp["error"] = error_pattern(verdict.message)  # numbers and addresses may vary
        when = SCRIPT_STAGES.get(verdict.stage.value, verdict.stage.value)
        exp["summary"] = (f"an error in stage {when} (the harness's {verdict.stage.value}): "
                          f"{salient_line(verdict.message)[:160]}")
    else:
        raise NotReproducible(f"a {verdict.status.value} without a message or signal "
                              "cannot be checked by a script")
    return exp


def schedule_calls(func, trace: Any) -> tuple[list[str] | None, str]:
    """The schedule of ``trace`` on ``func`` as ``sch.<primitive>(...)`` lines (TVM's
    ``Trace.as_python``, with our printer for the instructions TVM cannot print:
    :mod:`fuzzharness.repro.trace_python`), checked to rebuild a structurally equal module;
    ``(None, why)`` when they do not (the caller then embeds the trace JSON)."""
    import tvm
    from tvm import s_tir


    sch = replay_trace(func, trace)
    try:
        lines = python_lines(sch.trace)
        check = s_tir.Schedule(func)
        exec("\n".join(lines), {"sch": check, "T": tvm.script.tirx, "tvm": tvm})  # noqa: S102
        if structural_equal(check.mod, sch.mod):
            return lines, ""
        return None, "its Python form builds a different module"
    except Exception as e:  # noqa: BLE001 - e.g. DecomposePadding cannot be printed
        return None, f"the trace cannot be printed as Python ({type(e).__name__}: {str(e).splitlines()[0][:120]})"


def header(title: str, lines: list[str], expect: dict[str, Any], needs: str = "tvm and numpy") -> str:
    """The script's docstring: title, the kind's lines (bucket, versions, target, …), what it
    expects, how to run it and read its exit status."""
    return "\n".join([
        "#!/usr/bin/env python3",
        '"""' + title,
        "",
        *lines,
        f"Expects {expect['summary']}",
        "",
        f"Needs only {needs}:  python repro.py",
        "Exit status: 1 = the bug reproduces, 0 = fixed (a correct result, or TVM now refuses the",
        "schedule with a ScheduleError), 2 = something else happened.  Compiling and running",
        "happen in a child process, so a crash of TVM is reported rather than fatal.",
        '"""',
    ]) + "\n"
