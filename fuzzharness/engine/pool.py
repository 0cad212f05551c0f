"""Crash-proof pool of persistent worker processes.

Why not ``concurrent.futures`` / ``multiprocessing.Pool``: a worker that segfaults breaks those
pools as a whole, and they cannot say which stage of the case was running when it died.  Here
every worker is a plain subprocess speaking JSON lines (:mod:`fuzzharness.engine.protocol`);
the driver multiplexes their pipes with ``selectors`` and:

* replaces a worker that died (segfault, abort, out of memory) and turns the task it was
  running into a ``crash`` verdict with the signal, the last stage it announced and the tail
  of its log;
* kills a worker whose task overran ``timeout`` seconds and records a ``timeout`` verdict;
* feeds tasks lazily from an iterator, so a time budget stops generation as soon as it ends.

Results come out of :meth:`WorkerPool.run` as :class:`TaskResult` in completion order.
"""

from __future__ import annotations

import dataclasses
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from fuzzharness.engine import protocol
from fuzzharness.verdict import Stage, Status, Verdict

READY_TIMEOUT = 120.0  # importing TVM takes ~1 s; a loaded CI machine can be much slower


@dataclasses.dataclass
class TaskResult:
    task: dict[str, Any]
    case: dict[str, Any] | None
    verdict: Verdict
    worker: int
    elapsed: float


@dataclasses.dataclass
class _Worker:
    slot: int
    proc: subprocess.Popen
    log_path: Path
    buf: bytearray = dataclasses.field(default_factory=bytearray)
    ready: bool = False
    task: dict[str, Any] | None = None
    case: dict[str, Any] | None = None
    stage: str = Stage.GENERATE.value
    started: float = 0.0


