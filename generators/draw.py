"""Deterministic Hypothesis draws outside of a test: the generator's source of randomness.

Every generator in this package takes a ``data`` object and calls ``data.draw(strategy)``,
exactly as inside a Hypothesis test with ``st.data()``.  That buys two things:

* in tests, ``@given(st.data())`` drives the generators and Hypothesis shrinks failures;
* in campaigns, :func:`for_case` gives a ``ConjectureData`` seeded from (campaign seed, case
  index), so the same seed and harness version give the same cases, and the choice sequence
  that produced a case (``data.choices``) can be stored and replayed with :func:`from_choices`
  — which is what the minimizer hands to Hypothesis' shrinker.

Determinism caveat (why a custom provider): Hypothesis' default provider sometimes draws
"constants" harvested from whatever local modules are in ``sys.modules``; the same seed
would then give different cases in a worker, a driver and a replay process.  The provider
below never does.  ``ConjectureData`` is internal API, hence the narrow Hypothesis pin in
pyproject.toml; ``tests/test_determinism.py`` fails if an upgrade changes behaviour.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

from hypothesis.internal.conjecture.data import ConjectureData
from hypothesis.internal.conjecture.providers import HypothesisProvider

MAX_CHOICES = 100_000


class SeededProvider(HypothesisProvider):
    """HypothesisProvider minus the draws that depend on the set of imported modules."""

    def _maybe_draw_constant(self, choice_type, constraints, *, p=0.05):  # noqa: ARG002
        return None


def derive_seed(*parts: Any) -> int:
    """A 64-bit seed from any tuple of plain values (stable across processes and platforms)."""
    text = ":".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def for_case(seed: int, index: int, purpose: str = "case") -> ConjectureData:
    return ConjectureData(
        random=random.Random(derive_seed(purpose, seed, index)),
        provider=SeededProvider,
        max_choices=MAX_CHOICES,
    )


def from_choices(choices: Sequence[Any]) -> ConjectureData:
    """Replay a recorded choice sequence (extra draws beyond it make the data overrun)."""
    return ConjectureData.for_choices(list(choices))


def recorded_choices(data: Any) -> list[Any] | None:
    """The choice sequence behind ``data`` as plain JSON data, when there is one."""
    choices = getattr(data, "choices", None)
    if choices is None:
        return None
    out = []
    for c in choices:
        if isinstance(c, bool | int | float | str):
            out.append(c)
        else:  # bytes: not drawn by our generators, but keep the record JSON-clean
            out.append(repr(c))
    return out


CHANCE_BITS = 10


def chance(data: Any, p: float) -> bool:
    """True with probability ``p`` (to 1/1024), whatever Hypothesis' biases.

    Hypothesis draws bounded integers and floats with extra weight on small and boundary
    values (``floats(0, 1) < 0.1`` holds about 23 % of the time, ``integers(0, 999) < 100``
    about 21 %), which is right for finding edge cases and wrong for a share of cases.
    Fair booleans are fair, so ten of them make a uniform 10-bit number.  It shrinks
    towards 0, i.e. towards False: a shrunk case leaves the optional feature off.
    """
    from hypothesis import strategies as st

    bits = data.draw(st.lists(st.booleans(), min_size=CHANCE_BITS, max_size=CHANCE_BITS))
    value = sum(int(b) << i for i, b in enumerate(bits))
    return value >= round((1.0 - p) * (1 << CHANCE_BITS))
