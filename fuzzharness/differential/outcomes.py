"""How a differential case or a corpus entry becomes a test outcome.

* ``pass`` → passed; ``inconclusive`` (the error model cannot judge, or the machine cannot
  run the program) and ``schedule_rejected`` (TVM legitimately refused the random schedule)
  → skipped with the reason, never passed;
* a TVM finding that the known-bugs file matches → xfail with the bug's link; with
  ``--fuzz-baseline`` any other finding is run under the baseline TVM: failing there too (or
  not comparable there) → xfail with the reason, passing there → failed as a regression
  (:mod:`fuzzharness.releases.baseline`); any other finding, and harness errors → failed, with the verdict and where the failing case was
  written (:func:`write_failure`: ``case.json``, the ``fuzzharness replay`` command, and a
  verified standalone ``repro.py``);
* a corpus entry reproduces when replaying ``case.json`` gives a finding with the bucket key
  of ``meta.json`` and its ``repro.py`` exits 1; ``expected = "reproduces"`` entries are
  ``xfail(strict=True)`` (:class:`BugReproduces`), so a fixed bug XPASSes loudly.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest

from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import versions
from fuzzharness.core.verdict import Status, Verdict
from fuzzharness.differential.plan import State, rerun_command, unavailable_reason
from fuzzharness.repro import corpus
from fuzzharness.repro.package import write_repro
from fuzzharness.repro.verify import run_script


class BugReproduces(AssertionError):
    """A corpus entry still fails with its recorded bucket signature."""


def check_corpus(state: State, spec: corpus.Entry) -> None:
    """The entry reproduces when replaying ``case.json`` gives a finding with the bucket
    key of ``meta.json`` and, where there is a ``repro.py``, the script exits 1; it is
    fixed when neither fails.  A disagreement between the two fails the test."""
    if spec.problem is not None:
        pytest.fail(spec.problem, pytrace=False)
    if (reason := unavailable_reason(spec)) is not None:
        pytest.skip(f"corpus entry {spec.name}: target unavailable on this machine: {reason}")
    result = state.runner.result(f"corpus:{spec.name}")
    v, case = result.verdict, result.case or spec.case
    script = spec.dir / "repro.py"
    run = run_script(script, timeout=state.timeout) if script.is_file() else None
    code, output = (run.status, run.output[-2000:]) if run else (None, "")
    origin = (spec.case or {}).get("origin") or {}
    if origin.get("failing_call") and origin.get("failing_verdict") and code == 1:
        # a failure while the schedule was drawn: case.json holds the trace *before* the
        # failing call (fuzzharness/repro/generation_failure.py), so replaying it passes;
        # only the script makes the call, and the stored verdict is what it reproduces
        v = Verdict.from_dict(origin["failing_verdict"])
    sig = signature(case, v)
    want = expected_key(spec.meta)
    state.outcomes[f"corpus:{spec.meta['expected']}"] += 1
    reproduces = sig is not None and v.is_finding and (want is None or sig.key == want)
    if script.is_file():
        if code not in (0, 1):
            pytest.fail(f"corpus entry {spec.name}: {script} exited {code} (1 means "
                        f"reproduces, 0 fixed):\n{output}", pytrace=False)
        if (code == 1) != reproduces:
            pytest.fail(
                f"corpus entry {spec.name}: repro.py exits {code} "
                f"({'reproduces' if code == 1 else 'fixed'}) but replaying case.json "
                f"{'reproduces bucket ' + str(want) if reproduces else 'gives ' + v.line()}"
                ": one of them no longer captures the bug", pytrace=False)
    if reproduces:
        text = failure_text(state, case, v, f"corpus entry {spec.name}",
                            spec.dir / "case.json", script if script.is_file() else None)
        if spec.meta["expected"] == "reproduces":
            raise BugReproduces(text)
        pytest.fail(f"corpus entry {spec.name} is marked fixed but fails again:\n{text}",
                    pytrace=False)
    if v.is_finding or v.status.value == "harness_error":
        paths = write_failure(state.out / "corpus" / spec.name, case, v)
        text = failure_text(state, case, v, f"corpus entry {spec.name}", *paths)
        pytest.fail(f"corpus entry {spec.name} fails with a different bucket "
                    f"({sig.key if sig else '-'} ≠ {want}):\n{text}", pytrace=False)


def expected_key(meta: dict[str, Any]) -> str | None:
    """The bucket key a corpus entry must reproduce (meta.json ``signature``: a Signature
    dict or its key; ``bucket``/``key`` also accepted).  None: any finding counts."""
    sig = meta.get("signature")
    if isinstance(sig, dict):
        if isinstance(sig.get("key"), str):
            return sig["key"]
        return Signature.from_dict(sig).key
    for k in ("signature", "bucket", "key"):
        if isinstance(meta.get(k), str) and meta[k]:
            return meta[k]
    return None


def check_case(state: State, result, what: str, nodeid: str | None = None) -> None:
    """pass → return; inconclusive / schedule_rejected → skip; known bug → xfail; else fail."""
    v, case = result.verdict, result.case
    if v.status is Status.PASS:
        state.outcomes["judged:pass"] += 1
        return
    if v.status is Status.INCONCLUSIVE:
        state.outcomes["inconclusive (skipped)"] += 1
        why = v.details.get("not_run") or v.details.get("inconclusive") or v.message
        pytest.skip(f"inconclusive: {why}")
    if v.status.is_note:  # order_preserving_divergence: recorded, not a failure
        state.outcomes[f"note: {v.status.value} (passed)"] += 1
        return
    if v.status is Status.SCHEDULE_REJECTED:
        state.outcomes["schedule rejected (skipped)"] += 1
        pytest.skip(f"TVM refused the random schedule (not a finding): {v.message[:200]}")
    sig = signature(case, v)
    if v.is_finding and sig is not None:
        bug = state.bugs.match(sig, _tvm_version())
        if bug is not None:
            state.outcomes[_judged(v, "known bug (xfail)")] += 1
            pytest.xfail(f"known TVM bug {bug.label()}: {v.line()}")
    paths = write_failure(state.out / (case or {}).get("id", result.task["task"]), case, v)
    text = failure_text(state, case, v, what, *paths, nodeid=nodeid)
    if v.is_finding and state.baseline is not None:
        _against_baseline(state, case, paths[1], nodeid, text, v, result.task)
    state.outcomes[_judged(v, "FAILED")] += 1
    pytest.fail(text, pytrace=False)


def _against_baseline(state: State, case: dict[str, Any] | None, script: Path | None,
                      nodeid: str | None, text: str, v, task: dict[str, Any] | None = None) -> None:
    """--fuzz-baseline: a failure the baseline shares (or cannot judge) is xfail; one the
    baseline passes is a regression, failed with that first (fuzzharness.releases.baseline)."""
    from fuzzharness.releases.baseline import (
        NOT_COMPARABLE,
        REGRESSION,
        Comparison,
        compare,
        compare_task,
    )

    if case is None and task is not None:
        # a failure while its schedule was drawn (no case reported): the same generation
        # task draws the same choices under the baseline and makes the same call there
        c = compare_task(state.baseline, task, signature(None, v), timeout=state.timeout)
    elif case is None:
        c = Comparison(NOT_COMPARABLE, state.baseline.label, "no case",
                       "no case recorded to run there")
    else:
        c = compare(state.baseline, case, signature(case, v), script=script, timeout=state.timeout)
    state.compared.append((nodeid or (case or {}).get("id", ""), c))
    tested = f"TVM {_tvm_version() or '?'}"
    if c.outcome == REGRESSION:
        state.outcomes[_judged(v, "REGRESSION (FAILED)")] += 1
        pytest.fail(f"{c.reason(tested)}\n{text}", pytrace=False)
    state.outcomes[f"{c.outcome} (xfail)"] += 1
    pytest.xfail(f"{c.reason(tested)}: {v.line()}")


def _judged(v, label: str) -> str:
    return f"judged:{label}" if v.stage.value in ("verify", "done") else label


def _tvm_version() -> str | None:
    try:
        return version("apache-tvm")
    except PackageNotFoundError:
        return None


def write_failure(folder: Path, case: dict[str, Any] | None, verdict) -> tuple[Path | None, Path | None]:
    """Write what a maintainer needs to reproduce a failing case; return (case JSON, repro).

    The one place where a failing differential test hands its case on: ``case.json`` and
    ``verdict.json`` always; with the minimizer's repro writer installed
    (``fuzzharness.repro.package.write_repro``), also a standalone ``repro.py`` — returned only
    when it reproduced in a fresh process (no triage: that is the campaign's job).  Without
    the writer, or when it fails, the message names ``fuzzharness replay`` instead.
    """
    if case is None:  # the worker died before it reported the generated case
        return None, None
    folder.mkdir(parents=True, exist_ok=True)
    case_path = folder / "case.json"
    case_path.write_text(json.dumps(case, indent=1, sort_keys=True))
    (folder / "verdict.json").write_text(json.dumps(verdict.to_dict(), indent=1, default=str))
    try:
        sig = signature(case, verdict)
        outcome = write_repro(folder, Case.from_dict(case), verdict,
                              bucket=sig.key if sig else "", signature=sig,
                              versions=versions(), triage=False)
    except Exception as e:  # noqa: BLE001 - a failing writer must not hide the verdict
        (folder / "repro-error.txt").write_text(f"{type(e).__name__}: {e}\n")
        return case_path, None
    script = Path(outcome.dir) / "repro.py"
    return case_path, script if outcome.reproduced and script.is_file() else None


def failure_text(state: State, case, v, what: str, case_path: Path | None,
                 repro: Path | None, nodeid: str | None = None) -> str:
    worst = (f"{v.worst_output}{list(v.worst_index)}"
             if v.worst_output is not None and v.worst_index is not None else "-")
    ratio = f"{v.ratio:.4g}" if v.ratio is not None else "-"
    lines = [f"{v.status.value} at stage {v.stage.value}: {what}",
             f"  error/bound ratio {ratio} (> 1 fails), worst element {worst}"]
    if v.worst_error is not None:
        lines[-1] += f", |actual - reference| = {v.worst_error:.4g}"
    if v.message:
        lines.append(f"  message: {v.message.strip().splitlines()[0][:300]}")
    if v.status.value == "harness_error" and v.details.get("traceback"):
        tail = [ln for ln in str(v.details["traceback"]).splitlines() if ln.strip()][-6:]
        lines.append("  harness traceback (a bug in tvm-fuzzharness, not TVM):")
        lines += [f"    {ln}" for ln in tail]
    if case:
        lines.append(f"  case {case.get('id')} ({case.get('workload', {}).get('name')} "
                     f"{json.dumps(case.get('workload', {}).get('params'))})")
    if repro is not None:
        lines.append(f"  repro script: {repro}  (run: python {repro})")
    if case_path is not None:
        lines.append(f"  case JSON: {case_path}")
        lines.append(f"  replay: fuzzharness replay {case_path}")
    else:
        lines.append("  (no case recorded: its generation failed, or the worker died before "
                     f"reporting it; it regenerates with --fuzz-seed {state.seed})")
    lines.append(f"  rerun: {rerun_command(state, nodeid)}")
    return "\n".join(lines)
