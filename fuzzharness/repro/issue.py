"""Issue text in the shape of TVM's bug-report template (.github/ISSUE_TEMPLATE/bug-report.md):
title ``[Bug] ...``, Expected behavior, Actual behavior, Environment, Steps to reproduce,
Triage — plus the hints a maintainer triages with: the schedule primitives involved, the
lowering pass after which the output goes wrong (or that raised), the scheduled TIR and the
IR around that pass.

A Relax graph case (:mod:`fuzzharness.generators.graphs`) is titled ``[Bug] [Relax] ...``, names its
operators, compilation mode and the primitives of its fused functions' schedules, and shows
the Relax module with those schedules as the program.

Only written for a repro that was verified to reproduce (see :mod:`fuzzharness.repro.package`).
"""

from __future__ import annotations

import platform
from typing import Any

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Verdict
from fuzzharness.engine.buckets import Signature, salient_line, trace_primitives
from fuzzharness.generators.graphs.minimize import is_graph_case
from fuzzharness.repro.pass_bisect import Triage

MAX_OUTPUT_LINES = 40


def primitives(case: Case) -> list[str]:
    """Schedule primitives the case applies (for a graph: over all its fused functions, plus
    ``convert_layout`` / ``dlight`` / ``metaschedule`` where its mode uses them)."""
    if is_graph_case(case):
        from fuzzharness.generators.graphs.spec import graph_primitives

        ops = {str(n.get("op")) for n in case.params.get("nodes") or []}
        return [p for p in graph_primitives(case.to_dict()) if p not in ops]
    return list(trace_primitives(case.trace))


def _where(case: Case) -> str:
    if is_graph_case(case):
        ops = ", ".join(dict.fromkeys(str(n.get("op")) for n in case.params.get("nodes") or []))
        mode = (case.schedule or {}).get("source", "graph:default").split(":", 1)[-1]
        return f"Relax graph ({ops}; {case.params.get('dtype')}, {case.target.get('kind')}, {mode} mode)"
    return (f"{case.workload_name} ({_shape_text(case)}, "
            f"{case.origin.get('dtype') or case.params.get('dtype', '')}, {case.target.get('kind')})")


def _shape_text(case: Case) -> str:
    ints = {k: v for k, v in case.params.items() if isinstance(v, int) and not isinstance(v, bool)}
    return ", ".join(f"{k}={v}" for k, v in ints.items())


def short_message(message: str, limit: int = 100) -> str:
    """The human part of an error for a title: the text after TVM's ``Check failed: ... :``
    when there is one, else the check itself; cut at a word boundary."""
    line = salient_line(message)
    line = line.split(": ", 1)[1] if line.split(": ", 1)[0].endswith(("Error", "Exception")) else line
    if line.startswith("Check failed:") and " : " in line and line.split(" : ", 1)[1].strip():
        line = line.split(" : ", 1)[1].strip()
    if len(line) <= limit:
        return line.rstrip(" :")
    return line[:limit].rsplit(" ", 1)[0].rstrip(" :,") + " …"


def title(case: Case, verdict: Verdict, failing_call: str | None = None,
          raised_in: str | None = None) -> str:
    graph = is_graph_case(case)
    tag = "[Relax]" if graph else "[TIR]"
    prims = ", ".join(primitives(case)) or ("the default pipeline" if graph else "no schedule")
    if failing_call:
        prims = failing_call.split("(", 1)[0].replace("sch.", "")
    where = _where(case)
    status = verdict.status.value
    if status == "wrong_result":
        return f"[Bug] {tag} Wrong result after {prims}: {where}"
    if status == "nan_inf":
        return f"[Bug] {tag} nan/inf in the output after {prims}: {where}"
    if status == "order_preserving_divergence":
        return f"[Bug] {tag} {prims} changes the bits of an order-preserving schedule: {where}"
    if status == "crash":
        sig = verdict.details.get("signal") or verdict.details.get("kind") or "crash"
        return f"[Bug] {tag} {sig} in {verdict.stage.value} after {prims}: {where}"
    if status == "timeout":
        return f"[Bug] {tag} {verdict.stage.value} does not finish after {prims}: {where}"
    msg = short_message(verdict.message)
    if graph:
        return f"[Bug] {tag} Compiling a {where} fails: {msg}"
    if verdict.stage.value == "schedule":
        return f"[Bug] [TIR][Schedule] {prims} fails instead of raising a ScheduleError: {msg}"
    what = {"lower": "Lowering", "codegen": "Code generation", "build": "Building"}.get(
        verdict.stage.value, verdict.stage.value.capitalize())
    if raised_in:
        what = raised_in.split(".")[-1]
    return f"[Bug] [TIR] {what} fails after {prims}: {msg}"


