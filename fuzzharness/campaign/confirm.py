"""Confirmation: a failure becomes a finding only when it holds up alone.

A campaign's worker process runs hundreds of cases in a row.  A case that writes out of
bounds or reads memory nothing wrote can make a *later* case in the same process crash, fail
or pass; heap hygiene (:mod:`fuzzharness.core.hygiene`) and guard zones
(:mod:`fuzzharness.backends.redzone`) catch most of that at the case that did it, and
confirmation catches the rest.  Every failure that is a TVM finding is stored at once (a
driver killed now loses nothing) with confirmation ``pending`` and *no bucket*; the same task
then runs again in a worker process that has run nothing before (a ``"fresh"`` task, see
:mod:`fuzzharness.engine.fresh`), and the two verdicts decide:

``confirmed``                           the same kind of failure again (status class: wrong
                                        result and nan/inf are one class; a crash is a crash
                                        whichever signal) with the same output bits;
``confirmed, nondeterministic output``  the same kind of failure with other output bits (or
                                        the other status of its class): the signature of a
                                        read of unwritten memory.  Both runs' outputs are
                                        kept, ``OUT/outputs/<idx>-campaign.npz`` and
                                        ``<idx>-alone.npz``;
``not reproduced alone``                anything else.  The stored verdict becomes the one
                                        seen alone (usually a pass), and the campaign's is
                                        kept in ``confirmations.campaign_verdict``.  At the
                                        end of the run it runs alone twice more: failing
                                        again then, it is the case's own nondeterministic
                                        failure after all (``confirmed, nondeterministic
                                        output``: a data race, say).

Only then does the result get its bucket — which is what the summary, the exit status and
the minimization see: a failure that does not reproduce alone is never a TVM finding by
itself.  Its worker's earlier cases are the suspects: once the campaign's own cases are
done (before the minimization takes all workers, so that what it finds is minimized too,
:meth:`Confirmer.search_damage`) they are replayed in order in a fresh worker (:mod:`fuzzharness.campaign.suspects`) to find the case
after which the failure comes back, and *that* case gets the finding — a ``crash`` of kind
``heap_damage`` at stage ``run`` (outcome ``damages the worker``), when the failure also
comes back with just the two of them in a fresh worker, and unless it already is a finding
of its own.

Durability: a resumed campaign re-submits the confirmations still ``pending`` and runs the
searches not done yet.  The campaign's outputs of a pending failure live in memory only;
after a driver death, a nondeterministic failure keeps the outputs of its run alone.

Invariant: a result's bucket is set once its confirmation is settled, in the same
transaction (:meth:`fuzzharness.campaign.db.ResultsDB.confirm`), so bucket counts always equal
the results that name them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.campaign import suspects
from fuzzharness.campaign.confirm_outcomes import (  # noqa: F401 - the outcomes, re-exported
    CONFIRMED,
    DAMAGES,
    NONDETERMINISTIC,
    NOT_ALONE,
    PENDING,
    outcome_of,
    reproduces,
    status_class,
)
from fuzzharness.campaign.db import ResultsDB
from fuzzharness.core.verdict import Stage, Status, Verdict
from fuzzharness.engine import output_arrays
from fuzzharness.engine.executor import Task, TaskResult

OUTPUTS_DIR = "outputs"
SEARCH_BUDGET = 300.0  # seconds for all suspect searches of one run, together


@dataclasses.dataclass
class Change:
    """What one stored result became: for the campaign's counts, progress and buckets."""

    idx: int
    verdict: Verdict
    signature: Signature | None
    old_status: str | None = None  # the status it was counted under before (None: new row)


