"""A campaign: cases 0, 1, 2, ... of one seed, run by an executor into one database.

Case ``i`` of seed ``s`` is always the same case (generated inside the worker from
``(s, i)``), so a campaign is fully described by its seed and settings, which the database
stores; ``resume`` re-reads them and runs the indices that have no result yet — first the
holes left by cases that were running when the driver died, then new indices.

Durability: each result is committed (with its bucket count) the moment it arrives, so a
driver killed with SIGKILL loses only the cases in flight, which a resume runs again; the
primary key on the case index makes a duplicate impossible.  The workers die with the driver
(see :mod:`fuzzharness.engine.worker`).

Reporting: failures are grouped into buckets (:mod:`fuzzharness.buckets`) and each bucket is
matched against the known-bugs file.  :attr:`CampaignSummary.exit_code` is 0 when every TVM
finding of the campaign is a known bug, 1 when there is a new one.  Harness errors are
reported apart and never counted as TVM findings.
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

from fuzzharness import interpreter
from fuzzharness.backends.rpc import ENV as RPC_ENV
from fuzzharness.buckets import KnownBug, KnownBugs, Signature, signature
from fuzzharness.engine import coverage
from fuzzharness.engine.db import ResultsDB
from fuzzharness.engine.executor import ExecutorConfig, TaskResult, make_executor
from fuzzharness.engine.progress import Progress
from fuzzharness.errors import EXIT_FINDINGS, EXIT_OK
from fuzzharness.settings import RESUMABLE, CampaignSettings, SettingsError
from fuzzharness.verdict import Status

GRACE = 10.0  # seconds cases still running at the end of the time budget may take


@dataclasses.dataclass
class BucketReport:
    key: str
    title: str
    signature: Signature
    count: int  # results in the whole campaign
    example_idx: int
    known: KnownBug | None
    workloads: list[str]
    dtypes: list[str]

    @property
    def is_finding(self) -> bool:
        return self.signature.is_finding

    @property
    def is_new(self) -> bool:
        return self.is_finding and self.known is None


@dataclasses.dataclass
class CampaignSummary:
    out: Path
    seed: int
    cases: int  # results stored by this session
    total: int  # results in the database
    elapsed: float
    counts: dict[str, int]  # this session
    restarts: int
    buckets: list[BucketReport]  # the whole campaign
    known_source: str = ""
    recycled: int = 0
    coverage: list[tuple] = dataclasses.field(default_factory=list)  # engine/coverage.py rows
    minimized: str = ""  # the report of the minimization of new buckets (fuzzharness.minimize)
    #: TVM versions the workers reported that differ from the campaign's recorded one (a
    #: misconfigured --tvm-python environment would otherwise go unnoticed)
    foreign_tvm: list[str] = dataclasses.field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.cases / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def findings(self) -> list[BucketReport]:
        return [b for b in self.buckets if b.is_finding]

    @property
    def new_buckets(self) -> list[BucketReport]:
        return [b for b in self.buckets if b.is_new]

    @property
    def harness_errors(self) -> list[BucketReport]:
        return [b for b in self.buckets if not b.is_finding]

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.new_buckets else EXIT_OK


class Campaign:
    def __init__(self, out: str | Path, settings: CampaignSettings | None = None, *,
                 resume: bool = False, overrides: dict[str, Any] | None = None,
                 argv: list[str] | None = None, progress: bool = True,
                 minimize_budget: float = 0.0):
        """Create (or, with ``resume``, reopen) the campaign stored in ``out``.

        ``overrides``: settings to change on resume (only :data:`RESUMABLE` keys).
        ``minimize_budget``: seconds to spend, after the cases, minimizing new buckets into
        verified repros (0: do not); see :func:`fuzzharness.minimize.workflow.after_campaign`.
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
            from fuzzharness.tvm_support import versions

            # the TVM under test is the workers' (fuzzharness/interpreter.py)
            self.versions = (interpreter.versions_of(self.settings.tvm_python)
                             if self.settings.tvm_python else versions())
            self.db.create_campaign(self.seed, self.settings.to_dict(), self.versions)
        if resume:
            try:
                self.known = KnownBugs.load(self.settings.known_bugs or None)
            except Exception:
                self.db.close()
                raise

    # -- indices ----------------------------------------------------------------------------
    def _indices(self) -> Iterator[int]:
        done = self.db.done_indices()
        limit = self.settings.max_cases or None
        counter = itertools.count() if limit is None else range(limit)
        return (i for i in counter if i not in done)

    def _tasks(self) -> Iterator[dict[str, Any]]:
        gen = self.settings.generation.to_dict()
        for i in self._indices():
            yield {"task": i, "generate": {"seed": self.seed, "index": i, "settings": gen}}

    # -- run --------------------------------------------------------------------------------
    def run(self) -> CampaignSummary:
        s = self.settings
        budget = s.time_budget - (self.db.elapsed_before() if self.resume else 0.0) if s.time_budget else 0.0
        done = self.db.done_indices()
        todo = sum(1 for i in range(s.max_cases) if i not in done) if s.max_cases else None
        nothing_left = (s.time_budget and budget <= 0) or todo == 0
        self.db.start_session(self.argv)
        start = time.monotonic()
        deadline = start + budget if s.time_budget else None
        tvm_version = self.versions.get("tvm")
        known_of: dict[str, KnownBug | None] = {
            b["key"]: self.known.match(b["signature"], tvm_version) for b in self.db.buckets()
            if b["signature"].is_finding}
        progress = Progress(total=todo, deadline=deadline, enabled=self.show_progress)
        stored = 0
        counts: Counter[str] = Counter()
        executor = None
        try:
            if not nothing_left:
                executor = make_executor(s.executor, self._executor_config())
                stop = (lambda: time.monotonic() >= deadline) if deadline else (lambda: False)
                abandon = deadline + min(s.timeout, GRACE) if deadline else None
                for r in executor.run(self._tasks(), should_stop=stop, abandon_at=abandon):
                    sig = signature(r.case, r.verdict)
                    if self._store(r, sig):
                        stored += 1
                        counts[r.verdict.status.value] += 1
                        if sig is not None and sig.is_finding and sig.key not in known_of:
                            known_of[sig.key] = self.known.match(sig, tvm_version)
                    progress.update(r.verdict, counts, executor.restarts,
                                    buckets=len(known_of),
                                    new=sum(1 for k in known_of.values() if k is None))
        except KeyboardInterrupt:
            print("\ninterrupted: results so far are stored; continue with --resume", file=sys.stderr)
        finally:
            if executor is not None:
                executor.close()
            progress.close()
            self.db.end_session(stored)
        summary = CampaignSummary(
            self.out, self.seed, stored, self.db.count(), time.monotonic() - start, dict(counts),
            executor.restarts if executor is not None else 0, self._bucket_reports(tvm_version),
            self.known.source, executor.recycled if executor is not None else 0)
        summary.coverage = coverage.store(self.db.conn)
        summary.foreign_tvm = sorted(getattr(executor, "tvm_versions", set()) - {tvm_version})
        self.db.close()
        if self.minimize_budget > 0 and summary.new_buckets:
            from fuzzharness.minimize.workflow import after_campaign

            summary.minimized = after_campaign(self.out, self.minimize_budget,
                                               progress=self.show_progress)
        return summary

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
                              log_dir=self.out / "logs", env=env,
                              options={"ray_address": s.ray_address})

    def _store(self, r: TaskResult, sig: Signature | None) -> bool:
        return self.db.add_result(r.task["task"], r.case, r.verdict, elapsed=r.elapsed,
                                  worker=r.worker, signature=sig)

    def _bucket_reports(self, tvm_version: str | None) -> list[BucketReport]:
        stats = self.db.bucket_stats()
        out = []
        for b in self.db.buckets():
            sig = b["signature"]
            st = stats.get(b["key"], {})
            out.append(BucketReport(
                b["key"], b["title"], sig, b["count"], b["example_idx"],
                self.known.match(sig, tvm_version) if sig.is_finding else None,
                sorted(st.get("workloads", ())), sorted(st.get("dtypes", ()))))
        return out