def _expected_text(case: Case, verdict: Verdict, exact: bool) -> str:
    status = verdict.status.value
    refuse = ("or the schedule should be refused with a `ScheduleError` when it is not valid")
    if is_graph_case(case) and status in ("wrong_result", "nan_inf"):
        how = ("exactly equal to the float64 reference (small-integer inputs: every op's result "
               "is an exact integer)" if exact else
               "within the error bound of the float64 reference, composed op by op from each "
               "op's stated floating-point error model")
        return f"The compiled Relax graph's outputs should be {how}."
    if is_graph_case(case):
        return ("`relax.build` of the module should succeed and the compiled graph should "
                "compute the correct result.")
    if status in ("wrong_result", "nan_inf"):
        how = ("exactly equal to the float64 reference: the inputs are small integers, so every "
               "partial sum is an exact integer and any summation order gives the same value"
               if exact else
               "within the stated floating-point error bound of the float64 reference (the bound "
               "covers every summation order a legal schedule may choose)")
        return f"The compiled kernel's output should be {how}; {refuse}."
    if status == "order_preserving_divergence":
        return ("The schedule does not change the order of any accumulation, so the output "
                "should have the same bits as the unscheduled program's.")
    if status == "compile_error" and verdict.stage.value == "schedule":
        return ("A schedule primitive should either apply or refuse the request with a "
                "`ScheduleError`; it should not fail an internal check.")
    return (f"`tvm.compile` of the scheduled module should succeed and the kernel should compute "
            f"the correct result; {refuse}.")


