"""A minimization lane: one persistent process that minimizes buckets, one after another.

``python -m fuzzharness.campaign.minimizing.lane`` is started by :class:`fuzzharness.campaign.minimizing.lanes.Lanes`
(in the campaign driver, or in ``fuzzharness minimize``).  It imports TVM once and keeps it;
for each bucket it is given it minimizes the bucket's first case
(:func:`fuzzharness.minimize.minimize`), writes and verifies the repro
(:func:`fuzzharness.repro.package.write_repro`: the script in a fresh process, the pass probe,
the root cause) and sends back the outcome and the database record — it never opens the
campaign database itself: only the process that owns the database writes it.

Candidate cases do **not** run here: they go, as tasks, to the process that owns the worker
pool (:class:`RemotePool`), which runs them in the campaign's crash-proof persistent workers
next to the campaign's own cases.  A TVM bug that kills a candidate kills a worker, never a
lane; a TVM bug that kills a lane (replaying a trace to repair it, drawing a choice sequence,
writing a script) costs the one bucket it was minimizing.

Wire format: JSON lines, like the workers' (:mod:`fuzzharness.engine.protocol`).

owner → lane::

    {"job": {...}}                                    minimize one bucket (see bucket_job)
    {"result": {"task": 3, "case": {...}, "verdict": {...}}}   a candidate's verdict
    {"stop": true}                                    finish (EOF too)

lane → owner::

    {"ready": pid}                                    once, after importing TVM
    {"run": [{"task": 3, "case": {...}}, ...]}        candidates to run (ids unique per lane)
    {"cancel": [3, 4]}                                not needed any more (deadline passed)
    {"done": {"result": {...BucketRepro...}, "record": {...} | null}}
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import sys
import time
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.campaign.settings import CampaignSettings
from fuzzharness.core.case import Case
from fuzzharness.core.kinds import shrink_kind
from fuzzharness.core.verdict import Status, Verdict
from fuzzharness.engine.executor import TaskResult
from fuzzharness.engine.worker import die_with_parent
from fuzzharness.generators import draw as draws
from fuzzharness.generators.cases import case_data, draw_case
from fuzzharness.minimize.hypothesis_shrink import draw_events, drawn_values
from fuzzharness.minimize.minimizer import MinimizeResult, minimize
from fuzzharness.minimize.report import REPROS_DIR, BucketRepro
from fuzzharness.repro.kit import NotReproducible
from fuzzharness.repro.package import write_repro


class Stopped(Exception):
    """The owner asked the lane to stop (or went away) while a bucket was being minimized."""


class Channel:
    """JSON lines over a pair of file descriptors, with a receive timeout."""

    def __init__(self, rfd: int, wfd: int):
        self.rfd, self.wfd = rfd, wfd
        self.buf = bytearray()
        self.sel = selectors.DefaultSelector()
        self.sel.register(rfd, selectors.EVENT_READ)
        self.eof = False

    def send(self, msg: dict[str, Any]) -> None:
        data = (json.dumps(msg, separators=(",", ":"), allow_nan=True) + "\n").encode()
        view = memoryview(data)
        while view:
            n = os.write(self.wfd, view)
            view = view[n:]

    def recv(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next message; None after ``timeout`` seconds; raises :class:`Stopped` at EOF."""
        end = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while b"\n" not in self.buf:
            if self.eof:
                raise Stopped("the owner closed the pipe")
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return None
            if not self.sel.select(left):
                return None
            chunk = os.read(self.rfd, 1 << 16)
            if not chunk:
                self.eof = True
                continue
            self.buf += chunk
        line, _, rest = self.buf.partition(b"\n")
        self.buf = bytearray(rest)
        return json.loads(line)


