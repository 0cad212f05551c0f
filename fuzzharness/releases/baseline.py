"""Baseline comparison: is a failure a regression against another TVM, or older than that?

A CI gate and a nightly run ask "what changed?", not "what is wrong with TVM?".  With a
**baseline** (``fuzzharness run --baseline SPEC``, ``pytest -m differential --fuzz-baseline
SPEC``) every failure on the tested TVM is run again under the baseline TVM, and is one of:

``pre-existing``    the baseline fails on it the same way (the same symptom class — a wrong
                    value and a nan are one — and, for a failure with error text, the same
                    normalised message or throw site): not what this change did;
``regression``      the baseline runs it and passes (or only records a note): the tested TVM
                    broke it;
``not comparable``  the baseline cannot judge it: it refuses the schedule (an older
                    ``s_tir`` lacks the primitive or checks it differently), the case is
                    inconclusive there, it fails *differently* there (it may stop before
                    the tested failure could show), the harness fails under it, or the failure is a call
                    made while the schedule was drawn and neither a repro script nor the
                    generation task (pytest -m differential: seed and index) can make it.
                    Listed, never counted as a regression.

SPEC is a release of :data:`fuzzharness.releases.check.RELEASES` (``0.26``, ``0.26.0``: its
cached environment, made with pip on first use) or the path of a Python interpreter that
imports the baseline TVM (as ``--tvm-python``).  The baseline may be older or newer than the
tested TVM.  The case runs in a harness worker under the baseline interpreter
(:func:`fuzzharness.releases.check.run_case`); a failure while the schedule was drawn (the
case holds the trace *before* the failing call) runs its repro script instead, exit 1
meaning it fails there too.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from fuzzharness.buckets.root_causes import symptom_class
from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.core.verdict import Status, Verdict

PRE_EXISTING = "pre-existing"
REGRESSION = "regression"
NOT_COMPARABLE = "not comparable"
OUTCOMES = (REGRESSION, PRE_EXISTING, NOT_COMPARABLE)


class BaselineError(ValueError):
    """A baseline that cannot be used (user-facing, one line)."""


@dataclasses.dataclass(frozen=True)
class Baseline:
    label: str  # "TVM 0.26.0"
    python: str  # its interpreter


@dataclasses.dataclass(frozen=True)
class Comparison:
    """What the baseline did with one failure (plain data)."""

    outcome: str  # one of OUTCOMES
    baseline: str  # the baseline's label
    status: str  # the baseline's verdict status, or the repro script's exit ("exit 1")
    line: str = ""  # the baseline's verdict line

    def reason(self, tested: str) -> str:
        """One line for a test report: ``passes on TVM 0.26.0, fails on TVM 0.27.0``."""
        if self.outcome == REGRESSION:
            return f"regression: passes on {self.baseline}, fails on {tested}"
        if self.outcome == PRE_EXISTING:
            return f"pre-existing: also fails on {self.baseline} ({self.status})"
        return f"not comparable on {self.baseline}: {self.status}: {self.line[:160]}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def resolve(spec: str, *, say=lambda _: None) -> Baseline:
    """The baseline SPEC names (see the module docstring); BaselineError says why not."""
    from fuzzharness.core.interpreter import check_interpreter, versions_of
    from fuzzharness.releases import check

    if "/" in spec or Path(spec).name.startswith("python"):
        try:
            python = check_interpreter(spec)
            tvm = versions_of(python).get("tvm", "?")
        except ValueError as e:
            raise BaselineError(f"baseline {spec}: {e}") from None
        return Baseline(f"TVM {tvm}", python)
    try:
        (release,) = check.find([spec])[-1:]
    except ValueError as e:
        raise BaselineError(f"baseline: {e} (or give the path of a Python interpreter)") from None
    try:
        python = check.environment(release, say=say)
    except check.ReleaseEnvError as e:
        raise BaselineError(f"baseline TVM {release.version}: {e}") from None
    return Baseline(f"TVM {release.version}", str(python))


def judge(case: dict[str, Any], tested: Signature | None, base: Verdict) -> str:
    """The outcome for a failure (bucket signature ``tested``) whose case gave ``base`` on
    the baseline: the same failure there (symptom class; for a failure with error text, the
    same normalised message or throw site) is pre-existing; a pass is a regression; a
    different failure there (it stops before the tested failure could show) is not
    comparable, like a refusal."""
    if base.status is Status.PASS or base.status.is_note:
        return REGRESSION
    if not base.is_finding:
        return NOT_COMPARABLE  # schedule_rejected, inconclusive, harness_error
    theirs = signature(case, base)
    if tested is None or theirs is None:
        return PRE_EXISTING
    if symptom_class(tested) != symptom_class(theirs):
        return NOT_COMPARABLE
    if (tested.has_text or theirs.has_text) and not (
            tested.detail == theirs.detail or (tested.site and tested.site == theirs.site)):
        return NOT_COMPARABLE
    return PRE_EXISTING


def compare(baseline: Baseline, case: dict[str, Any], tested: Signature | None, *,
            script: Path | None = None, timeout: float = 120.0) -> Comparison:
    """Run ``case`` (a failure on the tested TVM, bucket signature ``tested``) under the
    baseline and say what it is."""
    return compare_all(baseline, [("case", case, tested, script)], timeout=timeout)["case"]


def compare_all(baseline: Baseline,
                items: list[tuple[str, dict[str, Any] | None, Signature | None, Path | None]], *,
                timeout: float = 120.0) -> dict[str, Comparison]:
    """:func:`compare` for many failures (``(key, case, signature, repro script or None)``),
    the cases in one worker pool under the baseline interpreter (a pool per case would start
    a TVM each).  A failure without a case to replay (none stored, or one that holds the
    trace *before* a failing call made while the schedule was drawn) runs its script."""
    out = {k: _by_script(baseline, s, timeout) for k, c, _, s in items
           if c is None or (c.get("origin") or {}).get("failing_call")}
    given = {k: (c, sig) for k, c, sig, _ in items if k not in out}
    for key, v, _ in _run(baseline, [{"task": k, "case": c} for k, (c, _) in given.items()], timeout):
        case, sig = given[key]
        out[key] = Comparison(judge(case, sig, v), baseline.label, v.status.value, v.line()[:300])
    return out


def compare_task(baseline: Baseline, task: dict[str, Any], tested: Signature | None, *,
                 timeout: float = 120.0) -> Comparison:
    """Run a *generation task* (seed, index, settings: the case is drawn in the worker) under
    the baseline: a failure made while the schedule was drawn has no stored case, but the
    same task draws the same choices there and makes the same call (pytest -m differential)."""
    ((_, v, case),) = _run(baseline, [dict(task)], timeout)
    return Comparison(judge(case or {}, tested, v), baseline.label, v.status.value, v.line()[:300])


def _run(baseline: Baseline, tasks: list[dict[str, Any]], timeout: float) -> list[tuple]:
    """``(task key, verdict, case)`` of each task, run in one worker pool under the baseline's
    interpreter (a worker that dies gives a crash or harness_error verdict, never raises)."""
    if not tasks:
        return []
    import os

    from fuzzharness.core.interpreter import WORKER_PYTHON_ENV
    from fuzzharness.engine.pool import WorkerPool

    env = {**os.environ, WORKER_PYTHON_ENV: baseline.python}
    with WorkerPool(1, timeout=timeout, env=env) as pool:
        return [(r.task["task"], r.verdict, r.case) for r in pool.run(tasks)]


def _by_script(baseline: Baseline, script: Path | None, timeout: float) -> Comparison:
    """A failure while the schedule was drawn: only its repro script makes the failing call."""
    from fuzzharness.repro.verify import run_script

    if script is None or not Path(script).is_file():
        return Comparison(NOT_COMPARABLE, baseline.label, "no script",
                          "a failure while the schedule was drawn, and no repro script to make "
                          "the failing call")
    run = run_script(script, python=baseline.python, timeout=timeout)
    outcome = {1: PRE_EXISTING, 0: REGRESSION}.get(run.status, NOT_COMPARABLE)
    last = [ln for ln in run.output.splitlines() if ln.strip()]
    return Comparison(outcome, baseline.label, f"repro exit {run.status}", (last or [""])[-1][:300])
