"""The local executor: a crash-proof pool of persistent worker processes on this machine.

Why not ``concurrent.futures`` / ``multiprocessing.Pool``: a worker that segfaults breaks those
pools as a whole, and they cannot say which stage of the case was running when it died.  Here
every worker is a plain subprocess (``python -m fuzzharness.engine.worker``) that imports TVM
once and speaks JSON lines (:mod:`fuzzharness.engine.protocol`); the driver multiplexes their
pipes with ``selectors`` and:

* replaces a worker that died (segfault, abort, out of memory) and turns the task it was
  running into a ``crash`` verdict with the signal, the last stage it announced and the tail
  of its log (:mod:`fuzzharness.engine.worker_deaths`);
* kills a worker whose task overran ``timeout`` seconds (its whole process group, so a
  compiler subprocess dies with it) and records a ``timeout`` verdict;
* feeds tasks lazily from an iterator, so a time budget stops generation as soon as it ends;
* replaces, without counting a restart, a worker that retires itself (it does so between
  tasks when its memory use nears the limit — see :mod:`fuzzharness.engine.worker`);
* refuses to go on (:class:`WorkerStartError`) when fresh workers die before they are ready
  three times in a row: that is a broken installation or plugin, not a TVM bug;
* runs a task marked ``"fresh": true`` in a worker process that has run nothing before
  (confirmation of a failure, :mod:`fuzzharness.campaign.confirm`): a *zygote* worker
  (:mod:`fuzzharness.engine.fresh`) imports TVM once and forks a child per such task, so a
  fresh worker costs a fork (~15 ms), not a TVM import (~1.3 s of CPU);
* takes follow-up tasks while it runs (:meth:`WorkerPool.add`);
* starts every worker with glibc's allocator checks on (:mod:`fuzzharness.core.hygiene`,
  ``hygiene=False`` to compare without).

Workers die with the driver: each asks the kernel for SIGKILL when its parent dies
(``PR_SET_PDEATHSIG``) and also exits on EOF on stdin, so ``kill -9`` of the driver leaves no
orphans burning CPU.  ``PR_SET_PDEATHSIG`` fires when the *thread* that spawned the worker
exits: iterate :meth:`WorkerPool.run` from a thread that outlives the pool.
"""

from __future__ import annotations

import collections
import contextlib
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from fuzzharness.core import interpreter
from fuzzharness.core.errors import UsageError
from fuzzharness.core.hygiene import hygiene_env
from fuzzharness.core.verdict import Stage, Verdict
from fuzzharness.engine import protocol, worker_deaths
from fuzzharness.engine.executor import (
    IDLE,
    Executor,
    ExecutorConfig,
    Task,
    TaskResult,
)
from fuzzharness.engine.worker_process import (
    FRESH_SLOT,
    SETUP_TIMEOUT,
    WorkerProcess,
    drain,
    fresh_child_result,
    process_label,
    tail_of,
    written_at,
)

READY_TIMEOUT = 120.0  # importing TVM takes ~1 s; a loaded CI machine can be much slower
MAX_START_FAILURES = 3  # consecutive workers dead before "ready": give up

__all__ = ["TaskResult", "WorkerPool", "WorkerStartError"]


class WorkerStartError(UsageError):
    """Worker processes die before they are ready (broken install, plugin or limit)."""


