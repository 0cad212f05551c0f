"""A campaign: cases 0, 1, 2, ... of one seed, run by an executor into one database.

Case ``i`` of seed ``s`` is always the same case (generated inside the worker from
``(s, i)``), so a campaign is fully described by its seed and settings, which the database
stores; ``resume`` re-reads them and runs the indices that have no result yet — first the
holes left by cases that were running when the driver died, then new indices.

Durability: each result is committed (with its bucket count) the moment it arrives, so a
driver killed with SIGKILL loses only the cases in flight, which a resume runs again; the
primary key on the case index makes a duplicate impossible.  The workers die with the driver
(see :mod:`fuzzharness.engine.worker`).

Confirmation (:mod:`fuzzharness.campaign.confirm`, setting ``confirm``, on by default): a TVM
finding is stored at once but gets its bucket only after the case ran again, alone, in a
fresh worker process; one that does not reproduce alone is never a finding by itself, and
the earlier cases of its worker are searched, once the campaign's own cases are done, for the
one that damaged it (a bucket of its own, minimized in the time that is left).  Workers run
with heap hygiene (setting ``hygiene``, :mod:`fuzzharness.core.hygiene`).

Reporting: failures are grouped into buckets (:mod:`fuzzharness.buckets.signatures`) and each bucket is
matched against the known-bugs file.  :attr:`CampaignSummary.exit_code` is 3 when the run
was interrupted (Ctrl-C/SIGTERM: the finished cases are stored, the workers and the
minimizer's processes ended, and no minimization starts after an interrupt), else 1 when
there is a new TVM finding, else 3 when cases ended in harness errors, else 0
(:mod:`fuzzharness.core.errors`).  Harness errors are reported apart and never counted as
TVM findings.

Minimization (``minimize_budget`` > 0, an executor that supports
:data:`~fuzzharness.engine.executor.IDLE`): each new or probably-known finding bucket is
offered, as it appears — that is, once its first failure is confirmed alone — to
:class:`~fuzzharness.campaign.minimizing.lanes.Lanes`; their candidate cases are woven into the task
stream — at most half of the workers while the campaign's own cases run, all of them
afterwards for at most ``minimize_budget`` seconds — and their outcomes (repros with root
causes) go to the database.  Other executors minimize after the campaign
(:func:`fuzzharness.campaign.minimizing.after.after_campaign`).  A bucket is reported as a
known bug by its minimized case's root cause when it has a verified repro, else by its raw
signature (an uncertain raw match is *probably known*).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fuzzharness.backends.rpc import ENV as RPC_ENV
from fuzzharness.buckets.known_bugs import KnownBugs, Match
from fuzzharness.campaign import coverage
from fuzzharness.campaign.confirm import Change, Confirmer
from fuzzharness.campaign.db import ResultsDB
from fuzzharness.campaign.feedback import Feedback
from fuzzharness.campaign.minimizing.after import after_campaign
from fuzzharness.campaign.minimizing.lanes import Lanes
from fuzzharness.campaign.outcome import CampaignSummary, bucket_reports
from fuzzharness.campaign.progress import Progress
from fuzzharness.campaign.settings import RESUMABLE, CampaignSettings, SettingsError
from fuzzharness.core import interpreter
from fuzzharness.core.tvm_support import versions
from fuzzharness.engine.executor import IDLE, ExecutorConfig, Task, make_executor
from fuzzharness.minimize.report import format_report

GRACE = 10.0  # seconds cases still running at the end of the time budget may take
#: seconds one bucket may take while the campaign minimizes (fuzzharness minimize: 120): most
#: converge in 5–30 s; a bucket that does not (a flaky nan) must not hold a lane for long
LIVE_BUCKET_BUDGET = 60.0
#: a confirming campaign of at least this many cases (or unbounded) starts its zygote with its
#: workers: ~13 % of a default campaign's cases fail, so it meets a finding, and needs the
#: zygote, all but surely (1 − 0.87^50 > 0.999); started at the first finding instead, its
#: ~5 s of CPU fall in the middle of the run.  A shorter run (a test, a smoke check) may
#: need none and starts it only then.
ZYGOTE_AT_START_CASES = 50


@dataclasses.dataclass
class RunState:
    """What one session's loop keeps track of (:meth:`Campaign.run`)."""

    start: float  # time.monotonic() when the session started
    known_of: dict[str, Match | None]  # finding bucket → its known bug (None: new)
    stored: int = 0  # results stored by this session
    counts: Counter[str] = dataclasses.field(default_factory=Counter)  # per status
    executor: Any = None
    lanes: Lanes | None = None  # minimization sharing the workers
    ended: float | None = None  # when the campaign's own cases stopped (minimizing may go on)
    interrupted: str = ""  # Ctrl-C during "cases" or "minimizing"