class WorkerPool:
    def __init__(
        self,
        workers: int,
        *,
        timeout: float = 60.0,
        memory_mb: int = 0,
        log_dir: str | os.PathLike | None = None,
        env: dict[str, str] | None = None,
    ):
        self.n = max(1, workers)
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.log_dir = Path(log_dir) if log_dir else None
        self.env = env
        self.restarts = 0
        self._sel = selectors.DefaultSelector()
        self._workers: dict[int, _Worker] = {}
        self._spawned = 0

    # -- lifecycle --------------------------------------------------------------------------
    def _spawn(self, slot: int) -> _Worker:
        self._spawned += 1
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self.log_dir / f"worker-{slot}.log"
        else:
            log_path = Path(os.devnull)
        log = open(log_path, "ab")  # noqa: SIM115 - owned by the child
        cmd = [sys.executable, "-m", "fuzzharness.engine.worker", "--memory-mb", str(self.memory_mb)]
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
            start_new_session=True,  # Ctrl-C reaches the driver, which then stops the workers
        )
        log.close()
        os.set_blocking(proc.stdout.fileno(), False)
        w = _Worker(slot, proc, log_path, started=time.monotonic())
        self._workers[slot] = w
        self._sel.register(proc.stdout, selectors.EVENT_READ, w)
        return w

    def _retire(self, w: _Worker, *, kill: bool) -> int | None:
        self._sel.unregister(w.proc.stdout)
        if kill and w.proc.poll() is None:
            try:
                os.killpg(w.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            w.proc.stdin.close()
        except OSError:
            pass
        try:
            rc = w.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            w.proc.kill()
            rc = w.proc.wait()
        w.proc.stdout.close()
        return rc

    def close(self) -> None:
        for w in list(self._workers.values()):
            self._retire(w, kill=True)
        self._workers.clear()
        self._sel.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the loop ---------------------------------------------------------------------------
    def run(
        self,
        tasks: Iterable[dict[str, Any]],
        *,
        should_stop: Callable[[], bool] = lambda: False,
        abandon_at: float | None = None,
    ) -> Iterator[TaskResult]:
        """Run ``tasks`` (dicts with a unique ``task`` key); yield results as they finish.

        ``should_stop`` is polled before every new task is handed out; tasks already running
        finish (or time out) — unless ``time.monotonic()`` passes ``abandon_at``: then the
        workers still busy are killed and their tasks dropped without a result (a resumed
        campaign runs them again).
        """
        source = iter(tasks)
        exhausted = False
        for slot in range(self.n):
            self._spawn(slot)

        while True:
            # hand out work
            if not exhausted:
                for w in list(self._workers.values()):
                    if w.ready and w.task is None:
                        if should_stop():
                            exhausted = True
                            break
                        task = next(source, None)
                        if task is None:
                            exhausted = True
                            break
                        self._assign(w, task)
            busy = [w for w in self._workers.values() if w.task is not None]
            if exhausted and not busy:
                return
            if exhausted and abandon_at is not None and time.monotonic() >= abandon_at:
                for w in busy:
                    self._retire(w, kill=True)
                    del self._workers[w.slot]
                return
            # wait for messages or the nearest deadline
            now = time.monotonic()
            deadlines = [w.started + self.timeout for w in busy]
            deadlines += [w.started + READY_TIMEOUT for w in self._workers.values() if not w.ready]
            wait = max(0.0, min(deadlines) - now) if deadlines else 0.5
            for key, _ in self._sel.select(timeout=min(wait, 0.5)):
                w: _Worker = key.data
                result = self._read(w)
                if result is not None:
                    yield result
            now = time.monotonic()
            for w in list(self._workers.values()):
                if w.task is not None and now - w.started > self.timeout:
                    yield self._finish_dead(w, timed_out=True)
                elif not w.ready and now - w.started > READY_TIMEOUT:
                    raise RuntimeError(f"worker {w.slot} did not start; see {w.log_path}")

    def _assign(self, w: _Worker, task: dict[str, Any]) -> None:
        w.task, w.case, w.stage, w.started = task, task.get("case"), Stage.GENERATE.value, time.monotonic()
        try:
            w.proc.stdin.write(protocol.encode(task))
            w.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the death is noticed on the next read

    def _read(self, w: _Worker) -> TaskResult | None:
        try:
            chunk = os.read(w.proc.stdout.fileno(), 1 << 16)
        except BlockingIOError:
            return None
        if not chunk:
            if w.task is None:
                if w.ready:
                    self.restarts += 1
                self._retire(w, kill=True)
                self._spawn(w.slot)
                return None
            return self._finish_dead(w, timed_out=False)
        w.buf += chunk
        result = None
        while b"\n" in w.buf:
            line, _, rest = w.buf.partition(b"\n")
            w.buf = bytearray(rest)
            msg = protocol.decode(bytes(line))
            if "ready" in msg:
                w.ready, w.started = True, 0.0
            elif "stage" in msg:
                w.stage = msg["stage"]
            elif "case" in msg and msg.get("task") == (w.task or {}).get("task"):
                w.case = msg["case"]
            elif "verdict" in msg and w.task is not None:
                result = TaskResult(w.task, w.case, Verdict.from_dict(msg["verdict"]), w.slot,
                                    time.monotonic() - w.started)
                w.task, w.case = None, None
        return result

    def _finish_dead(self, w: _Worker, *, timed_out: bool) -> TaskResult:
        task, case, stage, elapsed = w.task, w.case, w.stage, time.monotonic() - w.started
        rc = self._retire(w, kill=True)
        self.restarts += 1
        self._spawn(w.slot)
        log_tail = _tail(w.log_path)
        if timed_out:
            verdict = Verdict(Status.TIMEOUT, Stage(stage),
                              message=f"no result after {self.timeout:g} s in stage {stage}",
                              details={"timeout_s": self.timeout, "log_tail": log_tail})
        else:
            verdict = Verdict(Status.CRASH, Stage(stage), message=_death_message(rc, log_tail),
                              details={"returncode": rc, **_signal_details(rc, log_tail),
                                       "log_tail": log_tail})
        verdict.timings[stage] = elapsed
        return TaskResult(task, case, verdict, w.slot, elapsed)


def _signal_details(rc: int | None, log_tail: str) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if rc is not None and rc < 0:
        try:
            d["signal"] = signal.Signals(-rc).name
        except ValueError:
            d["signal"] = str(-rc)
    if any(s in log_tail for s in ("MemoryError", "std::bad_alloc", "Cannot allocate memory",
                                   "out of memory")):
        d["kind"] = "out_of_memory"
    elif "signal" in d:
        d["kind"] = "signal"
    else:
        d["kind"] = "exit"
    return d


def _death_message(rc: int | None, log_tail: str) -> str:
    if rc is not None and rc < 0:
        try:
            what = f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            what = f"killed by signal {-rc}"
    else:
        what = f"exited with status {rc}"
    last = [ln for ln in log_tail.splitlines() if ln.strip()]
    return f"worker {what}" + (f": {last[-1][:200]}" if last else "")


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""
