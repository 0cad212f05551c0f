"""From a finished campaign's buckets to verified repro directories (``fuzzharness minimize``).

The buckets to minimize (:func:`select_buckets`) are by default the *new* findings and the
*probably known* ones (a raw match with a known bug that only the minimized case can confirm,
see :mod:`fuzzharness.buckets.known_bugs`); ``--all`` takes every finding, ``--bucket``
given ones.  Buckets that already have a verified repro are kept (``--force`` redoes them).

They are minimized by :class:`~fuzzharness.campaign.minimizing.lanes.Lanes` — persistent lane processes,
several buckets at once, in severity order — whose candidates run in one private
:class:`~fuzzharness.engine.pool.WorkerPool` of ``workers`` persistent processes.  A campaign
with the local executor does the same *while it runs*, on a share of its own workers
(:mod:`fuzzharness.campaign.driver`); this module is the after-the-fact path (and the one
used after a campaign on an executor that cannot share its workers).

``total_budget`` caps the whole run; each bucket gets a fair share of what is left, at least
:data:`~fuzzharness.campaign.minimizing.lanes.MIN_SHARE` seconds, at most ``per_bucket``; buckets that
never start are reported as skipped.  Outcomes go to the ``repros`` table (with the root
cause of each minimized case).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fuzzharness.buckets.known_bugs import KnownBugs
from fuzzharness.buckets.root_causes import RootCause
from fuzzharness.buckets.signatures import Signature
from fuzzharness.campaign.db import ResultsDB
from fuzzharness.campaign.minimizing.lanes import Lanes
from fuzzharness.campaign.settings import CampaignSettings
from fuzzharness.core import interpreter
from fuzzharness.engine.executor import IDLE, Task
from fuzzharness.engine.pool import WorkerPool
from fuzzharness.minimize.minimizer import DEFAULT_BUDGET
from fuzzharness.minimize.report import BucketRepro


def select_buckets(db: ResultsDB, known: KnownBugs, tvm_version: str | None, which: str,
                   keys: list[str] | None = None) -> tuple[list[dict[str, Any]], set[str]]:
    """``(buckets, probably_known keys)``: the ``new`` findings (and the probably known ones),
    ``all`` findings, or the given ``keys`` (prefixes).  A bucket whose verified repro
    confirmed a known bug is not new any more."""
    confirmed = confirmed_known(db, known, tvm_version)
    out, probable = [], set()
    for b in db.buckets():
        sig: Signature = b["signature"]
        if not sig.is_finding:
            continue
        if keys:
            if not any(b["key"].startswith(k) for k in keys):
                continue
        elif which == "new":
            if b["key"] in confirmed:
                continue
            m = known.classify(sig, tvm_version)
            if m is not None and m.confirmed:
                continue
            if m is not None:
                probable.add(b["key"])
        out.append(b)
    return out, probable


def confirmed_known(db: ResultsDB, known: KnownBugs, tvm_version: str | None) -> dict[str, Any]:
    """Bucket key → the known bug its verified, minimized repro is (buckets whose minimized
    root cause matches an entry's trigger)."""
    out = {}
    for r in db.repros():
        if not (r["reproduced"] and r.get("root_cause_fields") and r.get("signature")):
            continue
        m = known.classify(Signature.from_dict(r["signature"]), tvm_version,
                           RootCause.from_dict(r["root_cause_fields"]))
        if m is not None:
            out[r["bucket"]] = m.bug
    return out


def lane_tasks(lanes: Lanes, limit: int) -> Iterator[Task]:
    """The task stream of a pool that only minimizes: the lanes' candidates, :data:`IDLE`
    while the lanes think, until they are finished."""
    while not lanes.finished():
        t = lanes.next_task(limit)
        yield t if t is not None else IDLE


def minimize_campaign(out: str | Path, *, which: str = "new", keys: list[str] | None = None,
                      total_budget: float | None = None, per_bucket: float = DEFAULT_BUDGET,
                      workers: int | None = None, verify_times: int = 1, triage: bool = True,
                      progress: bool = True, force: bool = False,
                      lanes: int | None = None) -> list[BucketRepro]:
    """Minimize the selected buckets of the campaign in ``out`` (see the module docstring).

    ``workers``: candidate worker processes (default: the campaign's); ``lanes``: buckets
    minimized at once (default: as many as workers)."""
    start = time.monotonic()
    out = Path(out)
    db = ResultsDB(out)
    try:
        stored = db.campaign()
        settings = CampaignSettings.from_dict(stored["settings"])
        known = KnownBugs.load(settings.known_bugs or None)
        buckets, probable = select_buckets(db, known, stored["versions"].get("tvm"), which, keys)
        done = {r["bucket"]: r for r in db.repros() if r["reproduced"]}
        results: list[BucketRepro] = []
        todo = []
        for b in buckets:
            if b["key"] in done and not force:
                r = done[b["key"]]
                results.append(BucketRepro(b["key"], b["title"], b["count"], "reproduced",
                                           Path(r["path"]), r["original_length"] or -1,
                                           r["length"] or -1, note="(earlier run)",
                                           issue_title=r["title"] or "",
                                           root_cause=r.get("root_cause") or ""))
            else:
                todo.append(b)
        if not todo:
            return results
        n = workers or settings.workers
        say = _say(progress)
        lane_set = Lanes(out, db, lanes=lanes or n, batch=n, per_bucket=per_bucket,
                         verify_times=verify_times, triage=triage, say=say,
                         log_dir=out / "logs" / "minimize")
        lane_set.end_at = start + total_budget if total_budget is not None else None
        for b in todo:
            lane_set.offer(b["key"], probably_known=b["key"] in probable)
        pool = WorkerPool(n, timeout=settings.timeout, memory_mb=settings.memory_mb,
                          log_dir=out / "logs" / "minimize",
                          env=interpreter.campaign_env(settings.to_dict()))
        try:
            for r in pool.run(lane_tasks(lane_set, n), wakeup_fd=lane_set.wakeup_fd,
                              abandon_at=0.0):
                lane_set.deliver(r)
        finally:
            pool.close()
            lane_set.pump()
            lane_set.skip_rest()
            lane_set.close()
        return results + lane_set.results
    finally:
        db.close()


def _say(enabled: bool):
    def say(msg: str) -> None:
        if enabled:
            print(f"  minimize: {msg}", file=sys.stderr, flush=True)
    return say


def after_campaign(out: str | Path, total_budget: float, *, progress: bool = True) -> str:
    """Minimize a finished campaign's new buckets; return the report (for executors that
    cannot share their workers with the lanes while the campaign runs).  No TVM runs in this
    process: the lanes and the workers are child processes."""
    from fuzzharness.minimize.report import format_report

    if progress:
        print(f"minimizing new buckets (at most {total_budget:g} s; --no-minimize to skip)",
              file=sys.stderr, flush=True)
    t0 = time.monotonic()
    # a KeyboardInterrupt goes on to the caller (the summary says it); the pool's close ends
    # the workers, and what was verified is stored
    results = minimize_campaign(out, total_budget=total_budget, progress=progress)
    return format_report(results, total_budget=total_budget, seconds=time.monotonic() - t0)
