"""Minimization lanes: new buckets minimized while the campaign runs, on a share of its workers.

The owner of a worker pool — the campaign driver, or ``fuzzharness minimize`` — hands buckets
to :class:`Lanes` (:meth:`Lanes.offer`) and weaves the lanes' candidate cases into the
pool's task stream (:meth:`Lanes.next_task`, :meth:`Lanes.deliver`):

* a **lane** is a persistent process (:mod:`fuzzharness.campaign.minimizing.lane`) that keeps TVM
  imported and minimizes one bucket at a time; several lanes minimize several buckets at
  once.  Lanes start when the first bucket is offered;
* a lane's candidates run in the pool's workers, the same persistent, crash-proof workers
  that run the campaign's cases; ``limit`` (the argument of :meth:`next_task`) caps how many
  of them a lane's candidates may hold at once — a share of the workers while the campaign
  runs, all of them afterwards;
* buckets are taken in **severity order** (:func:`fuzzharness.buckets.priority.minimize_order`):
  wrong results, nan/inf and crashes of the generated code first, then hangs, then internal
  compile errors, then reference mismatches; new buckets before *probably known* ones (a raw
  match with a known bug that the minimized case must confirm); the most frequent first.
  The order is decided when a lane becomes free, so a wrong answer found late still goes
  before the compile errors found early;
* **cluster before minimizing**: a bucket whose raw case has the mechanism fact of a root
  cause already verified (:func:`fuzzharness.buckets.root_causes.mechanism_key`) is attached
  to it instead (the ``attachments`` table, evidence ``ir_shape``), and one whose mechanism
  is being minimized waits for that outcome, so the minimizer goes to the next distinct
  bug; a bucket left waiting when that minimization fails is minimized itself;
* each bucket gets a time budget from what is left until :attr:`Lanes.end_at` (a fair share,
  at least :data:`MIN_SHARE`, at most ``per_bucket``); no bucket starts when less than
  :data:`MIN_START` is left; at ``end_at`` plus :data:`STOP_GRACE` a lane still busy is
  stopped;
* the outcome of each bucket is written to the database by the owner (the ``repros`` table,
  with the root cause), never by a lane, and collected in :attr:`Lanes.results`.

Everything here is plain bookkeeping in the owner's process: no TVM, no minimization.
"""

from __future__ import annotations

import collections
import os
import queue
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzzharness.buckets.priority import minimize_order
from fuzzharness.buckets.root_causes import mechanism_key
from fuzzharness.campaign.db import ResultsDB
from fuzzharness.campaign.minimizing.lane_process import LaneProcess, killpg, spawn_lane
from fuzzharness.core import interpreter
from fuzzharness.engine.executor import TaskResult
from fuzzharness.engine.worker_deaths import signal_name
from fuzzharness.minimize.report import BucketRepro

MIN_SHARE = 30.0  # seconds: below this a minimization rarely gets anywhere
MIN_START = 20.0  # seconds left before end_at: no new bucket starts
REPRO_OVERHEAD = 20.0  # seconds set aside per bucket for writing, verifying and the pass probe
STOP_GRACE = 90.0  # seconds past end_at a busy lane gets to write its repro before it is stopped
READY_TIMEOUT = 180.0  # a lane imports TVM; a loaded machine can be slow
TASK_PREFIX = "m"  # a lane task's id: "m<lane>:<n>" (campaign tasks are case indices)
SKIPPED = "skipped (budget)"
ATTACHED = "attached"  # placed in a root cause already found, by its mechanism (not minimized)