class Confirmer:
    """The campaign's confirmation policy (see the module docstring).

    ``submit`` queues a task into the running executor (``Executor.add``); ``task_for(idx)``
    is the campaign's task of case ``idx`` (to regenerate a case that was never stored).
    """

    def __init__(self, db: ResultsDB, out: Path, *, enabled: bool,
                 submit: Callable[[Task], None], task_for: Callable[[int], Task]):
        self.db = db
        self.out = Path(out)
        self.enabled = enabled
        self.submit = submit
        self.task_for = task_for
        self._outputs: dict[int, str] = {}  # campaign outputs of pending failures (encoded)
        self.counts: dict[str, int] = {}  # outcomes settled in this session
        self.in_flight: set[int] = set()  # cases whose confirmation run was submitted, unsettled

    # -- tasks -------------------------------------------------------------------------------
    def options(self) -> dict[str, Any]:
        """Keys every campaign task carries (a finding's outputs come back with it)."""
        return {"outputs": True} if self.enabled else {}

    def confirmation_task(self, idx: int, case: dict[str, Any] | None,
                          first: Verdict | dict[str, Any] | None = None) -> Task:
        """The task that runs case ``idx`` again alone.  With the campaign's verdict
        ``first``, the run skips the facts about its program (``skip_facts``) when it ends in
        a status of ``first``'s class: the settled verdict is then ``first`` itself, facts and
        all (:func:`outcome_of`), and the facts of the run alone are never read — for a wrong
        result they cost a rebuild of the kernel without vectorization (~15 % of a
        confirmation's CPU).  Another status keeps its facts: it may become the result."""
        base = {"case": case} if case else {k: v for k, v in self.task_for(idx).items()
                                            if k != "task"}
        task = {**base, "task": f"confirm-{idx}", "confirm_of": idx, "fresh": True,
                "outputs": True}
        if first is not None:
            status = Status(first["status"] if isinstance(first, dict) else first.status)
            task["skip_facts"] = sorted(s.value for s in Status
                                        if status_class(s) == status_class(status))
        return task

    def resume(self) -> int:
        """Re-submit the confirmations a killed driver left pending; how many."""
        if not self.enabled:
            return 0
        rows = self.db.with_confirmation(PENDING)
        for row in rows:
            self.in_flight.add(row["idx"])
            self.submit(self.confirmation_task(row["idx"], row["case"], row["verdict"]))
        return len(rows)

    # -- results -----------------------------------------------------------------------------
    def handle(self, r: TaskResult) -> list[Change]:
        """Store a campaign result, or settle the failure a confirmation run was for."""
        if r.task.get("confirm_of") is not None:
            return self._settle(int(r.task["confirm_of"]), r)
        idx = int(r.task["task"])
        outputs = output_arrays.take(r.verdict.details)
        sig = signature(r.case, r.verdict)
        pending = self.enabled and r.verdict.is_finding
        stored = self.db.add_result(idx, r.case, r.verdict, elapsed=r.elapsed, worker=r.worker,
                                    signature=None if pending else sig,
                                    process=r.process or None,
                                    confirmation=PENDING if pending else None)
        if not stored:
            return []
        if pending:
            if outputs:
                self._outputs[idx] = outputs
            self.in_flight.add(idx)
            self.submit(self.confirmation_task(idx, r.case, r.verdict))
            return [Change(idx, r.verdict, None)]
        return [Change(idx, r.verdict, sig)]

    def _settle(self, idx: int, r: TaskResult) -> list[Change]:
        self.in_flight.discard(idx)
        row = self.db.find_case(str(idx))
        if row is None:
            return []
        alone = r.verdict
        alone_outputs = output_arrays.take(alone.details)
        first = Verdict.from_dict(row["verdict"])
        case = row["case"] or r.case
        outcome = outcome_of(first, alone)
        files = None
        if outcome == NONDETERMINISTIC:
            files = self._keep_outputs(idx, self._outputs.get(idx), alone_outputs)
        self._outputs.pop(idx, None)
        final = first if outcome != NOT_ALONE else alone
        sig = signature(case, final)
        search = {"state": "pending"} if outcome == NOT_ALONE else None
        self.db.confirm(idx, verdict=final, signature=sig, outcome=outcome,
                        campaign_verdict=first, alone_verdict=alone, outputs=files,
                        search=search)
        self._count(outcome, 1)
        return [Change(idx, final, sig, old_status=first.status.value)]

    def _count(self, outcome: str, n: int) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + n
        if self.counts[outcome] <= 0:
            del self.counts[outcome]

    def _keep_outputs(self, idx: int, campaign: str | None, alone: str | None) -> list[str]:
        files = []
        for label, text in (("campaign", campaign), ("alone", alone)):
            if text:
                path = output_arrays.write(text, self.out / OUTPUTS_DIR / f"{idx}-{label}.npz")
                files.append(str(path.relative_to(self.out)))
        return files

    # -- after the run -----------------------------------------------------------------------
    def finish(self, make_pool: Callable[[], Any], *, budget: float = SEARCH_BUDGET,
               progress: Callable[[str], None] | None = None) -> list[Change]:
        """Settle what the run left open: confirmations abandoned at the end of the time
        budget (run now, in fresh workers of ``make_pool()``), then the suspect searches of
        failures that did not reproduce alone (this run's and any left from earlier ones)."""
        if not self.enabled:
            return []
        changes: list[Change] = []
        left = self.db.with_confirmation(PENDING)
        if left:
            pool = make_pool()
            try:
                tasks = [self.confirmation_task(row["idx"], row["case"], row["verdict"])
                         for row in left]
                for r in pool.run(tasks):
                    changes += self._settle(int(r.task["confirm_of"]), r)
            finally:
                pool.close()
        return changes + self.search_damage(make_pool, budget=budget, progress=progress)

    def search_damage(self, make_pool: Callable[[], Any], *, budget: float = SEARCH_BUDGET,
                      progress: Callable[[str], None] | None = None) -> list[Change]:
        """The suspect searches of the failures that did not reproduce alone and have not
        been searched yet; a culprit found is a new finding (a bucket).  The campaign calls
        this as soon as its own cases are done, before it minimizes on all workers, so
        that those buckets get their share of the minimization time."""
        if not self.enabled:
            return []
        changes: list[Change] = []
        victims = [c["idx"] for c in self.db.confirmations()
                   if c["outcome"] == NOT_ALONE and (c["search"] or {}).get("state") == "pending"]
        deadline = time.monotonic() + budget
        for victim in victims:
            if progress is not None:
                progress(f"confirm: case #{victim} failed only after other cases in its worker; "
                         "replaying them to find the one that damaged it")
            changes += self._search(victim, make_pool, deadline)
        return changes

    def _search(self, victim: int, make_pool, deadline: float) -> list[Change]:
        record = self.db.confirmation(victim)
        first = Verdict.from_dict(record["campaign_verdict"])
        result = suspects.search(self.db, victim, first, make_pool, deadline,
                                 task_for=self.task_for)
        if result.fails_alone:  # its own failure after all, only not every time
            row = self.db.find_case(str(victim))
            now = Verdict.from_dict(row["verdict"])
            sig = signature(row["case"], first)
            self.db.confirm(victim, verdict=first, signature=sig, outcome=NONDETERMINISTIC,
                            search=result.to_dict())
            self._count(NOT_ALONE, -1)
            self._count(NONDETERMINISTIC, 1)
            return [Change(victim, first, sig, old_status=now.status.value)]
        blamed = result.culprit if result.pair_reproduces else None  # see campaign/suspects.py
        self.db.note_search(victim, blamed, result.to_dict())
        if blamed is None:
            return []
        culprit = self.db.find_case(str(result.culprit))
        own = Verdict.from_dict(culprit["verdict"])
        if signature(culprit["case"], own) is not None:
            return []  # already a finding (or a harness error) of its own: left as it is
        verdict = damage_verdict(victim, first, own, result.to_dict())
        sig = signature(culprit["case"], verdict)
        self.db.confirm(result.culprit, verdict=verdict, signature=sig, outcome=DAMAGES,
                        campaign_verdict=own, search=result.to_dict())
        self._count(DAMAGES, 1)
        return [Change(result.culprit, verdict, sig, old_status=own.status.value)]


