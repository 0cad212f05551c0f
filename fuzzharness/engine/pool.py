"""The local executor: a crash-proof pool of persistent worker processes on this machine.

Why not ``concurrent.futures`` / ``multiprocessing.Pool``: a worker that segfaults breaks those
pools as a whole, and they cannot say which stage of the case was running when it died.  Here
every worker is a plain subprocess (``python -m fuzzharness.engine.worker``) that imports TVM
once and speaks JSON lines (:mod:`fuzzharness.engine.protocol`); the driver multiplexes their
pipes with ``selectors`` and:

* replaces a worker that died (segfault, abort, out of memory) and turns the task it was
  running into a ``crash`` verdict with the signal, the last stage it announced and the tail
  of its log (:mod:`fuzzharness.engine.outcomes`);
* kills a worker whose task overran ``timeout`` seconds (its whole process group, so a
  compiler subprocess dies with it) and records a ``timeout`` verdict;
* feeds tasks lazily from an iterator, so a time budget stops generation as soon as it ends;
* replaces, without counting a restart, a worker that retires itself (it does so between
  tasks when its memory use nears the limit — see :mod:`fuzzharness.engine.worker`);
* refuses to go on (:class:`WorkerStartError`) when fresh workers die before they are ready
  three times in a row: that is a broken installation or plugin, not a TVM bug.

Workers die with the driver: each asks the kernel for SIGKILL when its parent dies
(``PR_SET_PDEATHSIG``) and also exits on EOF on stdin, so ``kill -9`` of the driver leaves no
orphans burning CPU.  ``PR_SET_PDEATHSIG`` fires when the *thread* that spawned the worker
exits: iterate :meth:`WorkerPool.run` from a thread that outlives the pool.
"""

from __future__ import annotations

import dataclasses
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from fuzzharness import interpreter
from fuzzharness.engine import outcomes, protocol
from fuzzharness.engine.executor import (
    Executor,
    ExecutorConfig,
    Task,
    TaskResult,
    executors,
)
from fuzzharness.errors import UsageError
from fuzzharness.verdict import Stage, Verdict

SETUP_TIMEOUT = 300.0  # a one-time setup inside a task (tensor intrinsics: ~4-12 s)
READY_TIMEOUT = 120.0  # importing TVM takes ~1 s; a loaded CI machine can be much slower
MAX_START_FAILURES = 3  # consecutive workers dead before "ready": give up

__all__ = ["TaskResult", "WorkerPool", "WorkerStartError"]


class WorkerStartError(UsageError):
    """Worker processes die before they are ready (broken install, plugin or limit)."""


@dataclasses.dataclass
class _Worker:
    slot: int
    proc: subprocess.Popen
    log_path: Path
    buf: bytearray = dataclasses.field(default_factory=bytearray)
    ready: bool = False
    retiring: bool = False  # sent "bye": its EOF is a planned exit
    task: Task | None = None
    case: dict[str, Any] | None = None
    stage: str = Stage.GENERATE.value
    started: float = 0.0
    setup_since: float | None = None  # in a one-time setup since (fuzzharness/warmup.py)

    def overdue(self, now: float, timeout: float) -> bool:
        if self.setup_since is not None:
            return now - self.setup_since > SETUP_TIMEOUT
        return now - self.started > timeout


