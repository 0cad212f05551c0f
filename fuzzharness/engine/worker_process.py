"""A worker process of :class:`fuzzharness.engine.pool.WorkerPool`: its state as the pool
sees it, and the small helpers that read what a process left behind."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from fuzzharness.core.verdict import Stage
from fuzzharness.engine import worker_deaths
from fuzzharness.engine.executor import Task, TaskResult

SETUP_TIMEOUT = 300.0  # a one-time setup inside a task (tensor intrinsics: ~4-12 s)
FRESH_SLOT = -1  # the zygote that forks a fresh worker per "fresh" task


@dataclasses.dataclass
class WorkerProcess:
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
    child: int | None = None  # the zygote's forked worker running the task (FRESH_SLOT only)
    provisional: dict[str, Any] | None = None  # the task's verdict before a probe (tasks.py)

    def note(self, msg: dict[str, Any], at: float) -> None:
        """A message of the running task, before its end, that the worker wrote ``at``."""
        if "stage" in msg:
            self.stage = msg["stage"]
        elif "setup" in msg:  # a one-time setup: the case's clock stops (warmup.py)
            self.setup_since = at
        elif "setup_done" in msg:
            if self.setup_since is not None:
                self.started += at - self.setup_since
            self.setup_since = None
        elif "case" in msg:
            self.case = msg["case"]
        elif "forked" in msg:  # the zygote's child for this task
            self.child = int(msg["forked"])
        elif "provisional" in msg:
            self.provisional = msg["provisional"]

    def overdue(self, now: float, timeout: float) -> bool:
        if self.setup_since is not None:
            return now - self.setup_since > SETUP_TIMEOUT
        return now - self.started > timeout


def drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, OSError):
        pass


def written_at(msg: dict[str, Any]) -> float:
    """When the worker wrote ``msg`` (its ``"at"``, engine/protocol.py), on the driver's
    clock; now when it does not say, or says a time still to come."""
    now = time.monotonic()
    at = msg.get("at")
    if isinstance(at, (int, float)) and not isinstance(at, bool) and at <= now:
        return float(at)
    return now


def process_label(w: WorkerProcess) -> str:
    """Which process ran the task: the worker's pid; ``fresh/<pid>`` for a zygote's child."""
    if w.slot == FRESH_SLOT:
        return f"fresh/{w.child if w.child is not None else w.proc.pid}"
    return str(w.proc.pid)


def tail_of(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def fresh_child_result(w: WorkerProcess, returncode: int | None, timeout: float) -> TaskResult:
    """The zygote's child died (``returncode``) or overran the timeout (None: killed
    here, with its process group); the zygote itself stays."""
    task, case, stage, elapsed = w.task, w.case, w.stage, time.monotonic() - w.started
    process = process_label(w)
    if returncode is None and w.child is not None:
        for kill in (os.killpg, os.kill):  # its group (compilers too), at least itself
            try:
                kill(w.child, signal.SIGKILL)
            except ProcessLookupError:
                pass
    verdict = worker_deaths.ended_verdict(returncode, timeout, stage, tail_of(w.log_path),
                                          timed_out=returncode is None, elapsed=elapsed,
                                          provisional=w.provisional)
    w.task, w.case, w.child, w.provisional = None, None, None, None
    return TaskResult(task, case, verdict, w.slot, elapsed, process)