class RemotePool:
    """The :class:`~fuzzharness.minimize.evaluator.Evaluator`'s pool inside a lane: a batch of
    candidates is sent to the owner of the workers and their verdicts are awaited.

    Task ids are renumbered per lane, so a late verdict of a candidate cancelled in an earlier
    bucket can never be taken for one of this bucket's."""

    def __init__(self, channel: Channel):
        self.channel = channel
        self._next = 0

    def run(self, tasks: Iterable[dict[str, Any]], *, should_stop=lambda: False,
            abandon_at: float | None = None) -> Iterator[TaskResult]:
        mine: dict[int, dict[str, Any]] = {}
        out = []
        for t in tasks:
            self._next += 1
            mine[self._next] = t
            out.append({"task": self._next, "case": t["case"]})
        if not out:
            return
        self.channel.send({"run": out})
        while mine:
            left = None if abandon_at is None else abandon_at - time.monotonic()
            if left is not None and left <= 0:
                self.channel.send({"cancel": sorted(mine)})
                return
            msg = self.channel.recv(left)
            if msg is None:
                continue
            if msg.get("stop"):
                raise Stopped("asked to stop")
            r = msg.get("result")
            if r is None or r.get("task") not in mine:
                continue  # a verdict for a candidate given up on earlier
            task = mine.pop(r["task"])
            yield TaskResult(task, r.get("case"), Verdict.from_dict(r["verdict"]),
                             r.get("worker", "lane"), float(r.get("elapsed") or 0.0))

    def close(self) -> None:
        pass


# -- one bucket ------------------------------------------------------------------------------------
def bucket_job(job: dict[str, Any], pool=None, say=None) -> tuple[BucketRepro, dict[str, Any] | None]:
    """Minimize one bucket and write its repro.

    ``job``: ``out`` (campaign directory), ``key``, ``title``, ``count``, ``target`` (the
    bucket's signature), ``example`` (its first result row: idx, case, verdict), ``seed``,
    ``settings``, ``versions``, ``budget`` (seconds), ``workers`` (candidates per batch),
    ``verify_times``, ``triage``.
    """
    settings = CampaignSettings.from_dict(job["settings"])
    # the example's own target when the campaign mixes targets (generators/targets.py)
    settings.generation = settings.generation.at(job["seed"], job["example"]["idx"])
    target = Signature.from_dict(job["target"])
    say = say or (lambda msg: None)
    res = BucketRepro(job["key"], job["title"], job["count"], "failed")
    try:
        case, verdict, choices = _example(job["example"], job["seed"], settings,
                                          job.get("mutation"))
        victim = verdict.details.get("victim")
        if victim is not None:  # a culprit found by replaying its worker's cases (campaign/confirm.py)
            res.status, res.note = "not reproduced", (
                f"it fails nothing alone: it damages its worker process, and case #{victim} "
                "fails after it (the two, in a fresh worker, fail again); a standalone script "
                "of one case cannot show that")
            return res, None
        timeout = settings.timeout if target.symptom == Status.TIMEOUT.value else min(settings.timeout, 20.0)
        m = minimize(case, verdict, target, choices=choices, gen_settings=settings.generation,
                     budget=job["budget"], workers=job["workers"], timeout=timeout,
                     memory_mb=settings.memory_mb, progress=say, pool=pool)
        res.seconds, res.original_length, res.length = m.seconds, m.original_length, m.length
        res.unit, res.runs = m.unit, m.runs
        if not m.reproduced:
            res.status, res.note = "did not reproduce at start", m.note
            return res, None
        say(f"minimized in {m.seconds:.1f} s ({m.runs} runs): " + "; ".join(m.phases))
        t = time.monotonic()
        out = _write(Path(job["out"]), job["key"], m, settings, job["versions"],
                     job["verify_times"], job["triage"], res, timeout)
        say(f"repro written, verified and probed in {time.monotonic() - t:.1f} s: "
            + "; ".join(str(n) for n in (out[1] or {}).get("notes", [])))
        return out
    except Stopped:
        raise
    except Exception as e:  # noqa: BLE001 - reported as this bucket's failure
        res.note = f"{type(e).__name__}: {e}"[:300]
        say("failed: " + traceback.format_exc(limit=-3).strip().splitlines()[-1])
        return res, None


