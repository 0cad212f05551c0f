"""Minimize (or only write the repro of) one case given as a file or a campaign row."""

from __future__ import annotations

from pathlib import Path

from fuzzharness.backends import backends
from fuzzharness.buckets.signatures import signature
from fuzzharness.core.case import Case, CaseFormatError
from fuzzharness.core.errors import UsageError
from fuzzharness.core.tvm_support import versions
from fuzzharness.core.verdict import Verdict
from fuzzharness.engine.isolated import run_isolated
from fuzzharness.generators.cases import GenSettings
from fuzzharness.generators.workloads import workloads
from fuzzharness.minimize import DEFAULT_BUDGET
from fuzzharness.minimize.minimizer import minimize
from fuzzharness.minimize.report import REPROS_DIR, BucketRepro, say_to_stderr
from fuzzharness.repro.package import write_repro


def load_case_file(path: str | Path) -> Case:
    """The case in a case file; an unreadable file is a usage error, a bad one a format error."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise UsageError(f"cannot read {p}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise CaseFormatError(f"{p}: not a text file") from None
    return Case.from_json(text)


def check_names(case: Case) -> None:
    """Unknown workload or target kind: a usage error now, not a harness_error verdict later."""

    workloads[case.workload_name]
    backends[case.target.get("kind", "")]


def run_once(case: Case, timeout: float) -> Verdict:

    return run_isolated(case, timeout)


def minimize_case_file(path: str | Path, *, out: Path | None = None,
                       budget: float = DEFAULT_BUDGET, workers: int = 2, timeout: float = 30.0,
                       verify_times: int = 1, triage: bool = True,
                       progress: bool = True) -> BucketRepro:

    case = load_case_file(path)
    check_names(case)
    verdict = run_once(case, timeout)
    if not verdict.is_finding:
        return BucketRepro("-", f"{case.id}: {verdict.line()}", 1, "no failure to minimize")
    target = signature(case.to_dict(), verdict)
    res = BucketRepro(target.key, target.title(), 1, "failed")
    say = say_to_stderr(progress)
    m = minimize(case, verdict, target, gen_settings=GenSettings(), budget=budget,
                 workers=workers, timeout=timeout, progress=say)
    say(f"minimized in {m.seconds:.1f} s ({m.runs} runs): " + "; ".join(m.phases))
    res.seconds, res.original_length, res.length = m.seconds, m.original_length, m.length
    res.unit = m.unit
    if not m.reproduced or m.case is None:
        res.status, res.note = "did not reproduce at start", m.note
        return res
    d = (out or Path(REPROS_DIR)) / target.key
    sig = signature(m.case.to_dict(), m.verdict)
    outcome = write_repro(d, m.case, m.verdict, bucket=target.key, signature=sig,
                          versions=versions(), minimized=m.to_dict(), verify_times=verify_times,
                          triage=triage, timeout=timeout, first_seen=target.title())
    res.dir, res.runs, res.issue_title = d, len(outcome.runs), outcome.title
    res.status = "reproduced" if outcome.reproduced else "not reproduced"
    res.note = outcome.problem
    return res
