"""The executor interface: tasks in, a stream of :class:`TaskResult` out.

A campaign does not care where its cases run.  It hands an :class:`Executor` a lazy iterable
of *tasks* and consumes results in completion order; the executor owns the worker processes,
their timeouts and memory limits, and turns every way a worker can die into a verdict.

Tasks are plain JSON data (they cross process and machine boundaries)::

    {"task": 7, "generate": {"seed": 1, "index": 7, "settings": {...GenSettings...}}}
    {"task": 8, "case": {...case JSON...}}

``task`` is unique within one ``run`` call (a campaign uses the case index).  Optional keys:
``"fresh": true`` — run it in a worker process that has run nothing before (confirmation of
a failure, :mod:`fuzzharness.campaign.confirm`); ``"outputs": true`` — a finding's verdict
carries its output arrays (``details["outputs_npz"]``, see :mod:`fuzzharness.campaign.confirm`).

Contract every implementation keeps (``tests/test_engine_crashes.py`` checks the local one):

* every task handed out yields exactly one :class:`TaskResult` — unless ``abandon_at`` passed,
  in which case tasks still running are dropped *without* a result (a resumed campaign runs
  them again), never with a made-up one;
* a worker that segfaults, aborts, hangs past ``timeout`` or exceeds ``memory_mb`` costs one
  ``crash``/``timeout`` verdict for the task it was running (classified by
  :mod:`fuzzharness.engine.worker_deaths`, with the signal, the stage and the log tail) and is
  replaced; the run goes on;
* ``should_stop()`` is polled before each new task is handed out; the task iterable is pulled
  lazily, one task per free worker, so a time budget stops generation promptly;
* results carry ``case`` — the case JSON the worker reported *before* running it, so a task
  that killed its worker still has its case recorded — and ``process``, which worker process
  ran it (the cases before it in the same process are the suspects when it fails only there);
* :meth:`Executor.add` queues a follow-up task into the run in progress; ``run`` does not
  end before its result (unless ``abandon_at`` passes);
* every worker process starts with glibc's allocator checks on (``hygiene``,
  :mod:`fuzzharness.core.hygiene`).

Executors that set :attr:`Executor.supports_idle` also accept :data:`IDLE` from the task
iterable — "no task now, ask again later": the worker stays idle, the iterable is asked again
on the next turn (at the latest after half a second, at once when ``wakeup_fd`` — a pipe the
caller writes a byte to when it has a task — becomes readable).  The campaign uses this to
share its workers with the minimization of new buckets
(:mod:`fuzzharness.campaign.minimizing.lanes`).

Implementations are registered by name — the built-in ones by dotted name
(:data:`executors`, imported when made: Ray only when the "ray" executor is used), a
plugin's with ``executors.add(name, factory)``; the campaign picks one by the ``executor``
setting (``--executor`` / TOML ``[campaign] executor``).
"""

from __future__ import annotations

import abc
import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from fuzzharness.core.registry import Registry
from fuzzharness.core.verdict import Verdict

Task = dict[str, Any]
#: yielded by a task iterable: no task now, ask again later (see the module docstring)
IDLE: Any = type("Idle", (), {"__repr__": lambda self: "IDLE"})()


@dataclasses.dataclass
class TaskResult:
    task: Task
    case: dict[str, Any] | None  # None only when the worker died before reporting the case
    verdict: Verdict
    worker: int | str  # a slot number locally; an executor-specific id elsewhere
    elapsed: float
    process: str = ""  # the worker process (pid locally, node/slot/pid on Ray)


@dataclasses.dataclass
class ExecutorConfig:
    """What every executor needs; an implementation may read more from ``options``."""

    workers: int = 1
    timeout: float = 60.0  # seconds per task, generation included
    memory_mb: int = 0  # per worker process; 0: no limit
    log_dir: Path | None = None  # worker logs (one file per worker slot)
    env: dict[str, str] | None = None  # worker environment (default: ours)
    hygiene: bool = True  # glibc allocator checks + guard zones in the workers
    #: tasks marked "fresh" will come (a confirming campaign): the local pool starts its zygote
    #: with the workers, so that its one-time start (~5 s of CPU) neither holds up the first
    #: confirmation nor takes a worker's core in the middle of the run
    fresh_tasks: bool = False
    options: dict[str, Any] = dataclasses.field(default_factory=dict)


class Executor(abc.ABC):
    #: worker processes replaced after a crash, a timeout or a memory kill
    restarts: int = 0
    #: worker processes replaced because they retired themselves (memory high-water mark)
    recycled: int = 0
    #: the task iterable may yield :data:`IDLE`, and ``run`` takes ``wakeup_fd``
    supports_idle: bool = False

    @abc.abstractmethod
    def run(
        self,
        tasks: Iterable[Task],
        *,
        should_stop: Callable[[], bool] = lambda: False,
        abandon_at: float | None = None,
    ) -> Iterator[TaskResult]:
        """Run ``tasks``; yield one result per task as it finishes (see the module docstring).

        ``abandon_at`` is a ``time.monotonic()`` instant after which, once no more tasks are
        to be handed out, tasks still running are abandoned.
        """

    @abc.abstractmethod
    def add(self, task: Task) -> None:
        """Queue ``task`` into the run in progress (see the module docstring)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop every worker process; idempotent."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


ExecutorFactory = Callable[[ExecutorConfig], Executor]
executors: Registry[ExecutorFactory] = Registry("executor")
executors.add_lazy("local", "fuzzharness.engine.pool:WorkerPool.from_config")
executors.add_lazy("ray", "fuzzharness.engine.ray_executor:RayExecutor.from_config")


def make_executor(name: str, config: ExecutorConfig) -> Executor:
    """The executor registered as ``name`` (UnknownName lists the registered ones)."""
    return executors[name](config)


def default_workers() -> int:
    """One worker per CPU this process may run on (affinity and cgroup cpusets respected)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
