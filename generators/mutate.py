"""Mutants: a new case drawn from an earlier case's choice sequence, edited.

Feedback fuzzers for TVM (Tzer: coverage-guided IR and pass mutation; Scuzer: schedule
mutators over a corpus of seeds that reached something new) keep the inputs that reached a
new program class and mutate them.  Here an input is a case's recorded choice sequence
(``case.origin["choices"]``, :mod:`fuzzharness.generators.draw`), so a mutation edits that
sequence and the generator draws from the edited one — every mutant is a case the generator
could have drawn anyway (same workloads, same legality rules, same origin fields), only more
likely near what was interesting.  The edits (AFL's havoc on a structured input, as in
Hypothesis' own generate phase):

``tail``       keep a prefix, draw the rest afresh (same workload and first steps, new rest)
``points``     draw 1-3 positions afresh, keep every other choice
``drop``       delete a run of choices (often a schedule step: the later steps move up)
``duplicate``  copy a run of choices elsewhere (a step repeated, or another step's site)
``splice``     a prefix of this case, then a suffix of another corpus case

An edited sequence is replayed choice by choice; a choice the draw at its position does not
accept (another type, out of range: the structure moved) and every draw past its end come
from the seeded provider, so a mutant is always a complete, valid case.  The randomness is
derived from (seed, index) only: a mutation spec plus (seed, index) gives one case, in any
process.  The drawn choices are recorded as for any case, so the minimizer replays and
shrinks a mutant like any other case (it does not need the parent).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from hypothesis.internal.conjecture.choice import choice_permitted
from hypothesis.internal.conjecture.data import ConjectureData

from fuzzharness.generators.draw import MAX_CHOICES, SeededProvider, derive_seed

OPS = ("tail", "points", "drop", "duplicate", "splice")
MAX_RUN = 16  # the longest run of choices drop / duplicate move (a few schedule steps)
_TYPES = {"boolean": bool, "integer": int, "float": float, "string": str}


def plan(rng: random.Random, parent: Sequence[Any], donor: Sequence[Any]) -> dict[str, Any]:
    """Pick an edit and apply it: ``{"op", "base", "redraw"}`` — the edited choice sequence
    and the positions of it to draw afresh."""
    n = len(parent)
    op = rng.choice(OPS) if n >= 2 else "tail"
    redraw: list[int] = []
    if op == "tail":
        base = list(parent[:rng.randrange(1, n)]) if n >= 2 else []
    elif op == "points":
        base = list(parent)
        redraw = sorted(rng.sample(range(n), min(n, rng.randint(1, 3))))
    elif op == "drop":
        a = rng.randrange(n)
        base = list(parent[:a]) + list(parent[a + rng.randint(1, MAX_RUN):])
    elif op == "duplicate":
        a = rng.randrange(n)
        run = list(parent[a:a + rng.randint(1, MAX_RUN)])
        at = rng.randrange(n + 1)
        base = list(parent[:at]) + run + list(parent[at:])
    else:  # splice
        cut = rng.randrange(1, n)
        base = list(parent[:cut]) + list(donor[rng.randrange(len(donor)):] if donor else [])
    return {"op": op, "base": base, "redraw": redraw}


class MutantProvider(SeededProvider):
    """Replays ``base`` by position (a node's index in the ConjectureData), drawing afresh at
    the ``redraw`` positions, where a recorded choice does not fit, and past the end."""

    def __init__(self, conjecturedata, /, *, base: Sequence[Any] = (), redraw: Sequence[int] = ()):
        super().__init__(conjecturedata)
        self._base, self._redraw = list(base), frozenset(redraw)

    def _recorded(self, choice_type: str, constraints: dict[str, Any]) -> tuple[bool, Any]:
        at = len(self._cd.nodes) if self._cd is not None else len(self._base)
        if at >= len(self._base) or at in self._redraw:
            return False, None
        value = self._base[at]
        want = _TYPES[choice_type]
        if type(value) is not want:  # bool is an int: compare exact types
            return False, None
        try:
            return choice_permitted(value, constraints), value
        except Exception:  # noqa: BLE001 - a constraint we cannot check: draw afresh
            return False, None

    def draw_boolean(self, p: float = 0.5) -> bool:
        ok, value = self._recorded("boolean", {"p": p})
        return value if ok else super().draw_boolean(p)

    def draw_integer(self, min_value=None, max_value=None, *, weights=None, shrink_towards=0):
        ok, value = self._recorded("integer", {"min_value": min_value, "max_value": max_value,
                                               "weights": weights, "shrink_towards": shrink_towards})
        if ok:
            return value
        return super().draw_integer(min_value, max_value, weights=weights,
                                    shrink_towards=shrink_towards)

    def draw_float(self, **constraints):
        ok, value = self._recorded("float", constraints)
        return value if ok else super().draw_float(**constraints)

    def draw_string(self, intervals, **constraints):
        ok, value = self._recorded("string", {"intervals": intervals, **constraints})
        return value if ok else super().draw_string(intervals, **constraints)


def mutant_data(seed: int, index: int, mutation: dict[str, Any]) -> ConjectureData:
    """The ConjectureData case ``index`` of seed ``seed`` draws from when it is the mutant
    ``mutation`` (:func:`plan`'s result); fresh draws are seeded from (seed, index)."""
    return ConjectureData(
        random=random.Random(derive_seed("mutant", seed, index)),
        provider=MutantProvider,
        provider_kw={"base": mutation.get("base") or [], "redraw": mutation.get("redraw") or []},
        max_choices=MAX_CHOICES,
    )