def damage_verdict(victim: int, seen: Verdict, own: Verdict, search: dict[str, Any]) -> Verdict:
    """The finding of a case after which another case fails in the same worker process."""
    return Verdict(
        Status.CRASH, Stage.RUN,
        message=(f"case #{victim} fails after this case in one worker process "
                 f"({seen.status.value}@{seen.stage.value}), also in a fresh one with just the "
                 "two of them, and passes alone: this case "
                 "leaves the process damaged (an out-of-bounds write or heap damage that no "
                 "check caught while it ran)"),
        details={"kind": "heap_damage", "victim": victim, "victim_verdict": seen.line()[:300],
                 "own_verdict": own.to_dict(), "replay": search})


def replay_note(stored: Verdict, now: Verdict, record: dict[str, Any] | None) -> str:
    """What ``fuzzharness replay`` says about a stored verdict and the one it got now, and
    why they may differ (``record``: the case's ``confirmations`` row, if any)."""
    same_bits = stored.digest == now.digest
    if stored.status == now.status and same_bits:
        return "reproduced: yes (same status and output bits)"
    outcome = (record or {}).get("outcome")
    if now.is_finding and stored.is_finding and status_class(now.status) == status_class(stored.status):
        files = ", ".join((record or {}).get("outputs") or [])
        seen = (" — the campaign's confirmation saw it too" + (f" (outputs: {files})" if files else "")
                if outcome == NONDETERMINISTIC else "")
        what = "other output bits" if stored.status == now.status else \
            f"{now.status.value} where {stored.status.value} was stored"
        return (f"reproduced: the same kind of failure, {what}: nondeterministic output, the "
                f"signature of a kernel that reads memory nothing wrote{seen}")
    why = {
        NOT_ALONE: "the stored verdict is what the case did alone; in the campaign's worker, "
                   "after other cases, it was {campaign}{culprit}",
        DAMAGES: "this case was found to damage its worker process: case #{victim} failed "
                 "after it in one process and passes alone; alone, this case itself passes",
        CONFIRMED: "the stored failure was confirmed alone in a fresh worker; a change now "
                   "means the environment differs (TVM, numpy, CPU) or the failure is flaky",
        NONDETERMINISTIC: "the stored failure was confirmed, with output bits that differ from "
                          "run to run: it may also pass by chance",
    }.get(outcome or "", "the stored verdict was not confirmed alone (confirmation off, or "
                         "an older harness): a failure caused by an earlier case in the same "
                         "worker, or by a read of unwritten memory, need not repeat")
    campaign = (record or {}).get("campaign_verdict") or {}
    text = why.format(
        campaign=Verdict.from_dict(campaign).line()[:160] if campaign else "?",
        culprit=(f"; the case found to damage that worker: #{record['culprit']}"
                 if (record or {}).get("culprit") is not None else ""),
        victim=(stored.details or {}).get("victim", "?"))
    return (f"reproduced: NO (stored {stored.status.value}@{stored.stage.value}, now "
            f"{now.status.value}@{now.stage.value}) — {text}")
