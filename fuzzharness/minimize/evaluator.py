"""Run candidate cases in isolated worker processes, in batches, with a cache and a deadline.

Candidates may segfault, abort or hang TVM, so they never run in the minimizing process:
they go to a :class:`~fuzzharness.engine.pool.WorkerPool` (the campaign's own crash-proof
pool: a dead or hung worker becomes a ``crash``/``timeout`` verdict and is replaced).
A batch of candidates is handed to all workers at once, which keeps every worker busy while
a minimization pass tries its alternatives (:meth:`Evaluator.first_interesting`).

Verdicts are cached by case id (a case's content determines its verdict), so a pass that
proposes a candidate another pass already tried costs nothing.  After the deadline no new
candidate starts and candidates still running are abandoned (counted as not interesting).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Verdict
from fuzzharness.engine.pool import WorkerPool

Predicate = Callable[[dict[str, Any] | None, Verdict], bool]


class Evaluator:
    def __init__(self, predicate: Predicate, *, workers: int = 2, timeout: float = 20.0,
                 memory_mb: int = 4096, deadline: float | None = None, pool=None):
        self.predicate = predicate
        self.workers = max(1, workers)
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.deadline = deadline
        self._pool = pool
        self._own_pool = pool is None
        self.cache: dict[str, Verdict] = {}
        self.runs = 0  # candidates actually executed (cache misses)
        self.interesting = 0
        self._next_task = 0

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def pool(self):
        if self._pool is None:

            self._pool = WorkerPool(self.workers, timeout=self.timeout, memory_mb=self.memory_mb)
        return self._pool

    def close(self) -> None:
        if self._pool is not None and self._own_pool:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def time_left(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def out_of_time(self) -> bool:
        return self.time_left() <= 0

    # -- evaluation --------------------------------------------------------------------------
    def verdicts(self, cases: Sequence[Case]) -> list[Verdict | None]:
        """Verdicts of ``cases`` (None for a candidate abandoned at the deadline)."""
        out: list[Verdict | None] = [self.cache.get(c.id) for c in cases]
        todo: dict[str, Case] = {c.id: c for c, v in zip(cases, out, strict=True) if v is None}
        if todo and not self.out_of_time():
            tasks = []
            ids = {}
            for cid, case in todo.items():
                self._next_task += 1
                ids[self._next_task] = cid
                tasks.append({"task": self._next_task, "case": case.to_dict()})
            deadline = self.deadline
            stop = (lambda: time.monotonic() >= deadline) if deadline is not None else (lambda: False)
            abandon = deadline + min(self.timeout, 5.0) if deadline is not None else None
            for r in self.pool.run(tasks, should_stop=stop, abandon_at=abandon):
                self.runs += 1
                self.cache[ids[r.task["task"]]] = r.verdict
            out = [self.cache.get(c.id) for c in cases]
        return out

    def rerun(self, case: Case) -> Verdict | None:
        """Run ``case`` again even if its verdict is cached (flaky failures)."""
        self.cache.pop(case.id, None)
        return self.verdicts([case])[0]

    def is_interesting(self, case: Case, verdict: Verdict | None) -> bool:
        return verdict is not None and bool(self.predicate(case.to_dict(), verdict))

    def first_interesting(self, candidates: Sequence[Case]) -> tuple[int, Case, Verdict] | None:
        """The first candidate (in the given order) that is interesting, or None.

        Candidates run ``workers`` at a time; the scan stops at the first batch that holds an
        interesting one, so earlier (preferred) candidates win and later ones cost nothing.
        """
        seen: set[str] = set()
        unique = [c for c in candidates if not (c.id in seen or seen.add(c.id))]
        step = self.workers
        for start in range(0, len(unique), step):
            if self.out_of_time():
                return None
            batch = unique[start:start + step]
            for case, verdict in zip(batch, self.verdicts(batch), strict=True):
                if self.is_interesting(case, verdict):
                    self.interesting += 1
                    return candidates.index(case), case, verdict
        return None
