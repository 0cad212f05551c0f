"""One bucket's repro directory: ``case.json``, ``repro.py`` and — only once verified —
``issue.md``.

Invariant: ``issue.md`` exists only when ``repro.py`` exited with status 1 (the bug
reproduces) in every verification run, each in a fresh isolated process.  Otherwise the
directory holds ``NOT-REPRODUCED.md`` with what the script printed instead, and any older
``issue.md`` is removed: a repro that does not reproduce is never presented as a bug.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from pathlib import Path
from typing import Any

from fuzzharness.buckets.root_causes import (
    SCHEDULE_CULPRIT,
    RootCause,
    culprit_of,
    defect_phrase,
    located_mechanisms,
    root_cause,
)
from fuzzharness.buckets.signatures import Signature
from fuzzharness.core.case import Case
from fuzzharness.core.kinds import repro_kind
from fuzzharness.core.verdict import Verdict
from fuzzharness.engine.worker_deaths import signal_name
from fuzzharness.repro import issue as issue_md
from fuzzharness.repro.kit import NotReproducible
from fuzzharness.repro.verify import Run, fix_test, foreign_imports, run_script, verify

OUTPUT_TAIL = 4000
SNIPPET_TIMEOUT = 300.0
#: the repro directory's metadata: the finding as plain data, the same words as issue.md and
#: repro.py (title, the minimized case's bucket, the campaign bucket it was found as, the root
#: cause and its culprit); read by ``fuzzharness known add`` and ``fuzzharness corpus add``
FINDING = "finding.json"


@dataclasses.dataclass
class ReproResult:
    bucket: str
    dir: Path
    reproduced: bool
    runs: list[Run]
    title: str
    record: dict[str, Any]
    problem: str = ""  # why no script could be written / it did not reproduce
    triage: Any = None  # the pass probe (fuzzharness.kinds.tir.pass_bisect.Triage), if run
    root_cause: RootCause | None = None  # of a verified repro


def write_repro(out: str | Path, case: Case, verdict: Verdict, *, bucket: str,
                signature: Signature | None, versions: dict[str, str],
                minimized: dict[str, Any] | None = None, verify_times: int = 1,
                triage: bool = True, timeout: float | None = None,
                failing_call: str | None = None, script=None,
                first_seen: str = "") -> ReproResult:
    """Write, verify and describe the repro of ``case`` in directory ``out``."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    (d / "case.json").write_text(case.to_json() + "\n")
    date = datetime.date.today().isoformat()
    title = issue_md.title(case, verdict, failing_call)
    record: dict[str, Any] = {
        "bucket": bucket, "case_id": case.id, "case_json": json.dumps(case.to_dict(), sort_keys=True),
        "signature": signature.to_dict() if signature else None, "path": str(d),
        "reproduced": False, "runs": 0, "exit_code": None, "output": "",
        "original_length": (minimized or {}).get("original_length"),
        "length": (minimized or {}).get("length"),
        "minimize_seconds": (minimized or {}).get("seconds"),
        "minimize_runs": (minimized or {}).get("runs"), "title": title, "notes": [],
    }
    kind = repro_kind(case)
    try:
        s = script or kind.write_script(
            case, verdict, bucket=bucket, signature=signature, versions=versions,
            timeout=timeout, date=date, title=title, failing_call=failing_call,
            first_seen=first_seen)
    except NotReproducible as e:
        return _not_reproduced(d, record, bucket, title, [], f"no standalone script: {e}")
    except Exception as e:  # noqa: BLE001 - e.g. an index map the relayout cannot evaluate
        return _not_reproduced(d, record, bucket, title, [],
                               f"could not write a script: {type(e).__name__}: {e}")
    foreign = foreign_imports(s.text)
    if foreign:
        raise AssertionError(f"repro script imports {foreign}")  # a bug in this module
    (d / "repro.py").write_text(s.text)
    record["notes"] = s.notes
    runs = verify(d / "repro.py", times=verify_times)
    last = runs[-1]
    record.update(runs=len(runs), exit_code=last.exit_code, output=last.output[-OUTPUT_TAIL:])
    if not all(r.reproduced for r in runs) or len(runs) < verify_times:
        fault = last.script_fault
        return _not_reproduced(d, record, bucket, title, runs, fault or
                               f"the script exited {last.exit_code} (1 means reproduced)")
    record["reproduced"] = True
    t = None
    if triage:
        t = kind.bisect_passes(case, verdict, s.expect.get("error"), d)
    record["notes"] = [*s.notes, "triage: not probed" if t is None else f"triage in {t.seconds:.1f} s"]
    if t is not None and hasattr(t, "located"):
        t.located = list(located_mechanisms(t.culprit_step, t.step_facts,
                                            signature.facts if signature else ()))
    culprit = culprit_of(t, verdict.status.value)
    test = fix_test_outcome(d / "repro.py", culprit, t)
    confirmed = test in ("raised in it", "confirmed")
    if test in ("confirmed", "not confirmed"):
        record["notes"].append(f"culprit {culprit}: {test} by a fix test")
        if hasattr(t, "fix_test"):
            t.fix_test = test
    named = culprit if confirmed or culprit == SCHEDULE_CULPRIT else ""
    defect = (defect_phrase(t.culprit_step, t.located)
              if named == SCHEDULE_CULPRIT and getattr(t, "located", None) else "")
    new_title = issue_md.title(case, verdict, failing_call, t.raised_in if t else None, named,
                               defect)
    if new_title != title:  # the probe named the culprit: the script's docstring says so too
        s.text = s.text.replace('"""' + title + "\n", '"""' + new_title + "\n", 1)
        (d / "repro.py").write_text(s.text)
        title = record["title"] = new_title
    rc = None
    if signature is not None:
        rc = root_cause(case.to_dict(), signature, named, getattr(t, "culprit_step", ""),
                        tuple(getattr(t, "step_facts", ())), tuple(getattr(t, "step_site", ())))
        record["root_cause"], record["root_cause_fields"] = rc.key, rc.to_dict()
    short = _checked_snippet(d, s, record)
    finding = {
        "format": 1, "title": title, "bucket": signature.key if signature else bucket,
        "found_as": bucket, "signature": signature.to_dict() if signature else None,
        "root_cause": rc.key if rc else None, "root_cause_fields": rc.to_dict() if rc else None,
        "culprit": culprit, "culprit_confirmed": confirmed, "case_id": case.id, "verified_runs": len(runs),
        "snippet": short is not None, "date": date, "tvm": versions.get("tvm"),
        "harness": versions.get("harness"),
    }
    (d / FINDING).write_text(json.dumps(finding, indent=1, sort_keys=True) + "\n")
    text = issue_md.issue_markdown(
        case=case, verdict=verdict, bucket=bucket, signature=signature, script_text=s.text,
        script_output=last.output, schedule_lines=s.schedule_lines, versions=versions,
        triage=t, date=date, minimized=minimized, runs=len(runs), failing_call=failing_call,
        issue_title=title, snippet=short, root_cause=rc)
    (d / "issue.md").write_text(text)
    irs = issue_md.ir_sections(t)
    if any(ir.rstrip() not in text for _, ir in irs):  # cut to fit an issue body: keep them whole here
        (d / issue_md.IR_FILE).write_text(issue_md.ir_markdown(irs))
    else:
        (d / issue_md.IR_FILE).unlink(missing_ok=True)
    (d / "NOT-REPRODUCED.md").unlink(missing_ok=True)
    return ReproResult(bucket, d, True, runs, title, record, triage=t, root_cause=rc)