class WorkerPool(Executor):
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
        self.restarts = 0  # replaced after a crash, a timeout or an unexpected exit
        self.recycled = 0  # retired themselves (memory high-water mark) and were replaced
        self.tvm_versions: set[str] = set()  # what the workers' "ready" said they import
        self._sel = selectors.DefaultSelector()
        self._workers: dict[int, _Worker] = {}
        self._start_failures = 0

    @classmethod
    def from_config(cls, config: ExecutorConfig) -> WorkerPool:
        return cls(config.workers, timeout=config.timeout, memory_mb=config.memory_mb,
                   log_dir=config.log_dir, env=config.env)

    # -- lifecycle --------------------------------------------------------------------------
    def _spawn(self, slot: int) -> _Worker:
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self.log_dir / f"worker-{slot}.log"
        else:
            log_path = Path(os.devnull)
        log = open(log_path, "ab")  # noqa: SIM115 - owned by the child
        # $FUZZHARNESS_WORKER_PYTHON: another interpreter and its TVM (fuzzharness/interpreter.py)
        python, env = interpreter.command_env(self.env)
        cmd = [python, "-m", "fuzzharness.engine.worker",
               "--memory-mb", str(self.memory_mb), "--parent-pid", str(os.getpid())]
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

    def _replace(self, w: _Worker) -> tuple[int | None, str]:
        """Stop ``w`` (killing it if needed), read its log tail, start a fresh one in its slot."""
        rc = self._retire(w, kill=True)
        tail = _tail(w.log_path)
        self._spawn(w.slot)
        return rc, tail

    def close(self) -> None:
        for w in list(self._workers.values()):
            self._retire(w, kill=True)
        self._workers.clear()
        if self._sel.get_map() is not None:
            self._sel.close()

    def start(self) -> None:
        """Start a worker in every empty slot (``run`` does it too; they get ready meanwhile)."""
        for slot in range(self.n):
            if slot not in self._workers:
                self._spawn(slot)

    def pids(self) -> dict[int, int]:
        """Slot → process id of the worker in it now (the one the next task there goes to)."""
        return {slot: w.proc.pid for slot, w in self._workers.items()}

    # -- the loop ---------------------------------------------------------------------------
    def run(
        self,
        tasks: Iterable[Task],
        *,
        should_stop: Callable[[], bool] = lambda: False,
        abandon_at: float | None = None,
    ) -> Iterator[TaskResult]:
        """Run ``tasks`` (dicts with a unique ``task`` key); yield results as they finish.

        See :class:`fuzzharness.engine.executor.Executor` for the contract.
        """
        source = iter(tasks)
        exhausted = False
        self.start()

        def feed() -> None:
            """Hand a task to every idle worker."""
            nonlocal exhausted
            if exhausted:
                return
            for w in list(self._workers.values()):
                if w.ready and w.task is None and not w.retiring:
                    if should_stop():
                        exhausted = True
                        return
                    task = next(source, None)
                    if task is None:
                        exhausted = True
                        return
                    self._assign(w, task)

        while True:
            feed()
            busy = [w for w in self._workers.values() if w.task is not None]
            if exhausted and not busy:
                return
            if exhausted and abandon_at is not None and time.monotonic() >= abandon_at:
                for w in busy:  # dropped without a result: a resume runs them again
                    self._retire(w, kill=True)
                    del self._workers[w.slot]
                return
            # wait for messages or the nearest deadline
            now = time.monotonic()
            deadlines = [w.started + self.timeout if w.setup_since is None
                         else w.setup_since + SETUP_TIMEOUT for w in busy]
            deadlines += [w.started + READY_TIMEOUT for w in self._workers.values() if not w.ready]
            wait = max(0.0, min(deadlines) - now) if deadlines else 0.5
            for key, _ in self._sel.select(timeout=min(wait, 0.5)):
                w = key.data
                if self._workers.get(w.slot) is not w:
                    continue  # replaced while handling an earlier event of this batch
                result = self._read(w)
                if result is not None:
                    # the worker gets its next task before the caller handles this result
                    # (database commit, buckets, progress): it does not wait for the driver
                    feed()
                    yield result
            now = time.monotonic()
            for w in list(self._workers.values()):
                if w.task is not None and w.overdue(now, self.timeout):
                    yield self._finish_dead(w, timed_out=True)
                elif not w.ready and now - w.started > READY_TIMEOUT:
                    raise WorkerStartError(
                        f"worker {w.slot} did not start within {READY_TIMEOUT:g} s; "
                        f"see {w.log_path}")

    def _assign(self, w: _Worker, task: Task) -> None:
        w.task, w.case, w.stage, w.started = task, task.get("case"), Stage.GENERATE.value, time.monotonic()
        w.setup_since = None
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
            if w.task is not None:
                return self._finish_dead(w, timed_out=False)
            self._idle_exit(w)
            return None
        w.buf += chunk
        result = None
        while b"\n" in w.buf:
            line, _, rest = w.buf.partition(b"\n")
            w.buf = bytearray(rest)
            try:
                msg = protocol.decode(bytes(line))
                if not isinstance(msg, dict):
                    raise ValueError("not a JSON object")
            except ValueError as e:  # garbage on the protocol fd: our bug, not TVM's
                return self._protocol_error(w, f"{e}: {bytes(line)[:200]!r}")
            if "ready" in msg:
                w.ready, w.started = True, 0.0
                self.tvm_versions.add(str(msg.get("tvm", "?")))
                self._start_failures = 0
            elif "bye" in msg:
                w.retiring = True
            elif w.task is None or msg.get("task") != w.task.get("task"):
                continue  # a late message of a task already decided
            elif "stage" in msg:
                w.stage = msg["stage"]
            elif "setup" in msg:  # a one-time setup: the case's clock stops (warmup.py)
                w.setup_since = time.monotonic()
            elif "setup_done" in msg:
                if w.setup_since is not None:
                    w.started += time.monotonic() - w.setup_since
                w.setup_since = None
            elif "case" in msg:
                w.case = msg["case"]
            elif "verdict" in msg:
                try:
                    verdict = Verdict.from_dict(msg["verdict"])
                except (KeyError, TypeError, ValueError) as e:
                    return self._protocol_error(w, f"unreadable verdict ({e})")
                result = TaskResult(w.task, w.case, verdict, w.slot, time.monotonic() - w.started)
                w.task, w.case = None, None
        return result

    def _idle_exit(self, w: _Worker) -> None:
        """A worker without a task closed its pipe: retired itself, or failed to start."""
        if w.retiring:
            self.recycled += 1
        elif not w.ready:
            self._start_failures += 1
            if self._start_failures >= MAX_START_FAILURES:
                self._retire(w, kill=True)
                del self._workers[w.slot]
                last = [ln for ln in _tail(w.log_path).splitlines() if ln.strip()]
                raise WorkerStartError(
                    f"worker processes exit before they are ready ({self._start_failures} in a row)"
                    + (f": {last[-1].strip()[:200]}" if last else f"; see {w.log_path}"))
        else:
            self.restarts += 1
        self._replace(w)

    def _protocol_error(self, w: _Worker, problem: str) -> TaskResult | None:
        task, case, stage = w.task, w.case, w.stage
        _, tail = self._replace(w)
        self.restarts += 1
        if task is None:
            return None
        return TaskResult(task, case, outcomes.protocol_verdict(problem, stage, tail), w.slot,
                          time.monotonic() - w.started)

    def _finish_dead(self, w: _Worker, *, timed_out: bool) -> TaskResult:
        task, case, stage, elapsed = w.task, w.case, w.stage, time.monotonic() - w.started
        rc, log_tail = self._replace(w)
        self.restarts += 1
        if timed_out:
            verdict = outcomes.timeout_verdict(self.timeout, stage, log_tail, elapsed=elapsed)
        else:
            verdict = outcomes.death_verdict(rc, stage, log_tail, elapsed=elapsed)
        return TaskResult(task, case, verdict, w.slot, elapsed)


executors.add("local", WorkerPool.from_config)


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""
