"""The worker pool of a ``pytest -m differential`` session, pulled from the pytest thread."""

from __future__ import annotations

from typing import Any

from fuzzharness.differential.plan import State
from fuzzharness.engine.pool import WorkerPool


class Runner:
    """Runs the queued tasks in a worker pool; :meth:`result` waits for one of them.

    The pool is started on the first request and pulled from the pytest thread: while a test
    waits for its own case, the other workers run the next ones, and results that arrive
    early are kept until their test asks.
    """

    def __init__(self, state: State, tasks: list[dict[str, Any]]):
        self.state = state
        self.tasks = {t["task"]: t for t in tasks}
        self.order = tasks
        self.results: dict[str, Any] = {}
        self.pool = None
        self.stream = None

    def result(self, task_id: str):
        if task_id not in self.tasks:
            raise KeyError(task_id)
        if self.stream is None:
            self.pool = WorkerPool(min(self.state.workers, max(1, len(self.order))),
                                   timeout=self.state.timeout, memory_mb=4096,
                                   log_dir=self.state.out / "logs")
            self.stream = self.pool.run(iter(self.order))
        while task_id not in self.results:
            r = next(self.stream, None)
            if r is None:
                raise RuntimeError(f"the worker pool ended without a result for {task_id}")
            self.results[r.task["task"]] = r
        return self.results.pop(task_id)

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
        if self.pool is not None:
            self.pool.close()
