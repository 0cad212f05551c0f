"""A campaign: cases 0, 1, 2, ... of one seed, run by a worker pool into one database.

Case ``i`` of seed ``s`` is always the same case (generated inside the worker from
``(s, i)``), so a campaign is fully described by its seed and settings, which the database
stores; ``resume`` re-reads them and runs the indices that have no result yet — first the
holes left by cases that were running when the driver died, then new indices.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fuzzharness.engine import coverage
from fuzzharness.engine.db import ResultsDB
from fuzzharness.engine.pool import TaskResult, WorkerPool
from fuzzharness.engine.progress import Progress
from fuzzharness.settings import CampaignSettings, SettingsError
from fuzzharness.verdict import Status

GRACE = 10.0  # seconds cases still running at the end of the time budget may take


@dataclasses.dataclass
class CampaignSummary:
    out: Path
    seed: int
    cases: int  # results stored by this session
    total: int  # results in the database
    elapsed: float
    counts: dict[str, int]
    findings: list[dict[str, Any]]
    restarts: int
    coverage: list[tuple] = dataclasses.field(default_factory=list)  # engine/coverage.py rows

    @property
    def rate(self) -> float:
        return self.cases / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def new_findings(self) -> int:
        return sum(1 for f in self.findings)


class Campaign:
    def __init__(self, out: str | Path, settings: CampaignSettings | None = None, *,
                 resume: bool = False, argv: list[str] | None = None, progress: bool = True):
        self.out = Path(out)
        self.resume = resume
        self.argv = argv or []
        self.show_progress = progress
        self.out.mkdir(parents=True, exist_ok=True)
        self.db = ResultsDB(self.out, create=not resume)
        stored = self.db.campaign()
        if resume:
            if stored is None:
                raise SettingsError(f"{self.out}: nothing to resume (no campaign stored)")
            self.settings = CampaignSettings.from_dict(stored["settings"])
            self.seed = int(stored["seed"])
        else:
            if stored is not None:
                raise SettingsError(
                    f"{self.out} already holds a campaign (seed {stored['seed']}); "
                    "use --resume to continue it or choose another --out"
                )
            self.settings = (settings or CampaignSettings()).validate()
            self.seed = self.settings.seed if self.settings.seed is not None else random.randrange(2**31)
            self.settings.seed = self.seed
            from fuzzharness.tvm_support import versions

            self.db.create_campaign(self.seed, self.settings.to_dict(), versions())

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
        if s.time_budget and budget <= 0:
            budget = 0.001
        self.db.start_session(self.argv)
        start = time.monotonic()
        deadline = start + budget if s.time_budget else None
        todo = None
        if s.max_cases:
            todo = s.max_cases - len(self.db.done_indices())
        progress = Progress(total=todo, deadline=deadline, enabled=self.show_progress)
        stored = 0
        counts: Counter[str] = Counter()
        findings: list[dict[str, Any]] = []
        pool = WorkerPool(s.workers, timeout=s.timeout, memory_mb=s.memory_mb,
                          log_dir=self.out / "logs")
        try:
            stop = (lambda: time.monotonic() >= deadline) if deadline else (lambda: False)
            abandon = deadline + min(s.timeout, GRACE) if deadline else None
            for r in pool.run(self._tasks(), should_stop=stop, abandon_at=abandon):
                if self._store(r):
                    stored += 1
                    counts[r.verdict.status.value] += 1
                    if r.verdict.is_finding:
                        findings.append(_finding(r))
                progress.update(r.verdict, counts, pool.restarts)
        except KeyboardInterrupt:
            print("\ninterrupted: results so far are stored; continue with --resume", file=sys.stderr)
        finally:
            pool.close()
            progress.close()
            self.db.end_session(stored)
        summary = CampaignSummary(self.out, self.seed, stored, self.db.count(),
                                  time.monotonic() - start, dict(counts), findings, pool.restarts)
        summary.coverage = coverage.store(self.db.conn)
        self.db.close()
        return summary

    def _store(self, r: TaskResult) -> bool:
        return self.db.add_result(r.task["task"], r.case, r.verdict, elapsed=r.elapsed,
                                  worker=r.worker)


def _finding(r: TaskResult) -> dict[str, Any]:
    case = r.case or {}
    return {"idx": r.task["task"], "case_id": case.get("id"), "status": r.verdict.status.value,
            "stage": r.verdict.stage.value, "workload": (case.get("workload") or {}).get("name"),
            "message": r.verdict.message}


def format_summary(s: CampaignSummary) -> str:
    lines = [
        f"campaign seed {s.seed}: {s.cases} cases in {s.elapsed:.1f} s "
        f"({s.rate:.1f} cases/s), {s.total} in the database, {s.restarts} worker restarts",
    ]
    order = [st.value for st in Status]
    for status in sorted(s.counts, key=order.index):
        lines.append(f"  {status:<28} {s.counts[status]:>7}")
    if s.findings:
        groups: Counter[tuple[str, str, str]] = Counter()
        first: dict[tuple[str, str, str], dict[str, Any]] = {}
        for f in s.findings:
            key = (f["status"], f["stage"], (f["message"] or "").splitlines()[0][:90] if f["message"] else "")
            groups[key] += 1
            first.setdefault(key, f)
        lines.append(f"findings ({len(s.findings)} cases, {len(groups)} distinct messages):")
        for key, n in groups.most_common(10):
            f = first[key]
            lines.append(f"  {n:>5} × {key[0]}@{key[1]} [{f['workload']}] {key[2]}  (e.g. case #{f['idx']})")
    if s.coverage:
        lines.append(coverage.format_table(s.coverage))
    lines.append(f"results: {s.out / 'results.sqlite'}")
    lines.append(f"replay one: fuzzharness replay --db {s.out} <case index or id>")
    return "\n".join(lines)