def fix_test_outcome(script: Path, culprit: str, t: Any) -> str:
    """The fix test of a culprit the pass probe named: "confirmed" when the repro, run with
    that pass disabled, says fixed, else "not confirmed"; "raised in it" for a pass that
    raised (the error comes from inside it: its own evidence); "" when there is no pass to
    disable (none named, or "the scheduled program is already wrong")."""
    if not culprit or culprit == SCHEDULE_CULPRIT:
        return ""
    if t is not None and getattr(t, "raised_in", None) == culprit:
        return "raised in it"
    run = fix_test(script, [culprit])
    return "confirmed" if run is not None and run.status == 0 else "not confirmed"


def _checked_snippet(d: Path, s, record: dict[str, Any]) -> str | None:
    """Write the issue's short snippet to ``snippet.py`` and run it in a fresh process; keep
    it only when it fails the way the harness saw (an AssertionError for a wrong output, the
    error for a compile error, the signal for a crash)."""
    path = d / "snippet.py"
    if not s.snippet:
        path.unlink(missing_ok=True)
        return None
    path.write_text(s.snippet)
    run = run_script(path, timeout=SNIPPET_TIMEOUT)
    want = s.snippet_expect or {}
    out = run.output or ""
    if "assertion" in want:
        ok = run.exit_code == 1 and "AssertionError" in out
    elif "signal" in want:
        ok = run.exit_code is not None and run.exit_code < 0 and (
            want["signal"] is None or signal_name(run.exit_code) in want.get("signals", [want["signal"]]))
    elif "error" in want:
        ok = run.exit_code not in (0, None) and re.search(want["error"], out) is not None
    else:
        ok = False
    if not ok:
        path.unlink(missing_ok=True)
        record["notes"] = [*record.get("notes", []),
                           f"short snippet dropped: it exited {run.exit_code}, not as the bug does"]
        return None
    return s.snippet


def _not_reproduced(d: Path, record: dict[str, Any], bucket: str, title: str, runs: list[Run],
                    problem: str) -> ReproResult:
    (d / "issue.md").unlink(missing_ok=True)
    out = runs[-1].output if runs else ""
    (d / "NOT-REPRODUCED.md").write_text(
        f"# Not reproduced: no issue written\n\n{problem}\n\n"
        + (f"Output of the last run:\n\n```\n{out}\n```\n" if out else ""))
    record["notes"] = [*record.get("notes", []), problem]
    return ReproResult(bucket, d, False, runs, title, record, problem)
