"""Feedback: a corpus of the cases that built something new, and mutants of them.

A share ``generation.feedback`` of a campaign's cases are mutants
(:mod:`fuzzharness.generators.mutate`) of earlier cases that built a program class no case
before them had built (Tzer and Scuzer keep the inputs that reached something new; AFL
keeps those that hit a new edge).  The classes of a case are read from its stored case,
i.e. from what generation built, never from how the case ran:

* the reach classes of its accepted schedule steps (``method @ site class``,
  :mod:`fuzzharness.campaign.reach`), and the workload × primitive pairs they are in;
* consecutive pairs of its accepted primitives (``split → vectorize``): the order of steps
  is where schedule bugs live;
* its workload/dtype, its compiler options, and a graph case's operators and their pairs.

**Reproducible by construction.**  Case ``i`` mutates the corpus of the cases with index
below :func:`checkpoint` ``(i)`` — a fixed index at least ``generation.feedback_period``
cases back (100) — taken in index order.  Whether case ``i`` is a mutant, of which entry, and how, is drawn from a
generator seeded by (seed, ``i``).  So the corpus is a function of (seed, index): the same in
any worker count, across ``--resume``, and in any process that reads the campaign database
(a lane re-drawing a mutant whose schedule draw failed).  The driver hands out case ``i``
only once every case below its checkpoint is stored (with a lag of a period it rarely has
to wait).  Classes come from the case, not its verdict, because a verdict can
depend on the run (a timeout, a worker damaged by an earlier case), and one such flip would
change every later mutant.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass
from typing import Any

from fuzzharness.campaign.reach import step_reach
from fuzzharness.generators.draw import derive_seed
from fuzzharness.generators.mutate import plan


def checkpoint(index: int, period: int) -> int:
    """Case ``index`` mutates the corpus of the cases below this index (0: no corpus yet):
    a multiple of ``period`` (``generation.feedback_period``) at least ``period`` back."""
    return max(0, (index // period - 1) * period)


def case_classes(case: dict[str, Any]) -> set[str]:
    """The program classes a stored case built (see the module docstring)."""
    origin = case.get("origin") or {}
    workload = (case.get("workload") or {}).get("name", "?")
    out = {f"workload {workload}/{origin.get('dtype', '?')}"}
    out |= {f"option {o}" for o in origin.get("options") or []}
    ops = list(origin.get("ops") or [])
    out |= {f"graph_op {op}" for op in ops}
    out |= {f"graph_op {a} → {b}" for a, b in zip(ops, ops[1:], strict=False)}
    accepted = [s for s in origin.get("steps") or [] if s.get("outcome") == "accepted"]
    names = [s["primitive"] for s in accepted]
    for step in accepted:
        for reach in step_reach(step.get("calls") or [], step.get("site") or [], step["primitive"]):
            out.add(f"reach {reach}")
        out.add(f"{workload} × {step['primitive']}")
    out |= {f"steps {a} → {b}" for a, b in zip(names, names[1:], strict=False)}
    return out


@dataclass(frozen=True)
class Entry:
    index: int
    choices: tuple[Any, ...]
    new: tuple[str, ...]  # the classes no earlier case had built


class Feedback:
    """The corpus of one campaign, read from its database as far as it is needed."""

    def __init__(self, db, seed: int, fraction: float, period: int = 100):
        self.db, self.seed, self.fraction, self.period = db, seed, fraction, period
        self.entries: list[Entry] = []
        self._seen: set[str] = set()
        self._upto = 0  # every case below this index has been read

    def ready(self, index: int) -> bool:
        """Whether case ``index``'s corpus can be read now (every case below its checkpoint
        is stored)."""
        c = checkpoint(index, self.period)
        if self.fraction <= 0 or c <= self._upto:  # off: nothing to wait for (any executor)
            return True
        if self.db.count(below=c) < c:
            return False
        self._read_to(c)
        return True

    def corpus(self, index: int) -> list[Entry]:
        """The entries case ``index`` may mutate (call :meth:`ready` first)."""
        c = checkpoint(index, self.period)
        if c > self._upto:
            self._read_to(c)
        # entries are in index order: those below the checkpoint
        return self.entries[:bisect.bisect_left([e.index for e in self.entries], c)]

    def mutation_for(self, index: int) -> dict[str, Any] | None:
        """The mutation case ``index`` is, or None (a case drawn afresh)."""
        if self.fraction <= 0 or checkpoint(index, self.period) == 0:
            return None
        rng = random.Random(derive_seed("feedback", self.seed, index))
        if rng.random() >= self.fraction:
            return None
        corpus = self.corpus(index)
        if not corpus:
            return None
        parent, donor = corpus[rng.randrange(len(corpus))], corpus[rng.randrange(len(corpus))]
        return {"parent": parent.index, **plan(rng, parent.choices, donor.choices)}

    def _read_to(self, c: int) -> None:
        """Read the stored cases in ``[_upto, c)``, in index order."""
        for row in self.db.results(self._upto, c):
            case = row["case"]
            choices = ((case or {}).get("origin") or {}).get("choices")
            if not case or not choices:
                continue
            new = case_classes(case) - self._seen
            if new:
                self._seen |= new
                self.entries.append(Entry(row["idx"], tuple(choices), tuple(sorted(new))))
        self._upto = max(self._upto, c)
