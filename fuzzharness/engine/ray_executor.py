"""The Ray executor: the same campaign on a Ray cluster (``--executor ray``).

Design: one Ray *actor* per worker slot, and each actor owns a local
:class:`~fuzzharness.engine.pool.WorkerPool` of one worker subprocess.  The actor is the
cluster-side driver of exactly what the local executor does on this machine, so

* a case is generated and judged by the same worker code (``python -m
  fuzzharness.engine.worker``), from the same ``(seed, index)``: same case ids, same verdicts;
* the worker subprocess keeps TVM imported between tasks, on whichever node the actor lives;
* a segfault, abort, memory blow-up or hang kills (or gets killed in) the *subprocess*, never
  the actor: the actor's pool classifies it with :mod:`fuzzharness.engine.worker_deaths` (signal,
  stage, log tail — the same verdict as locally) and starts a fresh worker;
* one-time setups pause the case's clock, workers near their memory cap are recycled — all
  inherited from the pool.

Why not Ray tasks, or one actor that *is* the worker: TVM running inside a Ray worker process
would take that process down on a segfault; Ray would report a ``WorkerCrashedError`` without
the stage that was running, and restart a worker that has to import TVM again.  An actor per
slot is also what keeps TVM warm: Ray tasks may land on a fresh worker process each time.

The driver side (:class:`RayExecutor`) keeps one task in flight per actor, handing tasks out
lazily (``should_stop`` is polled before each, as locally), and yields results as Ray returns
them; the campaign stores each at once, so durability and ``--resume`` are the local ones.
Tasks and results cross the cluster as JSON text.

When an *actor* is lost (its node died, Ray's memory monitor killed it, the driver lost
contact) nothing is known about the case — it runs again, once, on a fresh actor; a task that
loses two actors becomes a ``harness_error`` (an infrastructure failure, never reported as a
TVM bug).  A watchdog kills an actor that has not answered within ``timeout`` plus the pool's
own start-up and setup allowances.  Actors that die before answering anything
:data:`~fuzzharness.engine.pool.MAX_START_FAILURES` times in a row (the harness is not
installed on a node, a plugin does not import) stop the run with a one-line error.

Fresh workers (a task marked ``"fresh"``: confirmation of a failure) run on any actor, in
the fork-per-task zygote of its pool (:mod:`fuzzharness.engine.fresh`), started on the
actor's first such task; follow-up tasks (:meth:`RayExecutor.add`) are handed out before new
ones from the source.  Every worker starts with heap hygiene on unless the campaign says
otherwise.

Environment: actors see their node's environment (``ray start``'s); the driver forwards every
``FUZZHARNESS_*`` variable (plugins, remote-device settings) to them.  The harness and TVM must
be installed on every node, at the same versions as on the driver.

Connecting: ``ray_address`` (``--ray-address``; else ``$RAY_ADDRESS``) names a running cluster,
e.g. the ``127.0.0.1:6379`` printed by ``ray start --head``.  Without one, a private Ray
instance with ``workers`` CPUs is started on this machine for the run and stopped after it.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from fuzzharness.core.errors import UsageError
from fuzzharness.core.verdict import Verdict
from fuzzharness.engine import worker_deaths
from fuzzharness.engine.executor import Executor, ExecutorConfig, Task, TaskResult
from fuzzharness.engine.pool import MAX_START_FAILURES, READY_TIMEOUT, WorkerPool, WorkerStartError
from fuzzharness.engine.worker_process import SETUP_TIMEOUT

FORWARDED_ENV_PREFIX = "FUZZHARNESS_"
WATCHDOG_SLACK = 60.0  # on top of timeout + start-up + setup allowances
RAY_MISSING = ("the ray executor needs Ray, which is not installed: "
               "pip install 'tvm-fuzzharness[distributed]'")


class RayConnectError(UsageError):
    """The Ray cluster named cannot be reached (wrong address, token, version)."""


class PoolActor:
    """Body of the Ray actor: one local worker pool of one worker process on its node."""

    def __init__(self, slot: int, timeout: float, memory_mb: int, log_dir: str | None,
                 env: dict[str, str], hygiene: bool = True):
        self.node = socket.gethostname()
        full_env = dict(os.environ)
        full_env.update(env)
        self.log_dir, self._own_log_dir = _node_log_dir(log_dir, slot)
        self.pool = WorkerPool(1, timeout=timeout, memory_mb=memory_mb, log_dir=self.log_dir,
                               env=full_env, hygiene=hygiene)
        self.pool.start()  # importing TVM begins now, while the driver starts the others

    def run(self, task_json: str) -> str:
        """Run one task to its verdict; the pool replaces a worker that died on it."""
        task = json.loads(task_json)
        restarts, recycled = self.pool.restarts, self.pool.recycled
        self.pool.start()
        pid = self.pool.pids()[0]  # the worker process this task goes to
        (r,) = list(self.pool.run([task]))
        if task.get("fresh"):  # ran in a child of the zygote, not in the slot's worker
            pid = r.process
        return json.dumps({"case": r.case, "verdict": r.verdict.to_dict(), "elapsed": r.elapsed,
                           "restarts": self.pool.restarts - restarts,
                           "recycled": self.pool.recycled - recycled, "node": self.node,
                           "pid": pid})

    def close(self) -> None:
        self.pool.close()
        if self._own_log_dir and self.log_dir is not None:
            shutil.rmtree(self.log_dir, ignore_errors=True)


def _node_log_dir(log_dir: str | None, slot: int) -> tuple[Path | None, bool]:
    """Where the worker logs go on this node, and whether the folder is ours to remove.

    The campaign's log folder when this node sees it (same machine or a shared file system);
    else a temporary folder on the node, removed when the actor closes (log tails still reach
    the verdicts); no log at all when the campaign keeps none (as the local pool).
    """
    if not log_dir:
        return None, False
    if Path(log_dir).parent.is_dir():
        return Path(log_dir) / f"ray-{slot}", False
    return Path(tempfile.mkdtemp(prefix=f"fuzzharness-ray-{slot}-")), True


@dataclasses.dataclass
class _Slot:
    index: int
    actor: Any = None
    ref: Any = None  # ObjectRef of the task in flight
    task: Task | None = None
    sent: float = 0.0
    answered: bool = False  # this actor returned at least one result


class RayExecutor(Executor):
    def __init__(self, config: ExecutorConfig):
        try:
            import ray
        except ImportError:
            raise UsageError(RAY_MISSING) from None
        self.ray = ray
        self.n = max(1, config.workers)
        self.timeout = config.timeout
        self.memory_mb = config.memory_mb
        self.log_dir = str(config.log_dir) if config.log_dir else None
        self.hygiene = config.hygiene
        self._added: collections.deque[Task] = collections.deque()  # see add()
        source_env = config.env if config.env is not None else os.environ
        self.env = {k: v for k, v in source_env.items() if k.startswith(FORWARDED_ENV_PREFIX)}
        self.address = config.options.get("ray_address") or os.environ.get("RAY_ADDRESS") or ""
        # An actor that says nothing for this long is wedged (its pool enforces the timeout).
        self.watchdog = self.timeout + READY_TIMEOUT + SETUP_TIMEOUT + WATCHDOG_SLACK
        self.restarts = 0
        self.recycled = 0
        self._lost_once: set = set()
        self._start_failures = 0
        self._owns_ray = False
        self._connect()
        self._slots = [_Slot(i) for i in range(self.n)]
        self._actor_class = ray.remote(num_cpus=1, max_restarts=0, max_concurrency=1)(PoolActor)

    @classmethod
    def from_config(cls, config: ExecutorConfig) -> RayExecutor:
        return cls(config)

    # -- cluster --------------------------------------------------------------------------
    def _connect(self) -> None:
        ray = self.ray
        if ray.is_initialized():
            return
        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING,
                                  "configure_logging": True}
        if self.address:
            _check_reachable(self.address)
            kwargs["address"] = self.address
        else:  # a private instance on this machine, sized for the run
            kwargs.update(num_cpus=self.n, include_dashboard=False)
        try:
            ray.init(**kwargs)
        except Exception as e:  # noqa: BLE001 - ConnectionError, RuntimeError, AuthenticationError...
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray instance"
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            chain, cause = [], e
            while cause is not None and len(chain) < 10:
                chain.append(f"{type(cause).__name__} {cause}")
                cause = cause.__cause__ or cause.__context__
            if any("Authentication" in c or "AuthToken" in c for c in chain):
                first += (" (the cluster wants its token: set RAY_AUTH_MODE=token, with the token "
                          "in ~/.ray/auth_token or $RAY_AUTH_TOKEN)")
            raise RayConnectError(f"cannot connect to {where}: {first[:400]}") from None
        self._owns_ray = True
        # An actor holds its CPU for its lifetime: actors beyond the cluster's CPUs would
        # wait for ever (and then count as dead), so the run uses as many as there are.
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if 1 <= cpus < self.n:
            print(f"fuzzharness: the Ray cluster has {cpus} CPUs: {cpus} workers, not {self.n}",
                  file=sys.stderr)
            self.n = cpus

    def _start(self, slot: _Slot) -> None:
        slot.actor = self._actor_class.options(scheduling_strategy="SPREAD").remote(
            slot.index, self.timeout, self.memory_mb, self.log_dir, self.env, self.hygiene)
        slot.answered = False

    def _discard(self, slot: _Slot) -> None:
        if slot.actor is not None:
            try:
                self.ray.kill(slot.actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        slot.actor, slot.ref, slot.task = None, None, None

    def close(self) -> None:
        ray = self.ray
        live = [s for s in self._slots if s.actor is not None]
        if live and ray.is_initialized():
            # let each pool stop its worker, then make sure the actors are gone
            try:
                ray.get([s.actor.close.remote() for s in live], timeout=10)
            except Exception:  # noqa: BLE001 - a dead or busy actor: killed below
                pass
        for s in live:
            self._discard(s)
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False

    def add(self, task: Task) -> None:
        """Queue a follow-up task into the run in progress (see the Executor contract)."""
        self._added.append(task)

    # -- the loop -------------------------------------------------------------------------
    def run(
        self,
        tasks: Iterable[Task],
        *,
        should_stop: Callable[[], bool] = lambda: False,
        abandon_at: float | None = None,
    ) -> Iterator[TaskResult]:
        """See :class:`fuzzharness.engine.executor.Executor` for the contract."""
        ray = self.ray
        source = iter(tasks)
        exhausted = False
        again: collections.deque[Task] = collections.deque()  # tasks whose actor was lost
        while True:
            for slot in self._slots:
                if slot.task is not None:
                    continue
                if again:
                    task = again.popleft()
                elif self._added:
                    task = self._added.popleft()
                elif exhausted:
                    continue
                elif should_stop():
                    exhausted = True
                    continue
                else:
                    task = next(source, None)
                    if task is None:
                        exhausted = True
                        continue
                if slot.actor is None:
                    self._start(slot)
                slot.task, slot.sent = task, time.monotonic()
                slot.ref = slot.actor.run.remote(json.dumps(task))
            busy = [s for s in self._slots if s.task is not None]
            if exhausted and not again and not busy and not self._added:
                return
            if exhausted and abandon_at is not None and time.monotonic() >= abandon_at:
                for s in busy:  # dropped without a result: a resume runs them again
                    self._discard(s)
                self._added.clear()
                return
            by_ref = {s.ref: s for s in busy}
            ready, rest = ray.wait(list(by_ref), num_returns=1, timeout=0.5)
            if ready and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                result = self._collect(by_ref[ref], ref, again)
                if result is not None:
                    yield result
            now = time.monotonic()
            for s in busy:
                if s.task is not None and s.ref not in ready and now - s.sent > self.watchdog:
                    result = self._lost(s, f"no answer from the Ray actor within {self.watchdog:g} s",
                                        again)
                    if result is not None:
                        yield result

    def _collect(self, slot: _Slot, ref, again: collections.deque) -> TaskResult | None:
        ray = self.ray
        try:
            out = json.loads(ray.get(ref))
        except ray.exceptions.RayTaskError as e:
            # the pool itself gave up (workers that cannot start) or a bug in the actor
            cause = getattr(e, "cause", None) or e
            self._discard(slot)
            if isinstance(cause, UsageError):
                raise WorkerStartError(f"on the Ray cluster: {cause}") from None
            raise
        except ray.exceptions.RayError as e:  # the actor died or its node was lost
            return self._lost(slot, _first_line(e), again)
        task, elapsed = slot.task, time.monotonic() - slot.sent
        slot.task, slot.ref, slot.answered = None, None, True
        self._start_failures = 0
        self.restarts += out["restarts"]
        self.recycled += out["recycled"]
        # worker id "node/slot/pid": which cases shared a process (and its heap) stays known
        worker = f"{out['node']}/{slot.index}/{out['pid']}"
        return TaskResult(task, out["case"], Verdict.from_dict(out["verdict"]), worker,
                          out.get("elapsed", elapsed), worker)

    def _lost(self, slot: _Slot, why: str, again: collections.deque) -> TaskResult | None:
        """The actor running ``slot.task`` is gone: run the task again once, elsewhere.

        An actor that never answered died starting (a node without the harness, a plugin that
        does not import): its task goes back in front without being charged for it, and
        :data:`MAX_START_FAILURES` such deaths in a row stop the run.
        """
        task, answered, elapsed = slot.task, slot.answered, time.monotonic() - slot.sent
        self._discard(slot)
        self.restarts += 1
        if not answered:
            self._start_failures += 1
            if self._start_failures >= MAX_START_FAILURES:
                raise WorkerStartError(
                    f"Ray actors die before they answer ({self._start_failures} in a row; is "
                    f"tvm-fuzzharness installed on every node?): {why}")
            again.appendleft(task)
            return None
        key = task.get("task")
        if key not in self._lost_once:
            self._lost_once.add(key)
            again.append(task)
            return None
        verdict = worker_deaths.lost_verdict(f"the Ray actor running it was lost twice: {why}")
        return TaskResult(task, task.get("case"), verdict, f"ray/{slot.index}", elapsed,
                          f"ray/{slot.index}")


def _check_reachable(address: str, timeout: float = 10.0) -> None:
    """Fail at once, in one line, when nothing listens at a ``HOST:PORT`` cluster address
    (Ray itself retries for minutes, printing warnings).  Other forms ("auto", "ray://...")
    are left to Ray."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "/" in address:
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise RayConnectError(f"cannot connect to the Ray cluster at {address}: {e.strerror or e} "
                              "(start one with `ray start --head`; its address is printed "
                              "and kept in /tmp/ray/ray_current_cluster)") from None


def unavailable() -> str | None:
    """Why the ray executor cannot be used here (None: it can)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return RAY_MISSING
    return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:300]