def format_summary(s: CampaignSummary, *, limit: int = 15) -> str:
    lines = [
        f"campaign seed {s.seed}: {s.cases} cases in {s.elapsed:.1f} s "
        f"({s.rate:.1f} cases/s), {s.total} in the database, {s.restarts} worker restarts"
        + (f", {s.recycled} workers recycled near their memory limit" if s.recycled else ""),
    ]
    order = [st.value for st in Status]
    for status in sorted(s.counts, key=order.index):
        lines.append(f"  {status:<28} {s.counts[status]:>7}")
    findings = s.findings
    if findings:
        new = s.new_buckets
        n_cases = sum(b.count for b in findings)
        by_bug: dict[str, list[BucketReport]] = {}
        for b in findings:
            if b.known is not None:
                by_bug.setdefault(b.known.id, []).append(b)
        lines.append(f"failures in the campaign: {n_cases} cases in {len(findings)} buckets — "
                     f"{len(new)} new buckets, {len(by_bug)} known bugs")
        for b in sorted(new, key=lambda b: (-b.count, b.example_idx))[:limit]:
            seen = "; ".join(x for x in (",".join(b.workloads), ",".join(b.dtypes)) if x)
            lines.append(f"  NEW   {b.count:>5} × {b.title}")
            lines.append(f"        first: case #{b.example_idx}" + (f"; seen with {seen}" if seen else ""))
        if len(new) > limit:
            lines.append(f"  ... {len(new) - limit} more new buckets (see the buckets table)")
        for group in sorted(by_bug.values(), key=lambda g: -sum(b.count for b in g)):
            bug = group[0].known
            first = min(b.example_idx for b in group)
            lines.append(f"  known {sum(b.count for b in group):>5} × {bug.id} ({bug.link or bug.status}): "
                         f"{bug.title}")
            lines.append(f"        {len(group)} bucket{'s' if len(group) > 1 else ''}; first: case #{first}")
    harness = s.harness_errors
    if harness:
        lines.append(f"harness errors (bugs in fuzzharness, not in TVM): "
                     f"{sum(b.count for b in harness)} cases in {len(harness)} buckets")
        for b in harness[:limit]:
            lines.append(f"  {b.count:>5} × {b.title}  (first: case #{b.example_idx})")
    if s.coverage:
        lines.append(coverage.format_table(s.coverage))
    if s.minimized:
        lines.append(s.minimized)
    if s.foreign_tvm:
        lines.append(f"WARNING: workers ran TVM {', '.join(s.foreign_tvm)}, not the TVM the "
                     "campaign records (check --tvm-python and PYTHONPATH)")
    lines.append(f"results: {s.out / 'results.sqlite'}")
    lines.append(f"replay one: fuzzharness replay --db {s.out} <case index or id>")
    return "\n".join(lines)