class Lanes:
    def __init__(self, out: str | Path, db: ResultsDB, *, lanes: int, batch: int,
                 per_bucket: float, verify_times: int = 1, triage: bool = True,
                 say: Callable[[str], None] | None = None, env: dict[str, str] | None = None,
                 log_dir: Path | None = None):
        """``lanes``: buckets minimized at once; ``batch``: candidates a lane hands over per
        round (the workers it may use); ``db``: the campaign database (this process writes
        the repros); ``say``: where one line per bucket event goes (None: nowhere)."""
        self.out = Path(out)
        self.db = db
        self.n = max(1, lanes)
        self.batch = max(1, batch)
        self.per_bucket = per_bucket
        self.verify_times = verify_times
        self.triage = triage
        self.say = say or (lambda msg: None)
        self.env = env
        self.log_dir = log_dir
        self.end_at: float | None = None
        self.results: list[BucketRepro] = []
        self.offered: set[str] = set()
        self.pending: set[str] = set()
        self.probably_known: set[str] = set()
        self._lanes: dict[int, LaneProcess] = {}
        self._next_lane = 0
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._in_flight: dict[str, int] = {}  # task id → lane id
        self._messages: queue.Queue = queue.Queue()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        stored = db.campaign()
        self._base = {"out": str(self.out), "seed": stored["seed"], "settings": stored["settings"],
                      "versions": stored["versions"]}

    # -- the owner's side ------------------------------------------------------------------------
    @property
    def wakeup_fd(self) -> int:
        """Readable when a lane has said something (pass it to the pool's ``run``)."""
        return self._wake_r

    def offer(self, key: str, *, probably_known: bool = False) -> None:
        """Minimize bucket ``key`` (once; a bucket offered again is ignored)."""
        if key in self.offered:
            return
        self.offered.add(key)
        self.pending.add(key)
        if probably_known:
            self.probably_known.add(key)
        self.pump()

    @property
    def busy(self) -> bool:
        """Buckets still to minimize, or being minimized."""
        return bool(self.pending) or any(ln.job is not None for ln in self._lanes.values())

    def finished(self) -> bool:
        """Nothing left that can still run: every bucket done, or the time is up."""
        if not self.busy:
            return True
        now = time.monotonic()
        if self.end_at is not None and now >= self.end_at - MIN_START:
            return not any(ln.job is not None for ln in self._lanes.values())
        return False

    def next_task(self, limit: int) -> dict[str, Any] | None:
        """A lane's candidate to run now, if fewer than ``limit`` hold a worker."""
        self.pump()
        if self._queue and len(self._in_flight) < limit:
            task = self._queue.popleft()
            self._in_flight[task["task"]] = int(task["task"][1:].split(":", 1)[0])
            return task
        return None

    def deliver(self, r: TaskResult) -> bool:
        """Route a finished task to its lane; False when it is not a lane's (a campaign case)."""
        tid = r.task.get("task")
        if not (isinstance(tid, str) and tid.startswith(TASK_PREFIX)):
            return False
        lane_id = self._in_flight.pop(tid, None)
        lane = self._lanes.get(lane_id) if lane_id is not None else None
        if lane is not None and lane.alive:
            lane.outbox.put({"result": {"task": int(tid.split(":", 1)[1]), "case": r.case,
                                        "verdict": r.verdict.to_dict(), "worker": r.worker,
                                        "elapsed": r.elapsed}})
        self.pump()
        return True

    def pump(self) -> None:
        """Handle what the lanes said; give free lanes their next bucket; stop overdue ones."""
        try:
            os.read(self._wake_r, 1 << 16)  # non-blocking: the wake-ups are the messages below
        except (BlockingIOError, OSError):
            pass
        while True:
            try:
                lane_id, msg = self._messages.get_nowait()
            except queue.Empty:
                break
            self._handle(lane_id, msg)
        now = time.monotonic()
        for lane in list(self._lanes.values()):
            if not lane.ready and lane.alive and now - lane.started > READY_TIMEOUT:
                self._kill(lane, "the lane did not start")
            elif lane.job is not None and self.end_at is not None and now > self.end_at + STOP_GRACE:
                self._kill(lane, "stopped at the time cap")
        self._assign(now)

    def skip_rest(self) -> None:
        """Record the buckets that never started as skipped (call once, at the end)."""
        if not self.pending:
            return
        rows = {b["key"]: b for b in self.db.buckets()}
        for key in self._cluster(self._ordered(rows), rows, waiting=True):
            b = rows[key]
            self.results.append(BucketRepro(key, b["title"], b["count"], SKIPPED))
        self.pending.clear()

    def close(self) -> None:
        for lane in list(self._lanes.values()):
            if lane.alive:
                lane.outbox.put({"stop": True})
                lane.outbox.put(None)
        deadline = time.monotonic() + 5
        for lane in list(self._lanes.values()):
            try:
                lane.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                killpg(lane.proc)
                lane.proc.wait()
        self._lanes.clear()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    # -- internals ---------------------------------------------------------------------------------
    def _ordered(self, rows: dict[str, dict[str, Any]]) -> list[str]:
        keep = [rows[k] for k in self.pending if k in rows]
        return [b["key"] for b in minimize_order(keep, self.probably_known)]

    def _assign(self, now: float) -> None:
        if not self.pending:
            return
        if self.end_at is not None and self.end_at - now < MIN_START:
            return
        free = [ln for ln in self._lanes.values() if ln.alive and ln.ready and ln.job is None]
        alive = sum(1 for ln in self._lanes.values() if ln.alive)
        wanted = min(self.n, len(self.pending) + sum(ln.job is not None for ln in self._lanes.values()))
        for _ in range(max(0, wanted - alive)):
            self._spawn()
        if not free:
            return
        rows = {b["key"]: b for b in self.db.buckets()}
        order = self._cluster(self._ordered(rows), rows)
        for lane in free:
            if not order:
                break
            key = order.pop(0)
            self.pending.discard(key)
            self._start_job(lane, rows[key], now)

    def _cluster(self, order: list[str], rows: dict[str, dict[str, Any]], *,
                 waiting: bool = False) -> list[str]:
        """Cluster before minimizing: a pending bucket whose raw case has the mechanism fact
        of a root cause already verified is attached to it (no minimization); one whose
        mechanism is being minimized right now waits for that outcome, so the lanes go to
        the next distinct bug.  Returns the buckets to minimize now, in order (``waiting``:
        and those that wait)."""
        found = {rc["key"]: rc for rc in self.db.root_causes()}
        busy = {mechanism_key(ln.job["signature"]) for ln in self._lanes.values()
                if ln.job is not None} - {None}
        out = []
        for key in order:
            mk = mechanism_key(rows[key]["signature"])
            if mk is not None and mk in found:
                via = found[mk]["buckets"][0]
                self.db.attach(key, mk, "ir_shape", via)
                self.pending.discard(key)
                b = rows[key]
                self.results.append(BucketRepro(key, b["title"], b["count"], ATTACHED,
                                                root_cause=mk, note=f"as bucket {via}"))
                self.say(f"bucket {key}: {ATTACHED} to root cause {mk} (mechanism "
                         f"{', '.join(found[mk]['fields'].get('facts', []))}, as bucket {via})")
            elif mk is None or mk not in busy or waiting:
                out.append(key)
                if mk is not None:
                    busy.add(mk)
        return out

    def _budget(self, now: float) -> float:
        if self.end_at is None:
            return self.per_bucket
        left = self.end_at - now
        fair = left * self.n / max(1, len(self.pending) + 1) - REPRO_OVERHEAD
        return max(5.0, min(self.per_bucket, max(MIN_SHARE, fair), left - REPRO_OVERHEAD))

    def _start_job(self, lane: LaneProcess, b: dict[str, Any], now: float) -> None:
        budget = self._budget(now)
        example = self.db.find_case(str(b["example_idx"]))
        job = dict(self._base, key=b["key"], title=b["title"], count=b["count"],
                   target=b["signature"].to_dict(), example=example, budget=budget,
                   workers=self.batch, verify_times=self.verify_times, triage=self.triage)
        if example is not None and example["case"] is None:  # drawn again by the lane
            job["mutation"] = self._mutation_of(example["idx"])
        lane.job, lane.job_started = b, now
        lane.outbox.put({"job": job})
        self.say(f"bucket {b['key']} ({budget:.0f} s): {b['title'][:90]}")

    def _mutation_of(self, idx: int) -> dict[str, Any] | None:
        """The mutation case ``idx`` was (campaign/feedback.py), for a case not stored."""
        gen = self._base["settings"].get("generation") or {}
        if not gen.get("feedback"):
            return None
        from fuzzharness.campaign.feedback import Feedback

        return Feedback(self.db, int(self._base["seed"]), gen["feedback"],
                        gen.get("feedback_period") or 100).mutation_for(idx)

    def _handle(self, lane_id: int, msg: dict[str, Any] | None) -> None:
        lane = self._lanes.get(lane_id)
        if lane is None:
            return
        if msg is None:  # EOF: the lane died
            if lane.alive:
                rc = lane.proc.wait()
                why = signal_name(rc) or f"exit {rc}"
                self._lost(lane, f"the minimizing process died ({why})")
            return
        if "ready" in msg:
            lane.ready = True
        elif "run" in msg:
            for t in msg["run"]:
                self._queue.append({"task": f"{TASK_PREFIX}{lane_id}:{t['task']}", "case": t["case"]})
        elif "cancel" in msg:
            gone = {f"{TASK_PREFIX}{lane_id}:{n}" for n in msg["cancel"]}
            self._queue = collections.deque(t for t in self._queue if t["task"] not in gone)
        elif "done" in msg:
            self._done(lane, msg["done"])

    def _done(self, lane: LaneProcess, done: dict[str, Any]) -> None:
        r = done["result"]
        res = BucketRepro(**{**r, "dir": Path(r["dir"]) if r.get("dir") else None})
        if done.get("record") is not None:
            self.db.add_repro(done["record"])
        else:
            self._record_attempt(lane.job, res)
        self.results.append(res)
        lane.job = None
        self.say(f"bucket {res.key}: {res.status}"
                 + (f", trace {res.original_length} → {res.length}" if min(res.original_length, res.length) >= 0
                    else f", trace of {res.length} (drawn from a failed schedule)" if res.length >= 0
                    else "")
                 + f", {res.seconds:.0f} s" + (f" ({res.note[:80]})" if res.note else ""))

    def _lost(self, lane: LaneProcess, why: str) -> None:
        lane.alive = False
        if lane.job is not None:
            b = lane.job
            res = BucketRepro(b["key"], b["title"], b["count"], "failed", note=why,
                              seconds=time.monotonic() - (lane.job_started or time.monotonic()))
            self._record_attempt(b, res)
            self.results.append(res)
            self.say(f"bucket {b['key']}: failed ({why})")
            lane.job = None
        mine = f"{TASK_PREFIX}{lane.id}:"
        self._queue = collections.deque(t for t in self._queue if not t["task"].startswith(mine))
        lane.outbox.put(None)
        del self._lanes[lane.id]

    def _record_attempt(self, bucket: dict[str, Any] | None, res: BucketRepro) -> None:
        """Store the outcome of a minimization that wrote no repro (it did not reproduce at
        start, no standalone script, the lane died or was stopped at the cap), so that
        ``status`` and the report say what happened to the bucket instead of "not
        minimized"; a later session offers it again (only verified repros are final)."""
        earlier = self.db.repro(res.key)
        if bucket is None or (earlier is not None and earlier["reproduced"]):
            return
        self.db.add_repro({
            "bucket": res.key, "signature": bucket["signature"].to_dict(), "reproduced": False,
            "runs": 0, "output": res.note, "original_length": res.original_length,
            "length": res.length, "minimize_seconds": round(res.seconds, 1),
            "minimize_runs": res.runs, "title": res.title,
            "notes": [f"{res.status}: {res.note}" if res.note else res.status]})

    def _kill(self, lane: LaneProcess, why: str) -> None:
        killpg(lane.proc)
        lane.proc.wait()
        self._lost(lane, why)

    def _spawn(self) -> None:
        self._next_lane += 1
        # under the campaign's --tvm-python, if any: repro checks and triage run against the
        # TVM the failure was found with (fuzzharness/core/interpreter.py)
        python, env = interpreter.command_env(
            interpreter.campaign_env(self._base["settings"]) if self.env is None else self.env)
        lane = spawn_lane(self._next_lane, self.log_dir, python, env, self._on_message)
        self._lanes[lane.id] = lane

    def _on_message(self, lane_id: int, msg: dict[str, Any] | None) -> None:
        self._messages.put((lane_id, msg))
        self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass
