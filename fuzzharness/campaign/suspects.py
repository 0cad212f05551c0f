"""Which earlier case damaged the worker?  Replaying a failure's predecessors in a fresh one.

A failure that does not reproduce alone (:mod:`fuzzharness.campaign.confirm`) was caused by
something an earlier case in the same worker process left behind: heap damage, an
out-of-bounds write that hit no guard zone, memory a later kernel reads without writing.
The suspects are the cases that process ran before it (``results.process``), oldest first.

First the failing case runs alone twice more (:data:`ALONE_AGAIN`): a failure that comes
back then is the case's own, only not every time — a data race in a parallel kernel, say —
and is recorded as a nondeterministic finding of that case, with nobody else suspected.

A *probe* runs the last ``m`` suspects and then the failing case, in order, in one worker
process that starts fresh for the probe (a child of the pool's zygote, ``"sequence"`` task:
the suspects run first, unreported, as a setup of the task); it *reproduces* when the failing case fails again
with the same kind of failure.  Assuming one culprit whose damage lasts (what the probes
then confirm), the probe of the last ``m`` suspects reproduces exactly when ``m`` reaches the
culprit, so the culprit is found by galloping (``m`` = 1, 2, 4, …: recent culprits, the usual
ones, cost few and short probes) and then bisecting between the last ``m`` that did not
reproduce and the first that did.  The candidate is then probed alone with the failing case
(``pair_reproduces``: twice in a row).  Only when that reproduces is the candidate blamed
(:mod:`fuzzharness.campaign.confirm`); otherwise the failure needs several earlier cases, and
the likelier story is that the *failing* case reads memory it never wrote, which happened to
hold what they left — then nobody gets a finding, and the search is recorded with the
failure.

Cost: each probe forks a fresh worker and runs up to ``2·d`` cases for a culprit ``d`` cases
back; :data:`MAX_SUSPECTS` and the caller's deadline bound it.  When even all
``MAX_SUSPECTS`` predecessors do not bring the failure back, nothing is blamed: the failure
is recorded as not reproducible (a race, a timing-dependent hang, damage older than that).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from fuzzharness.campaign.confirm_outcomes import reproduces
from fuzzharness.campaign.db import ResultsDB
from fuzzharness.core.verdict import Verdict

MAX_SUSPECTS = 64
ALONE_AGAIN = 2  # extra runs of the failing case alone before its predecessors are suspected


@dataclasses.dataclass
class SearchResult:
    suspects: int  # predecessors considered
    culprit: int | None = None
    window: int | None = None  # how many predecessors the smallest reproducing probe ran
    pair_reproduces: bool | None = None
    fails_alone: bool = False  # it failed again alone, in one of the extra runs: flaky
    probes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["state"] = "done"
        return d


def search(db: ResultsDB, victim: int, first: Verdict, make_pool: Callable[[], Any],
           deadline: float, *, task_for: Callable[[int], dict[str, Any]]) -> SearchResult:
    """Find the case after which ``victim`` (seen failing as ``first``) fails again."""
    start = time.monotonic()
    before = db.predecessors(victim, MAX_SUSPECTS)
    row = db.find_case(str(victim))
    result = SearchResult(len(before))

    def spec(r: dict[str, Any]) -> dict[str, Any]:
        if r.get("case"):
            return {"case": r["case"]}
        return {k: v for k, v in task_for(r["idx"]).items() if k != "task"}

    pool = make_pool()

    def probe(m: int) -> bool | None:
        """Does the victim fail after the last ``m`` suspects?  None: out of time."""
        return probe_rows(before[len(before) - m:] if m else [], m)

    def probe_rows(chosen: list[dict[str, Any]], m: int, label: str = "") -> bool | None:
        if time.monotonic() >= deadline:
            return None
        task = {**spec(row), "task": len(result.probes), "fresh": True,
                "sequence": [{**spec(r), "task": f"earlier-{r['idx']}"} for r in chosen]}
        (r,) = list(pool.run([task]))
        ok = reproduces(first, r.verdict)
        result.probes.append({"window": m, "reproduces": ok, "victim": r.verdict.line()[:160],
                              **({"probe": label} if label else {})})
        return ok

    try:
        return _search(result, before, probe, probe_rows, start)
    finally:
        pool.close()


def _search(result: SearchResult, before, probe, probe_rows, start: float) -> SearchResult:
    # A failure that comes and goes by itself (a data race in a parallel kernel) is the
    # case's own: alone again, twice, before anything earlier is suspected.
    for _ in range(ALONE_AGAIN):
        got = probe(0)
        if got is None:
            result.note = "stopped at the time limit"
            return _done(result, start)
        if got:
            result.fails_alone = True
            result.note = "it fails alone too, on some runs: a nondeterministic failure of its own"
            return _done(result, start)
    if not before:
        result.note = "no earlier case ran in its worker process"
        return _done(result, start)
    # gallop: 1, 2, 4, ... up to all suspects
    lo, hi, m = 0, None, 1
    while hi is None:
        m = min(m, len(before))
        got = probe(m)
        if got is None:
            result.note = "stopped at the time limit"
            return _done(result, start)
        if got:
            hi = m
        elif m == len(before):
            result.note = (f"the failure did not come back after its {len(before)} "
                           "predecessors either: not reproducible")
            return _done(result, start)
        else:
            lo, m = m, m * 2
    # bisect: the smallest window in (lo, hi] that reproduces
    while hi - lo > 1:
        mid = (lo + hi) // 2
        got = probe(mid)
        if got is None:
            result.note = "stopped at the time limit (culprit within the window found)"
            break
        lo, hi = (lo, mid) if got else (mid, hi)
    result.window = hi
    result.culprit = before[len(before) - hi]["idx"]
    # the candidate alone, then the failing case: twice (once more when that was the window)
    pair = [before[len(before) - hi]]
    result.pair_reproduces = all(probe_rows(pair, 1, "the candidate alone") is True
                                 for _ in range(1 if hi == 1 else 2))
    return _done(result, start)


def _done(result: SearchResult, start: float) -> SearchResult:
    result.seconds = round(time.monotonic() - start, 2)
    return result