class Campaign:
    def __init__(self, out: str | Path, settings: CampaignSettings | None = None, *,
                 resume: bool = False, overrides: dict[str, Any] | None = None,
                 argv: list[str] | None = None, progress: bool = True,
                 minimize_budget: float = 0.0):
        """Create (or, with ``resume``, reopen) the campaign stored in ``out``.

        ``overrides``: settings to change on resume (only :data:`RESUMABLE` keys).
        ``minimize_budget``: seconds to spend minimizing new buckets into verified repros
        after the campaign's cases, beyond what is done while they run (0: do not minimize).
        Everything that can be wrong with the request is checked here, before any case
        runs and before anything is written to an existing database.
        """
        self.out = Path(out)
        self.resume = resume
        self.argv = argv or []
        self.show_progress = progress
        self.minimize_budget = minimize_budget
        if resume:
            self.db = ResultsDB(self.out, create=False)
            stored = self.db.campaign()
            if stored is None:
                self.db.close()
                raise SettingsError(f"{self.out}: nothing to resume (no campaign stored)")
            try:
                base = CampaignSettings.from_dict(stored["settings"])
            except (TypeError, ValueError) as e:
                self.db.close()
                raise SettingsError(f"{self.out}: stored settings unreadable ({e})") from None
            bad = sorted(set(overrides or {}) - RESUMABLE)
            if bad:
                self.db.close()
                raise SettingsError(f"cannot change {', '.join(bad)} of a stored campaign "
                                    "(it would generate different cases); start a new one")
            self.settings = dataclasses.replace(base, **(overrides or {}))
            try:
                self.settings.validate()
            except SettingsError:
                self.db.close()
                raise
            self.seed = int(stored["seed"])
            self.versions = stored["versions"]
        else:
            self.settings = (settings or CampaignSettings()).validate()
            self.known = KnownBugs.load(self.settings.known_bugs or None)
            self.out.mkdir(parents=True, exist_ok=True)
            self.db = ResultsDB(self.out, create=True)
            stored = self.db.campaign()
            if stored is not None:
                self.db.close()
                raise SettingsError(
                    f"{self.out} already holds a campaign (seed {stored['seed']}); "
                    "use --resume to continue it or choose another --out"
                )
            self.seed = self.settings.seed if self.settings.seed is not None else random.randrange(2**31)
            self.settings.seed = self.seed

            # the TVM under test is the workers' (fuzzharness/core/interpreter.py)
            self.versions = (interpreter.versions_of(self.settings.tvm_python)
                             if self.settings.tvm_python else versions())
            self.db.create_campaign(self.seed, self.settings.to_dict(), self.versions)
        if resume:
            try:
                self.known = KnownBugs.load(self.settings.known_bugs or None)
            except Exception:
                self.db.close()
                raise
        gen = self.settings.generation
        self.feedback = Feedback(self.db, self.seed, gen.feedback, gen.feedback_period)

    # -- indices ----------------------------------------------------------------------------
    def _indices(self) -> Iterator[int]:
        done = self.db.done_indices()
        limit = self.settings.max_cases or None
        counter = itertools.count() if limit is None else range(limit)
        return (i for i in counter if i not in done)

    def _tasks(self, extra: dict[str, Any] | None = None) -> Iterator[Task]:
        for i in self._indices():
            while not self.feedback.ready(i):  # its corpus waits for earlier cases
                yield IDLE
            yield {**self._task(i), **(extra or {})}

    def _task(self, i: int) -> dict[str, Any]:
        gen = {"seed": self.seed, "index": i, "settings": self.settings.generation.to_dict()}
        mutation = self.feedback.mutation_for(i)
        if mutation is not None:
            gen["mutation"] = mutation
        return {"task": i, "generate": gen}

    # -- run --------------------------------------------------------------------------------
    def run(self) -> CampaignSummary:
        """The loop (:meth:`_loop`), then the end-of-run phases (:meth:`_summary`,
        :meth:`_minimize_after`); rendering the summary is :mod:`fuzzharness.campaign.summary`'s."""
        s = self.settings
        budget = s.time_budget - (self.db.elapsed_before() if self.resume else 0.0) if s.time_budget else 0.0
        done = self.db.done_indices()
        todo = sum(1 for i in range(s.max_cases) if i not in done) if s.max_cases else None
        nothing_left = (s.time_budget and budget <= 0) or todo == 0
        self.db.start_session(self.argv)
        tvm_version = self.versions.get("tvm")
        st = RunState(start=time.monotonic(), known_of={
            b["key"]: self.known.classify(b["signature"], tvm_version) for b in self.db.buckets()
            if b["signature"].is_finding})
        deadline = st.start + budget if s.time_budget else None
        progress = Progress(total=todo, deadline=deadline, enabled=self.show_progress)
        confirmer = Confirmer(self.db, self.out, enabled=s.confirm,
                              submit=lambda task: st.executor.add(task), task_for=self._task)
        minimized = None
        try:
            if not nothing_left:
                self._loop(st, deadline, progress, confirmer, tvm_version)
            for change in confirmer.finish(self._fresh_pool, progress=self._note):
                self._count(st, change, tvm_version)
        except KeyboardInterrupt:  # results so far are committed; the workers die below
            st.interrupted = "cases" if st.ended is None else "minimizing"
        finally:
            if st.executor is not None:
                st.executor.close()
            progress.close()
            if st.lanes is not None:
                minimized = self._close_lanes(st)
            self.db.end_session(st.stored)
        summary = self._summary(st, confirmer, tvm_version)
        if minimized is not None:
            summary.minimized = minimized
        elif self.minimize_budget > 0 and summary.new_buckets and not st.interrupted:
            self._minimize_after(summary, tvm_version)
        return summary

    def _loop(self, st: RunState, deadline: float | None, progress: Progress,
              confirmer: Confirmer, tvm_version: str | None) -> None:
        """Run the campaign's cases (and, sharing the workers, the minimization lanes)."""
        s = self.settings
        st.executor = executor = make_executor(s.executor, self._executor_config())
        confirmer.resume()
        stop = (lambda: time.monotonic() >= deadline) if deadline else (lambda: False)
        abandon = deadline + min(s.timeout, GRACE) if deadline else None
        if self.minimize_budget > 0 and executor.supports_idle:
            st.lanes = self._lanes(st.known_of, deadline)
            tasks = self._shared_tasks(st, stop, progress, confirmer, tvm_version)
            stop, wake = None, {"wakeup_fd": st.lanes.wakeup_fd}
        else:
            tasks, wake = self._tasks(confirmer.options()), {}
        for r in executor.run(tasks, should_stop=stop or (lambda: False),
                              abandon_at=abandon, **wake):
            if st.lanes is not None and st.lanes.deliver(r):
                continue  # a minimization candidate, not a campaign case
            changes = confirmer.handle(r)
            for change in changes:
                self._count(st, change, tvm_version)
            if changes and changes[0].old_status is None and st.ended is None:
                progress.update(r.verdict, st.counts, executor.restarts,
                                buckets=len(st.known_of),
                                new=sum(1 for k in st.known_of.values() if k is None))

    def _count(self, st: RunState, change: Change, tvm_version: str | None) -> None:
        """Count a stored (or re-judged) result; a bucket seen first goes to the lanes (a
        finding's signature comes only once it is confirmed alone)."""
        if change.old_status is None:
            st.stored += 1
        elif st.counts[change.old_status] > 0:
            st.counts[change.old_status] -= 1
        st.counts[change.verdict.status.value] += 1
        sig = change.signature
        if sig is not None and sig.is_finding and sig.key not in st.known_of:
            st.known_of[sig.key] = m = self.known.classify(sig, tvm_version)
            if st.lanes is not None and (m is None or not m.confirmed):
                st.lanes.offer(sig.key, probably_known=m is not None)

    # -- the end of a run ----------------------------------------------------------------------
    def _close_lanes(self, st: RunState) -> str:
        """Stop the lanes (after Ctrl-C no bucket starts: they only stop); their report."""
        lanes = st.lanes
        if not st.interrupted:
            lanes.pump()
        lanes.skip_rest()
        lanes.close()
        minimized = format_report(lanes.results, total_budget=self.minimize_budget,
                                  seconds=time.monotonic() - st.start, live=True)
        if st.interrupted:
            minimized = (f"minimize: interrupted; what was verified is stored; run "
                         f"`fuzzharness minimize {self.out}` for the rest\n{minimized}")
        return minimized

    def _summary(self, st: RunState, confirmer: Confirmer, tvm_version: str | None) -> CampaignSummary:
        """What the session did, read back from the database (which it closes)."""
        executor = st.executor
        elapsed = (st.ended or time.monotonic()) - st.start
        summary = CampaignSummary(
            self.out, self.seed, st.stored, self.db.count(), elapsed, dict(st.counts),
            executor.restarts if executor is not None else 0, bucket_reports(self.db, self.known, tvm_version),
            self.known.source, executor.recycled if executor is not None else 0,
            confirmations=dict(confirmer.counts))
        summary.interrupted = st.interrupted
        summary.strict_order = self.settings.strict_order
        summary.coverage = coverage.store_table(self.db.conn)
        summary.foreign_tvm = sorted(getattr(executor, "tvm_versions", set()) - {tvm_version})
        summary.root_causes = self.known.group_root_causes(self.db.root_causes(), tvm_version)
        self.db.close()
        return summary

    def _minimize_after(self, summary: CampaignSummary, tvm_version: str | None) -> None:
        """Minimize the new buckets after the campaign (an executor without shared lanes)."""
        try:
            summary.minimized = after_campaign(self.out, self.minimize_budget,
                                               progress=self.show_progress)
        except KeyboardInterrupt:  # its workers are gone; verified repros are stored
            summary.interrupted = "minimizing"
            summary.minimized = (f"minimize: interrupted; what was verified is stored; "
                                 f"run `fuzzharness minimize {self.out}` for the rest")
        db = ResultsDB(self.out)
        try:
            summary.root_causes = self.known.group_root_causes(db.root_causes(), tvm_version)
            summary.buckets = bucket_reports(db, self.known, tvm_version)
        finally:
            db.close()

    # -- minimization while the campaign runs -------------------------------------------------
    def _lanes(self, known_of: dict[str, Match | None], deadline: float | None) -> Lanes:
        """Minimization lanes sharing this campaign's workers (:mod:`fuzzharness.campaign.minimizing.lanes`);
        on resume, the stored buckets that still need a repro are offered at once."""
        s = self.settings
        lanes = Lanes(self.out, self.db, lanes=s.workers, batch=s.workers,
                      per_bucket=LIVE_BUCKET_BUDGET, say=self._say_minimize,
                      log_dir=self.out / "logs")
        if deadline is not None:
            lanes.end_at = deadline + self.minimize_budget
        verified = {r["bucket"] for r in self.db.repros() if r["reproduced"]}
        for key, m in known_of.items():
            if key not in verified and (m is None or not m.confirmed):
                lanes.offer(key, probably_known=m is not None)
        return lanes

    def _shared_tasks(self, st: RunState, stop, progress: Progress, confirmer: Confirmer,
                      tvm_version: str | None) -> Iterator[Task]:
        """The campaign's cases with the lanes' candidates woven in — at most half the
        workers (at least one) go to candidates while the campaign runs; all of them once it
        is over, until the lanes are finished (:data:`~fuzzharness.engine.executor.IDLE`
        while they think, or while failures wait for their confirmation: a confirmed one is
        a bucket for the lanes)."""
        s, lanes = self.settings, st.lanes
        share = max(1, s.workers // 2)
        for t in self._tasks(confirmer.options()):
            while (lt := lanes.next_task(share)) is not None:
                yield lt
            if stop():
                break
            yield t
        st.ended = time.monotonic()
        if lanes.end_at is None:
            lanes.end_at = st.ended + self.minimize_budget
        progress.close()
        # The damage searches run now, not after the minimization: a culprit they find is a
        # new bucket, which gets its share of the minimization time like any other.  The
        # confirmations still running settle first (the lanes go on meanwhile); the time the
        # searches take moves the lanes' end.
        while confirmer.in_flight and time.monotonic() < lanes.end_at:
            lt = lanes.next_task(s.workers)
            yield lt if lt is not None else IDLE
        if not confirmer.in_flight:
            searched = time.monotonic()
            for change in confirmer.search_damage(self._fresh_pool, progress=self._note):
                self._count(st, change, tvm_version)
            lanes.end_at += time.monotonic() - searched
        if lanes.busy:
            self._say_minimize(f"the campaign's cases are done; minimizing on all {s.workers} "
                               f"workers (at most {max(0.0, lanes.end_at - st.ended):.0f} s more)")
        while (confirmer.in_flight and time.monotonic() < lanes.end_at + s.timeout) \
                or not lanes.finished():
            lt = lanes.next_task(s.workers)
            yield lt if lt is not None else IDLE

    def _say_minimize(self, msg: str) -> None:
        if self.show_progress:
            print(f"  minimize: {msg}", file=sys.stderr, flush=True)

    def _executor_config(self) -> ExecutorConfig:
        """How the settings reach the executor; the remote device (if any) reaches the
        workers as $FUZZHARNESS_RPC, and only from the settings (a stray variable in the
        driver's environment must not send a local campaign's kernels elsewhere)."""
        s = self.settings
        env = {k: v for k, v in os.environ.items()
               if k not in (RPC_ENV, interpreter.WORKER_PYTHON_ENV)}
        device = s.remote_device()
        if device is not None:
            env[RPC_ENV] = json.dumps(device.to_dict())
        if s.tvm_python:
            env[interpreter.WORKER_PYTHON_ENV] = s.tvm_python
        return ExecutorConfig(workers=s.workers, timeout=s.timeout, memory_mb=s.memory_mb,
                              log_dir=self.out / "logs", env=env, hygiene=s.hygiene,
                              fresh_tasks=s.confirm and not 0 < s.max_cases < ZYGOTE_AT_START_CASES,
                              options={"ray_address": s.ray_address})

    def _fresh_pool(self):
        """A one-worker local pool for what confirmation does after the run (fresh workers)."""
        from fuzzharness.engine.pool import WorkerPool

        config = dataclasses.replace(self._executor_config(), workers=1, fresh_tasks=False,
                                     log_dir=self.out / "logs" / "confirm")
        return WorkerPool.from_config(config)

    def _note(self, line: str) -> None:
        if self.show_progress:
            print(line, file=sys.stderr)