def _example(row: dict[str, Any], seed: int, settings, mutation: dict[str, Any] | None = None
             ) -> tuple[Case | None, Verdict, list | None]:
    verdict = Verdict.from_dict(row["verdict"])
    if row["case"] is not None:
        return Case.from_dict(row["case"]), verdict, None
    # no case stored: the failure happened while the schedule was drawn; draw it again —
    # in a forked child first, which may die of it (a crash bucket): then its choices so far
    data = case_data(seed, row["idx"], mutation)  # a mutant's: campaign/feedback.py
    died, events = draw_events(data, settings.generation)
    if died is not None:
        return None, verdict, drawn_values(events)
    try:
        draw_case(data, settings.generation)
    except Exception:  # noqa: BLE001 - expected: this is the failure
        pass
    return None, verdict, draws.recorded_choices(data)


def _write(out: Path, key: str, m: MinimizeResult, settings, versions, verify_times: int,
           triage: bool, res: BucketRepro, timeout: float) -> tuple[BucketRepro, dict[str, Any] | None]:
    d = out / REPROS_DIR / key
    failing_call = None
    case, verdict = m.case, m.verdict
    if case is None and m.choices is not None:  # a failure while drawing the schedule
        try:  # no case: asked of the kind that draws schedules (kind_of(None))
            case, failing_call = shrink_kind(None).generation_failure_case(
                m.choices, settings.generation, {"minimized_from": f"choices of bucket {key}"},
                verdict)
        except NotReproducible as e:
            res.status, res.note = "not reproduced", f"no standalone script: {e}"
            return res, None
        res.length = len(case.trace[0]) + 1 if case.trace else 1
    sig = signature(case.to_dict(), verdict) if verdict is not None else None
    if failing_call is not None:
        sig = m.signature
    outcome = write_repro(d, case, verdict, bucket=key, signature=sig, versions=versions,
                          minimized=m.to_dict() | {"length": res.length}, verify_times=verify_times,
                          triage=triage, timeout=timeout, failing_call=failing_call,
                          first_seen=m.target.title())
    res.dir, res.runs = d, len(outcome.runs)
    res.issue_title = outcome.title
    res.root_cause = outcome.record.get("root_cause") or ""
    res.status = "reproduced" if outcome.reproduced else "not reproduced"
    if not outcome.reproduced:
        res.note = outcome.problem
    return res, outcome.record


# -- the process -----------------------------------------------------------------------------------
def _take_protocol_fds() -> tuple[int, int]:
    """Protocol on private copies of fds 0 and 1; what TVM prints goes to stderr."""
    rfd, wfd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return rfd, wfd


def main(argv: list[str] | None = None) -> int:
    argv = list(argv or [])
    rfd, wfd = _take_protocol_fds()
    if argv[:1] == ["--parent-pid"]:  # die with the owner, like a worker
        die_with_parent(int(argv[1]))
    channel = Channel(rfd, wfd)
    import tvm  # noqa: F401  (the expensive import, once)

    from fuzzharness.core.plugins import load_plugins

    load_plugins()
    channel.send({"ready": os.getpid()})
    pool = RemotePool(channel)

    t0 = time.monotonic()

    def say(msg: str) -> None:  # step by step, into the lane's log (its stderr)
        print(f"[{time.monotonic() - t0:8.1f}] {msg}", file=sys.stderr, flush=True)

    while True:
        try:
            msg = channel.recv()
        except Stopped:
            return 0
        if msg is None or msg.get("stop"):
            return 0
        job = msg.get("job")
        if job is None:
            continue  # a late verdict of a cancelled candidate
        say(f"bucket {job['key']}: {job['title'][:100]} (budget {job['budget']:.0f} s)")
        try:
            res, record = bucket_job(job, pool, say)
        except Stopped:
            return 0
        say(f"bucket {job['key']}: {res.status} {res.note[:200]}")
        result = dataclasses.asdict(res)
        result["dir"] = str(res.dir) if res.dir else None
        channel.send({"done": {"result": result, "record": record}})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