def _fence(text: str, lang: str = "") -> str:
    ticks = "````" if "```" in text else "```"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def _trim(text: str, limit: int = MAX_OUTPUT_LINES) -> str:
    lines = text.rstrip().splitlines()
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join(lines[:limit // 2] + [f"... ({len(lines) - limit} lines)"] + lines[-limit // 2:])


def issue_markdown(*, case: Case, verdict: Verdict, bucket: str, signature: Signature | None,
                   script_text: str, script_output: str, schedule_lines: list[str],
                   versions: dict[str, str], triage: Triage | None, date: str,
                   minimized: dict[str, Any] | None = None, runs: int = 1,
                   failing_call: str | None = None, issue_title: str | None = None) -> str:
    exact = case.oracle.get("mode") == "exact"
    head = issue_title or title(case, verdict, failing_call)
    prims = primitives(case)
    if failing_call:
        prims.append(failing_call.split("(", 1)[0].replace("sch.", ""))
    out = [
        f"<!-- tvm-fuzzharness {versions.get('harness')}, {date}; bucket {bucket}; "
        f"repro verified: reproduced {runs}/{runs} runs in fresh processes -->",
        f"# {head}",
        "",
        "### Expected behavior",
        "",
        _expected_text(case, verdict, exact),
        "",
        "### Actual behavior",
        "",
        _fence(_trim(script_output)),
        "",
        "### Environment",
        "",
        f"- TVM {versions.get('tvm')} (PyPI `apache-tvm`), tvm-ffi {versions.get('tvm_ffi')}, "
        f"LLVM {versions.get('llvm')}",
        f"- Python {versions.get('python')}, numpy {versions.get('numpy')}, "
        f"{platform.system()} {platform.machine()}",
        f"- target `{_json(case.target)}`, PassContext config `{_json(case.pass_config)}`",
        "",
        "### Steps to reproduce",
        "",
        "Save the script below as `repro.py` and run `python repro.py` (it needs only tvm and "
        "numpy).  It exits with status 1 while the bug reproduces and 0 once it is fixed.",
        "",
        "The program and the schedule it applies:",
        "",
        _fence(_core(script_text, schedule_lines, failing_call, is_graph_case(case)), "python"),
        "",
        f"<details><summary>repro.py ({len(script_text.splitlines())} lines)</summary>",
        "",
        _fence(script_text, "python"),
        "",
        "</details>",
        "",
        "### Triage",
        "",
        "* needs-triage",
        "* type: bug",
        "",
        "Hints from the fuzzer:",
        "",
        f"- schedule primitives involved: {', '.join(f'`{p}`' for p in prims) or 'none'}",
    ]
    if is_graph_case(case):
        out.append("- compiled by: " + _graph_mode(case))
        out.append("- lowering passes: not probed (the pass bisection covers single PrimFuncs)")
    else:
        out += _triage_lines(triage, verdict)
    if not minimized and case.origin.get("minimized_from"):
        out.append(f"- found by tvm-fuzzharness and minimized from case "
                   f"`{case.origin['minimized_from']}`")
    if minimized:
        out.append(f"- found by tvm-fuzzharness and minimized from case `{minimized.get('original_case_id')}`"
                   f" ({minimized.get('unit') or 'trace instructions'} "
                   f"{minimized.get('original_length')} → {minimized.get('length')} "
                   f"in {minimized.get('seconds')} s); bucket signature: "
                   f"{signature.title() if signature else bucket}")
    if triage is not None and triage.scheduled_tir:
        out += ["", "<details><summary>Scheduled TIR (before lowering)</summary>", "",
                _fence(triage.scheduled_tir, "python"), "", "</details>"]
    if triage is not None and triage.ir_before:
        p = triage.first_wrong_pass
        out += ["", f"<details><summary>IR given to {p}</summary>", "",
                _fence(triage.ir_before, "python"), "", "</details>"]
        if triage.ir_after:
            out += ["", f"<details><summary>IR after {p}</summary>", "",
                    _fence(triage.ir_after, "python"), "", "</details>"]
    return "\n".join(out) + "\n"


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, sort_keys=True)


def _graph_mode(case: Case) -> str:
    schedule = case.schedule or {}
    mode = {"graph:default": "TVM's default Relax pipeline (LegalizeOps, FuseOps, FuseTIR, "
                             "default schedules)",
            "graph:dlight": "the default pipeline with dlight's default schedules",
            "graph:random": "the default pipeline, fused PrimFuncs re-scheduled at random",
            "graph:metaschedule": "the default pipeline, fused PrimFuncs scheduled by "
                                  "MetaSchedule design-space samples"}.get(
        schedule.get("source", "graph:default"), str(schedule.get("source")))
    if schedule.get("layout"):
        mode += f", after ConvertLayout to {schedule['layout']}"
    return mode


def _core(script_text: str, schedule_lines: list[str], failing_call: str | None,
          graph: bool = False) -> str:
    """The program (TVMScript) and the schedule calls, cut from the script."""
    lines = script_text.splitlines()
    if graph:  # the Relax module and the fused functions' schedules, as the script has them
        try:
            start = next(i for i, ln in enumerate(lines) if ln.startswith("@I.ir_module"))
            end = next(i for i, ln in enumerate(lines)
                       if i > start and ln.startswith("# -- inputs"))
        except StopIteration:
            return ""
        return "\n".join(lines[start:end]).rstrip()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith("@T.prim_func"))
        end = next(i for i, ln in enumerate(lines) if i > start and ln.startswith("# -- the schedule"))
        program = "\n".join(lines[start:end]).rstrip()
    except StopIteration:
        program = ""
    sched = ["sch = tvm.s_tir.Schedule(main)", *schedule_lines]
    if failing_call:
        sched.append(failing_call + "  # raises")
    return program + "\n\n" + "\n".join(sched)


def _triage_lines(t: Triage | None, verdict: Verdict) -> list[str]:
    if t is None:
        return ["- lowering passes: not probed"]
    out = []
    if t.raised_in:
        out.append(f"- the error is raised inside the lowering pass `{t.raised_in}`")
    elif t.implicated:
        out.append(f"- first lowering pass after which the output goes wrong: `{t.implicated[0]}` "
                   f"(disabling it gives the correct result"
                   + (f"; so does disabling {', '.join(f'`{p}`' for p in t.implicated[1:])}"
                      if len(t.implicated) > 1 else "") + ")")
    elif t.note:
        out.append(f"- {t.note}")
    if t.required:
        out.append(f"- passes that cannot be disabled for this program: "
                   f"{', '.join(f'`{p}`' for p in t.required)}")
    if t.crashed:
        out.append(f"- disabling {', '.join(f'`{p}`' for p in t.crashed)} crashes TVM itself")
    if t.passes:
        out.append(f"- probed by disabling each of the {len(t.passes)} passes of the default "
                   f"TIR pipeline in turn (`PassContext(disabled_pass=[...])`)")
    return out
