"""Run one case in a fresh worker process: a crash of TVM becomes a verdict, not our death."""

from __future__ import annotations

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Verdict
from fuzzharness.engine.pool import WorkerPool


def run_isolated(case: Case, timeout: float) -> Verdict:
    """The verdict of ``case`` run alone in a new one-worker pool (``timeout`` seconds)."""
    with WorkerPool(1, timeout=timeout) as pool:
        (result,) = list(pool.run([{"task": 0, "case": case.to_dict()}]))
    return result.verdict
