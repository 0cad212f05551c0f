"""Issue text in the shape of TVM's bug-report template (.github/ISSUE_TEMPLATE/bug-report.md):
title ``[Bug] ...``, Expected behavior, Actual behavior, Environment, Steps to reproduce,
Triage — plus the hints a maintainer triages with: the schedule primitives involved, the
lowering pass after which the output goes wrong (or that raised), the scheduled TIR and the
IR around that pass.

What differs per kind of case (the title's tag, what the case is, the program excerpt, the
expected behaviour, the triage hints) comes from the case's kind
(:class:`fuzzharness.core.kinds.CaseKind`): a Relax graph case is titled
``[Bug] [Relax] ...``, names its operators and compilation mode, and shows the Relax module.

Only written for a repro that was verified to reproduce (see :mod:`fuzzharness.repro.package`).
"""

from __future__ import annotations

import platform
from typing import Any

from fuzzharness.buckets.signatures import Signature, salient_line
from fuzzharness.core.case import Case
from fuzzharness.core.kinds import kind_of
from fuzzharness.core.verdict import Verdict

MAX_OUTPUT_LINES = 40


def primitives(case: Case) -> list[str]:
    """Schedule primitives the case applies (for a graph: over all its fused functions, plus
    ``convert_layout`` / ``dlight`` / ``metaschedule`` where its mode uses them)."""
    return kind_of(case).issue_primitives(case)


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
    kind = kind_of(case)
    tag = kind.tag
    prims = ", ".join(primitives(case)) or kind.no_schedule
    if failing_call:
        prims = failing_call.split("(", 1)[0].replace("sch.", "")
    where = kind.describe(case)
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
    return kind.error_title(verdict, prims, where, short_message(verdict.message), raised_in)


def _expected_text(case: Case, verdict: Verdict, exact: bool) -> str:
    status = verdict.status.value
    refuse = ("or the schedule should be refused with a `ScheduleError` when it is not valid")
    if (own := kind_of(case).expected_behaviour(case, verdict, exact)) is not None:
        return own
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
                   versions: dict[str, str], triage: Any, date: str,
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
        _fence(kind_of(case).program_excerpt(script_text, schedule_lines, failing_call), "python"),
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
    out += kind_of(case).hints(case, triage)
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
