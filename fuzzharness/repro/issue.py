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

Invariant: the text fits in a GitHub issue body (:data:`GITHUB_BODY_LIMIT` characters; GitHub
refuses a longer one).  What does not fit goes in this order: the IR after and before the
first wrong pass and the scheduled TIR keep their first and last lines, then they go, then
``repro.py`` is left out of the body with a line saying to attach the file (it is beside
``issue.md`` in the repro directory).  The sections a maintainer reads first — the title,
expected and actual behaviour, environment, the program excerpt, the hints — always stay.
"""

from __future__ import annotations

import platform
from typing import Any

from fuzzharness.buckets.root_causes import SCHEDULE_CULPRIT
from fuzzharness.buckets.signatures import Signature, salient_line
from fuzzharness.core.case import Case
from fuzzharness.core.kinds import issue_kind
from fuzzharness.core.verdict import Verdict

MAX_OUTPUT_LINES = 40
GITHUB_BODY_LIMIT = 65536  # characters: GitHub's limit for an issue body
#: what the IR sections keep, in lines, when the whole text is too long for an issue body
IR_LINES_WHEN_LONG = 120
IR_FILE = "triage-ir.md"  # the IR sections whole, written when the issue body cuts them


def primitives(case: Case) -> list[str]:
    """Schedule primitives the case applies (for a graph: over all its fused functions, plus
    ``convert_layout`` / ``dlight`` / ``metaschedule`` where its mode uses them)."""
    return issue_kind(case).issue_primitives(case)


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
          raised_in: str | None = None, culprit: str = "", defect: str = "") -> str:
    """The issue title: what goes wrong, the culprit — the lowering pass (``culprit``, found by
    the pass probe) or the schedule primitives — and whether TVM should have refused the
    schedule.

    * a wrong output whose culprit is a lowering pass: the schedule was legal (the scheduled
      program is right; disabling that pass makes the output right) — "TVM accepts this
      schedule without a ScheduleError and then computes a wrong result";
    * a wrong output that no single disabled pass makes right: the scheduled program itself is
      wrong, so the primitives either applied to a case they do not support — "should raise a
      ScheduleError" — or transformed it incorrectly;
    * a wrong output or a kernel crash whose triage located the ``defect`` a schedule step left
      in the scheduled program (e.g. "sch.pad_einsum leaves a block running outside its
      domain"): that step, whatever a pass probe said;
    * not probed: what went wrong after which calls, and (for a schedule) the first sentence."""
    kind = issue_kind(case)
    tag = kind.tag
    calls = kind.culprit_calls(case)
    prims = " + ".join(calls) or ", ".join(primitives(case)) or kind.no_schedule
    if failing_call:
        prims = call_name(failing_call)
    where = kind.describe(case)
    status = verdict.status.value
    if defect and culprit == SCHEDULE_CULPRIT:
        what = {"wrong_result": "computes a wrong result", "nan_inf": "computes nan/inf"}.get(
            status, f"crashes ({verdict.details.get('signal') or verdict.details.get('kind') or status})")
        return f"[Bug] {tag}[Schedule] {defect} (after {prims}), and the program {what}: {where}"
    if status in ("wrong_result", "nan_inf"):
        what = "a wrong result" if status == "wrong_result" else "nan/inf"
        if culprit == SCHEDULE_CULPRIT:
            return (f"[Bug] {tag}[Schedule] {prims} is accepted and the scheduled program computes "
                    f"{what}: it should raise a ScheduleError ({where})")
        if culprit:
            return (f"[Bug] {tag} {_short_pass(culprit)} miscompiles {where} after {prims}: TVM "
                    f"accepts this schedule without a ScheduleError and then computes {what}")
        head = f"[Bug] {tag} {'Wrong result' if status == 'wrong_result' else 'nan/inf'} after {prims}: {where}"
        if calls:  # a schedule TVM took: say so (a graph's own pipeline has none to accept)
            head += f" — TVM accepts this schedule without a ScheduleError and then computes {what}"
        return head
    if status == "order_preserving_divergence":
        return (f"[Strict order] {tag} {prims}: an order-preserving schedule's output bits differ "
                f"from the declared order's (within the error bound): {where}")
    if status == "crash":
        sig = verdict.details.get("signal") or verdict.details.get("kind") or "crash"
        oob = out_of_bounds(verdict)
        if verdict.stage.value in ("run", "verify"):
            return (f"[Bug] {tag} {sig} in the kernel generated after {prims}"
                    + (f": {oob}" if oob else "") + f" ({where})")
        return f"[Bug] {tag} {sig} in {verdict.stage.value} after {prims}: {where}"
    if status == "timeout":
        return f"[Bug] {tag} {verdict.stage.value} does not finish after {prims}: {where}"
    if status == "reference_mismatch":
        head = f"[Bug] {tag} The unscheduled program computes a wrong result"
        return head + (f" after {_short_pass(culprit)}" if culprit and culprit != SCHEDULE_CULPRIT
                       else "") + f": {where}"
    return kind.error_title(verdict, prims, where, short_message(verdict.message), raised_in)


def call_name(failing_call: str) -> str:
    """What a failing call line calls: ``sch.split``, or ``dlight.gpu.GEMV`` for a dlight rule
    applied in its target's scope (``with tvm.target.Target(...) as target: tvm.s_tir...``)."""
    call = failing_call.split(" as target: ", 1)[-1]
    return call.split("(", 1)[0].removeprefix("tvm.s_tir.")


def _short_pass(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def out_of_bounds(verdict: Verdict) -> str:
    """``"writes out of bounds of buffer B at element 12"`` from a verdict's details, when the
    run's guard zones (or TVM's bound checks) said so; ``""`` otherwise."""
    d = verdict.details or {}
    oob = d.get("out_of_bounds") or (d if d.get("kind") == "out_of_bounds" else None)
    if not isinstance(oob, dict):
        return ""
    buf = oob.get("buffer") or oob.get("name")
    where = oob.get("offset", oob.get("index"))
    access = oob.get("access") or "accesses"
    if not buf:
        return ""
    text = f"{access} out of bounds of buffer {buf}"
    if where is not None:
        text += f" at {'element' if 'index' in oob else 'offset'} {where}"
    return text


def _expected_text(case: Case, verdict: Verdict, exact: bool) -> str:
    status = verdict.status.value
    refuse = ("or the schedule should be refused with a `ScheduleError` when it is not valid")
    if (own := issue_kind(case).expected_behaviour(case, verdict, exact)) is not None:
        return own
    if status in ("wrong_result", "nan_inf"):
        how = ("exactly equal to the float64 reference: the inputs are small integers, so every "
               "partial sum is an exact integer and any summation order gives the same value"
               if exact else
               "within the stated floating-point error bound of the float64 reference (the bound "
               "covers every summation order a legal schedule may choose)")
        return f"The compiled kernel's output should be {how}; {refuse}."
    if status == "order_preserving_divergence":
        return ("The schedule does not change the order of any accumulation, so under the strict "
                "order contract (`--strict-order`) the output should have the same bits as the "
                "declared arithmetic in the declared order. TVM does not promise this: a "
                "lowering that legally sums in another order or keeps a wider accumulator gives "
                "other bits, and the result is within the error bound, so this is a note to "
                "check, not a wrong result.")
    if status == "compile_error" and ".dlight." in str(case.origin.get("failing_call") or ""):
        return ("A dlight rule should return a schedule for the function, or None when it does "
                "not apply to it; it should not fail in its own code.")
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
                   failing_call: str | None = None, issue_title: str | None = None,
                   snippet: str | None = None, root_cause: Any = None) -> str:
    exact = case.oracle.get("mode") == "exact"
    head = issue_title or title(case, verdict, failing_call)
    prims = primitives(case)
    if failing_call:
        prims.append(call_name(failing_call).replace("sch.", ""))
    key = signature.key if signature is not None else bucket
    found = f", found as bucket {bucket}" if bucket != key else ""
    cause = f"; root cause {root_cause.key}" if root_cause is not None else ""
    out = [
        f"<!-- tvm-fuzzharness {versions.get('harness')}, {date}; bucket {key}{found}{cause}; "
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
    ]
    if snippet:
        out += ["Compile, run and compare (this snippet was run in a fresh process: it fails "
                "as shown above):", "", _fence(snippet, "python"), "",
                "The complete repro script below checks the same thing against the error model, "
                "in a child process; run `python repro.py` (tvm and numpy only): it exits with "
                "status 1 while the bug reproduces and 0 once it is fixed."]
    else:
        out += ["Save the script below as `repro.py` and run `python repro.py` (it needs only tvm "
                "and numpy).  It exits with status 1 while the bug reproduces and 0 once it is "
                "fixed.", "", "The program and the schedule it applies:", "",
                _fence(issue_kind(case).program_excerpt(script_text, schedule_lines, failing_call),
                       "python")]
    head_lines = out
    script = ["", f"<details><summary>repro.py ({len(script_text.splitlines())} lines)</summary>",
              "", _fence(script_text, "python"), "", "</details>"]
    hints = ["", "### Triage", "", "* needs-triage", "* type: bug", "", "Hints from the fuzzer:",
             "", f"- schedule primitives involved: {', '.join(f'`{p}`' for p in prims) or 'none'}"]
    hints += issue_kind(case).hints(case, triage)
    if not minimized and case.origin.get("minimized_from"):
        hints.append(f"- found by tvm-fuzzharness and minimized from case "
                     f"`{case.origin['minimized_from']}`")
    if minimized:
        hints.append(f"- found by tvm-fuzzharness and minimized from case "
                     f"`{minimized.get('original_case_id')}` "
                     f"({minimized.get('unit') or 'trace instructions'} "
                     f"{minimized.get('original_length')} → {minimized.get('length')} "
                     f"in {minimized.get('seconds')} s); bucket signature: "
                     f"{signature.title() if signature else bucket}")
    if root_cause is not None:
        hints.append(f"- root cause (what the minimized case keeps): {root_cause.title()}")
    oob = out_of_bounds(verdict)
    if oob:
        hints.append(f"- memory: the kernel {oob}")
    irs = ir_sections(triage)
    return _fit(head_lines, script, hints, irs, len(script_text.splitlines()))


def ir_sections(triage: Any) -> list[tuple[str, str]]:
    """The IR an issue shows, as (summary, text): the scheduled TIR, and the IR given to the
    first wrong pass and after it (not when a located defect makes that pass a bystander)."""
    irs: list[tuple[str, str]] = []
    if triage is not None and triage.scheduled_tir:
        irs.append(("Scheduled TIR (before lowering)", triage.scheduled_tir))
    p = triage.first_wrong_pass if triage is not None else None
    if p and triage.ir_before:
        irs.append((f"IR given to {p}", triage.ir_before))
        if triage.ir_after:
            irs.append((f"IR after {p}", triage.ir_after))
    return irs


def ir_markdown(irs: list[tuple[str, str]]) -> str:
    """The IR sections whole, for ``IR_FILE`` when the issue body could not hold them."""
    return "\n".join(line for summary, ir in irs for line in _details(summary, ir)) + "\n"


def _details(summary: str, text: str) -> list[str]:
    return ["", f"<details><summary>{summary}</summary>", "", _fence(text, "python"), "",
            "</details>"]


def _fit(head: list[str], script: list[str], hints: list[str], irs: list[tuple[str, str]],
         script_lines: int) -> str:
    """The issue text, cut to :data:`GITHUB_BODY_LIMIT` characters in the module docstring's
    order."""
    limit = GITHUB_BODY_LIMIT
    def text(script_part: list[str], ir_parts: list[tuple[str, str]], dropped: int) -> str:
        out = head + script_part + hints
        for summary, ir in ir_parts:
            out += _details(summary, ir)
        if dropped or ir_parts != irs:
            out += ["", f"(IR cut to fit an issue body, {limit} characters"
                        f"{f'; {dropped} section(s) left out' if dropped else ''}: `{IR_FILE}`, "
                        f"beside this text in the repro directory, has them whole)"]
        return "\n".join(out) + "\n"

    full = text(script, irs, 0)
    if len(full) <= limit:
        return full
    short = [(f"{s} (first and last lines)", _trim(ir, IR_LINES_WHEN_LONG)) for s, ir in irs]
    for keep in range(len(short), -1, -1):  # the last sections (the IR after the pass) go first
        candidate = text(script, short[:keep], len(short) - keep)
        if len(candidate) <= limit:
            return candidate
    attach = ["", f"`repro.py` ({script_lines} lines) is too long for an issue body: attach the "
                  f"file (it is beside this text, in the repro directory)."]
    short_text = text(attach, [], len(irs))
    if len(short_text) <= limit:
        return short_text
    # only a giant program excerpt or output gets here: cut it, closing the open fence
    return short_text[:limit - 200] + f"\n````\n\n(cut at the issue body's limit, {limit} characters)\n"


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, sort_keys=True)