class WorkerPool(Executor):
    supports_idle = True

    def __init__(
        self,
        workers: int,
        *,
        timeout: float = 60.0,
        memory_mb: int = 0,
        log_dir: str | os.PathLike | None = None,
        env: dict[str, str] | None = None,
        hygiene: bool = True,
        fresh_tasks: bool = False,
    ):
        self.n, self.fresh_tasks = max(1, workers), fresh_tasks
        self.timeout = timeout
        self.memory_mb = memory_mb
        # no log_dir: the pool's own, so that a death's verdict has its log tail (a crash's site)
        self._own_logs = None if log_dir else tempfile.TemporaryDirectory(prefix="fuzzharness-")
        self.log_dir = Path(log_dir or self._own_logs.name)
        self.env = env
        self.hygiene = hygiene
        self._added: collections.deque[Task] = collections.deque()  # see add()
        self.restarts = 0  # replaced after a crash, a timeout or an unexpected exit
        self.recycled = 0  # retired themselves (memory high-water mark) and were replaced
        self.tvm_versions: set[str] = set()  # what the workers' "ready" said they import
        self._sel = selectors.DefaultSelector()
        self._workers: dict[int, WorkerProcess] = {}
        self._start_failures = 0

    @classmethod
    def from_config(cls, config: ExecutorConfig) -> WorkerPool:
        return cls(config.workers, timeout=config.timeout, memory_mb=config.memory_mb,
                   log_dir=config.log_dir, env=config.env, hygiene=config.hygiene,
                   fresh_tasks=config.fresh_tasks)

    # -- lifecycle --------------------------------------------------------------------------
    def _spawn(self, slot: int) -> WorkerProcess:
        fresh = slot == FRESH_SLOT
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / ("worker-fresh.log" if fresh else f"worker-{slot}.log")
        log = open(log_path, "ab")  # noqa: SIM115 - owned by the child
        # $FUZZHARNESS_WORKER_PYTHON: another interpreter and its TVM (core/interpreter.py)
        python, env = interpreter.command_env(self.env)
        cmd = [python, "-m", "fuzzharness.engine.worker",
               "--memory-mb", str(self.memory_mb), "--parent-pid", str(os.getpid()),
               *(["--fresh"] if fresh else [])]
        env = hygiene_env(env, enabled=self.hygiene)
        env.setdefault("PYTHONUNBUFFERED", "1")
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
            start_new_session=True,  # Ctrl-C reaches the driver, which then stops the workers
        )
        log.close()
        os.set_blocking(proc.stdout.fileno(), False)
        w = WorkerProcess(slot, proc, log_path, started=time.monotonic())
        self._workers[slot] = w
        self._sel.register(proc.stdout, selectors.EVENT_READ, w)
        return w

    def _retire(self, w: WorkerProcess, *, kill: bool) -> int | None:
        self._sel.unregister(w.proc.stdout)
        if kill and w.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(w.proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            w.proc.stdin.close()
        try:
            rc = w.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            w.proc.kill()
            rc = w.proc.wait()
        w.proc.stdout.close()
        return rc

    def _replace(self, w: WorkerProcess) -> tuple[int | None, str]:
        """Stop ``w`` (killing it if needed), read its log tail, start a fresh one in its slot."""
        rc = self._retire(w, kill=True)
        tail = tail_of(w.log_path)
        self._spawn(w.slot)
        return rc, tail

    def close(self) -> None:
        for w in list(self._workers.values()):
            self._retire(w, kill=True)
        self._workers.clear()
        if self._sel.get_map() is not None:
            self._sel.close()

    def start(self) -> None:
        """Start a worker in every empty slot, and the zygote with ``fresh_tasks`` (why:
        :class:`ExecutorConfig`); ``run`` does it too.  They get ready meanwhile."""
        for slot in [*range(self.n), *([FRESH_SLOT] if self.fresh_tasks else [])]:
            if slot not in self._workers:
                self._spawn(slot)

    def pids(self) -> dict[int, int]:
        """Slot → process id of the worker in it now (the one the next task there goes to)."""
        return {slot: w.proc.pid for slot, w in self._workers.items()}

    def add(self, task: Task) -> None:
        """Queue one more task into the run in progress (a follow-up decided from a result,
        e.g. a confirmation); ``run`` does not end before it has its result.  ``should_stop``
        does not hold it back; ``abandon_at`` drops it like any task still running."""
        self._added.append(task)

    # -- the loop ---------------------------------------------------------------------------
    def run(
        self,
        tasks: Iterable[Task],
        *,
        should_stop: Callable[[], bool] = lambda: False,
        abandon_at: float | None = None,
        wakeup_fd: int | None = None,
    ) -> Iterator[TaskResult]:
        """Run ``tasks`` (dicts with a unique ``task`` key); yield results as they finish.

        See :class:`fuzzharness.engine.executor.Executor` for the contract (and for
        :data:`~fuzzharness.engine.executor.IDLE` and ``wakeup_fd``).
        """
        source = iter(tasks)
        self.start()
        if wakeup_fd is not None:
            self._sel.register(wakeup_fd, selectors.EVENT_READ, None)
        try:
            yield from self._loop(source, should_stop, abandon_at)
        finally:
            if wakeup_fd is not None and self._sel.get_map() is not None:
                self._sel.unregister(wakeup_fd)

    def _loop(self, source: Iterator[Task], should_stop: Callable[[], bool],
              abandon_at: float | None) -> Iterator[TaskResult]:
        exhausted = False

        def pull(fresh: bool) -> Task | None:
            """The next task for a normal worker (``fresh`` False) or for the zygote: added
            tasks first; then, for a normal worker only (the source is pulled lazily, one
            task per idle worker), the source — "fresh" tasks met there are queued."""
            nonlocal exhausted
            task = next((t for t in self._added if bool(t.get("fresh")) == fresh), None)
            if task is not None:
                self._added.remove(task)
                return task
            while not exhausted and not fresh:
                if should_stop():
                    exhausted = True
                    break
                task = next(source, None)
                if task is None:
                    exhausted = True
                    break
                if task is IDLE:  # nothing now: ask again on the next turn
                    return None
                if not task.get("fresh"):
                    return task
                self._added.append(task)
            return None

        def feed() -> None:
            """Hand a task to every idle worker (and to an idle zygote)."""
            for w in list(self._workers.values()):
                if w.slot != FRESH_SLOT and w.ready and w.task is None and not w.retiring:
                    task = pull(fresh=False)
                    if task is None:
                        break
                    self._assign(w, task)
            zygote = self._workers.get(FRESH_SLOT)
            if zygote is None:
                if any(t.get("fresh") for t in self._added):
                    self._spawn(FRESH_SLOT)  # started when first needed (or by start())
            elif zygote.ready and zygote.task is None and (task := pull(fresh=True)) is not None:
                self._assign(zygote, task)

        while True:
            feed()
            busy = [w for w in self._workers.values() if w.task is not None]
            if exhausted and not busy and not self._added:
                return
            if exhausted and abandon_at is not None and time.monotonic() >= abandon_at:
                for w in busy:  # dropped without a result: a resume runs them again
                    self._retire(w, kill=True)
                    del self._workers[w.slot]
                self._added.clear()
                return
            # wait for messages or the nearest deadline
            now = time.monotonic()
            deadlines = [w.started + self.timeout if w.setup_since is None
                         else w.setup_since + SETUP_TIMEOUT for w in busy]
            deadlines += [w.started + READY_TIMEOUT for w in self._workers.values() if not w.ready]
            wait = max(0.0, min(deadlines) - now) if deadlines else 0.5
            for key, _ in self._sel.select(timeout=min(wait, 0.5)):
                w = key.data
                if w is None:  # the wake-up pipe: a task may be ready
                    drain(key.fd)
                    continue
                if self._workers.get(w.slot) is not w:
                    continue  # replaced while handling an earlier event of this batch
                result = self._read(w)
                if result is not None:
                    # the worker gets its next task before the caller handles this result
                    # (database commit, buckets, progress): it does not wait for the driver
                    feed()
                    yield result
            now = time.monotonic()
            # a worker with a message waiting is read first, whatever the clock says: the
            # caller may have held this generator for a long time (the damage search, a
            # test writing its repro); _read judges the task by when the message was written
            waiting = {id(key.data) for key, _ in self._sel.select(timeout=0)}
            for w in list(self._workers.values()):
                if id(w) in waiting:
                    continue
                if w.task is not None and w.overdue(now, self.timeout):
                    if w.slot == FRESH_SLOT and w.child is not None:
                        yield self._fresh_ended(w, None)  # kills the child, keeps the zygote
                    else:
                        yield self._finish_dead(w, timed_out=True)
                elif not w.ready and now - w.started > READY_TIMEOUT:
                    raise WorkerStartError(
                        f"worker {w.slot} did not start within {READY_TIMEOUT:g} s; "
                        f"see {w.log_path}")

    def _assign(self, w: WorkerProcess, task: Task) -> None:
        w.task, w.case, w.stage, w.started = task, task.get("case"), Stage.GENERATE.value, time.monotonic()
        w.setup_since, w.child, w.provisional = None, None, None
        try:
            w.proc.stdin.write(protocol.encode(task))
            w.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the death is noticed on the next read

    def _read(self, w: WorkerProcess) -> TaskResult | None:
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
                continue
            if "bye" in msg:
                w.retiring = True
                continue
            if w.task is None or msg.get("task") != w.task.get("task"):
                continue  # a late message of a task already decided
            at = written_at(msg)
            if w.overdue(at, self.timeout):
                # Written after the task's deadline, read late (the caller held this loop):
                # the task timed out, as a watching driver would have said, at the stage
                # announced last before the deadline (messages are read in order).
                if w.slot != FRESH_SLOT:
                    return self._finish_dead(w, timed_out=True)  # w is replaced: stop here
                result = self._fresh_ended(w, None)
                continue  # the rest of the task's messages are late ones now
            if "exit" in msg:  # the zygote's child ended without a verdict
                result = self._fresh_ended(w, msg["exit"])
            elif "verdict" in msg:
                try:
                    verdict = Verdict.from_dict(msg["verdict"])
                except (KeyError, TypeError, ValueError) as e:
                    return self._protocol_error(w, f"unreadable verdict ({e})")
                result = TaskResult(w.task, w.case, verdict, w.slot, at - w.started,
                                    process_label(w))
                w.task, w.case = None, None
            else:
                w.note(msg, at)
        return result

    def _idle_exit(self, w: WorkerProcess) -> None:
        """A worker without a task closed its pipe: retired itself, or failed to start."""
        if w.retiring:
            self.recycled += 1
        elif not w.ready:
            self._start_failures += 1
            if self._start_failures >= MAX_START_FAILURES:
                self._retire(w, kill=True)
                del self._workers[w.slot]
                last = [ln for ln in tail_of(w.log_path).splitlines() if ln.strip()]
                raise WorkerStartError(
                    f"worker processes exit before they are ready ({self._start_failures} in a row)"
                    + (f": {last[-1].strip()[:200]}" if last else f"; see {w.log_path}"))
        else:
            self.restarts += 1
        self._replace(w)

    def _protocol_error(self, w: WorkerProcess, problem: str) -> TaskResult | None:
        task, case, stage = w.task, w.case, w.stage
        _, tail = self._replace(w)
        self.restarts += 1
        if task is None:
            return None
        return TaskResult(task, case, worker_deaths.protocol_verdict(problem, stage, tail), w.slot,
                          time.monotonic() - w.started, process_label(w))

    def _fresh_ended(self, w: WorkerProcess, returncode: int | None) -> TaskResult:
        self.restarts += 1
        return fresh_child_result(w, returncode, self.timeout)

    def _finish_dead(self, w: WorkerProcess, *, timed_out: bool) -> TaskResult:
        task, case, stage, elapsed = w.task, w.case, w.stage, time.monotonic() - w.started
        process = process_label(w)
        rc, log_tail = self._replace(w)
        self.restarts += 1
        verdict = worker_deaths.ended_verdict(rc, self.timeout, stage, log_tail, timed_out=timed_out,
                                              elapsed=elapsed, provisional=w.provisional)
        return TaskResult(task, case, verdict, w.slot, elapsed, process)
