"""Delta debugging (Zeller & Hildebrandt's ddmin) over any state with removable units.

The state is opaque here: a trace, a list, a case.  ``units(state)`` lists what can be
removed, ``remove(state, chunk)`` returns the state without that chunk (and whatever the
caller decides must go with it — for a schedule trace, every instruction that uses the
removed ones' outputs), or None when the removal is not possible.  ``first_interesting``
receives the candidates of one round *in preference order* and returns the first
interesting one (or None) — it may run them in parallel, which is why a round hands over
all its candidates at once.

Invariants: the returned state is the input state or an interesting state reached by
removals only; when the rounds end without the deadline, the result is 1-minimal — no
single remaining unit can be removed (the last round tries every unit alone).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

S = TypeVar("S")


def split(items: Sequence[Any], n: int) -> list[list[Any]]:
    """``items`` in ``n`` contiguous chunks of nearly equal size (none empty)."""
    n = max(1, min(n, len(items)))
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return [c for c in out if c]


def ddmin(state: S, units: Callable[[S], Sequence[Any]],
          remove: Callable[[S, list[Any]], S | None],
          first_interesting: Callable[[list[S]], S | None],
          should_stop: Callable[[], bool] = lambda: False) -> S:
    n = 2
    while not should_stop():
        us = list(units(state))
        if not us:
            break
        n = min(n, len(us))
        candidates = [c for c in (remove(state, chunk) for chunk in split(us, n)) if c is not None]
        found = first_interesting(candidates) if candidates else None
        if found is not None:
            state = found
            n = max(n - 1, 2)
            continue
        if n >= len(us):
            break
        n = min(2 * n, len(us))
    return state
