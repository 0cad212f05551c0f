"""Input distributions: deterministic arrays from (distribution, seed), rounded to the kernel dtype.

An input is drawn in float64, then rounded once to the kernel's input dtype; the rounded
values are what both the kernel and the float64 reference see.  Each workload states, per
input, a magnitude ``scale`` that keeps every intermediate of the float modes finite (no fp16
overflow unless a case asks for it) and, for the exact-integer mode, the largest integer
magnitude ``int_max`` for which every partial sum stays exactly representable.

Distributions (registered by name; the case stores the name and the seed):

``uniform``       U(−scale, scale)
``normal``        N(0, (scale/4)²), clipped to ±scale
``cancellation``  mixed signs in near-cancelling pairs: x and −x·(1 + small), so sums cancel
``wide_range``    log-uniform magnitudes over 2^-12·scale … scale, random signs
``small_ints``    integers in [−int_max, int_max] — the exact-integer mode (oracle ``exact``)
``ones``, ``tiny_ints``  (the minimizer's, never drawn) all ones; integers in [−4, 4]
``special_values`` uniform, with 1 to 3 elements per input replaced by the IEEE special
                  values the input allows (``InputSpec.specials``: inf, −inf, nan) — judged with
                  IEEE semantics where the reference is not finite

Undefined behaviour is never drawn: every distribution stays within ±scale (the workload's
worst-case-safe magnitude), integer inputs are rounded and clipped to their dtype's range, and
the symmetric ranges never produce an int8 −128.

Streams: input ``i`` of a case uses ``numpy.random.default_rng([seed, i])`` (PCG64), stable
for a given numpy version.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from fuzzharness.core.registry import Registry
from fuzzharness.oracles import numerics


@dataclasses.dataclass(frozen=True)
class ExactSet:
    """How to draw an input of the *second run* (:func:`exact_inputs`): integers in
    ``[−max, max]``, each nonzero with probability ``density``, times ``scale`` (a power of two).

    Chosen by the workload so that every partial sum of the program's reductions is exact in
    the *declared accumulator* — not necessarily in a narrower one, so that an accumulator a
    miscompilation narrowed shows — and the result stays inside the output dtype's range.
    Whether a partial sum really is exact is not taken on trust: the same-order emulation
    (:mod:`fuzzharness.oracles.emulate`) certifies it element by element.
    """

    max: int
    scale: float = 1.0
    density: float = 1.0


@dataclasses.dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: float = 1.0  # max |x| in the float modes
    int_max: int = 0  # max |x| in the exact-integer mode (0: the mode is unavailable)
    specials: tuple[str, ...] = ()  # IEEE special values this input may carry ("inf", "-inf", "nan")
    exact: ExactSet | None = None  # the second run's inputs (None: integers up to int_max)


Distribution = Callable[[np.random.Generator, InputSpec], np.ndarray]
distributions: Registry[Distribution] = Registry("input distribution")

EXACT_DISTRIBUTIONS = frozenset({"small_ints"})  # drawn by generation; see also tiny_ints
#: what float-mode cases draw from, in this order (generation draws an index into it)
FLOAT_DISTRIBUTIONS = ("uniform", "normal", "cancellation", "wide_range")


@distributions.register("uniform")
def uniform(rng: np.random.Generator, spec: InputSpec) -> np.ndarray:
    return rng.uniform(-spec.scale, spec.scale, spec.shape)


@distributions.register("normal")
def normal(rng: np.random.Generator, spec: InputSpec) -> np.ndarray:
    return np.clip(rng.normal(0.0, spec.scale / 4, spec.shape), -spec.scale, spec.scale)


@distributions.register("cancellation")
def cancellation(rng: np.random.Generator, spec: InputSpec) -> np.ndarray:
    base = rng.uniform(0.5, 1.0, spec.shape) * spec.scale
    flat = base.reshape(-1)
    # every odd element nearly cancels its even neighbour along the flattened array
    flat[1::2] = -flat[0 : flat.size - flat.size % 2 : 2] * (1 + rng.uniform(-1e-3, 1e-3, flat.size // 2))
    return flat.reshape(spec.shape) * rng.choice([-1.0, 1.0])


@distributions.register("wide_range")
def wide_range(rng: np.random.Generator, spec: InputSpec) -> np.ndarray:
    mag = spec.scale * np.exp2(rng.uniform(-12.0, 0.0, spec.shape))
    return mag * rng.choice([-1.0, 1.0], spec.shape)


@distributions.register("small_ints")
def small_ints(rng: np.random.Generator, spec: InputSpec) -> np.ndarray:
    if spec.int_max <= 0:
        raise ValueError(f"input {spec.name}: exact-integer mode unavailable for this case")
    return rng.integers(-spec.int_max, spec.int_max, spec.shape, endpoint=True).astype(np.float64)


@distributions.register("special_values")
def special_values(rng: np.random.Generator, spec: InputSpec) -> np.ndarray:
    x = rng.uniform(-spec.scale, spec.scale, spec.shape)
    if not spec.specials or x.size == 0:
        return x
    flat = x.reshape(-1)
    # A handful, not a fraction: one special poisons every output it reaches through a
    # reduction, and with a few percent of a K=1000 dot product every output would be nan —
    # IEEE semantics checked, but nothing else (a wrong column hides behind nan everywhere).
    count = int(rng.integers(1, 4))
    where = rng.choice(flat.size, size=min(count, flat.size), replace=False)
    values = np.array([float(v) for v in spec.specials])
    flat[where] = rng.choice(values, size=where.size)
    return flat.reshape(spec.shape)


def make_inputs(specs: list[InputSpec], distribution: str, seed: int) -> dict[str, np.ndarray]:
    """Arrays in the kernel's dtypes, keyed by parameter name."""
    dist = distributions[distribution]
    out = {}
    for i, spec in enumerate(specs):
        x = dist(np.random.default_rng([seed, i]), spec)
        if numerics.is_int(spec.dtype):
            lo, hi = numerics.int_range(spec.dtype)
            x = np.clip(np.rint(x), -hi, hi) if lo < 0 else np.clip(np.rint(x), lo, hi)
        out[spec.name] = numerics.round_to(x, spec.dtype)
    return out


# The minimizer's simplest inputs (fuzzharness/minimize/passes.py): every element 1.  Never
# drawn by generation (not in the draws of generators/cases.py), so registering it changes no
# campaign; with the exact-integer oracle it needs ``int_max ≥ 1`` like ``small_ints``.
@distributions.register("ones")
def ones(rng: np.random.Generator, spec: InputSpec) -> np.ndarray:  # noqa: ARG001
    return np.ones(spec.shape)


#: the largest magnitude of ``tiny_ints``: values a maintainer reads at a glance
TINY_INT = 4


# The minimizer's next-simplest inputs, after ``ones``: integers in [−4, 4] (or ±int_max when
# that is smaller), so a repro shows "got -0.75, reference 0" rather than seven-digit values.
# Never drawn by generation, like ``ones``; exact-integer mode, like ``small_ints``.
@distributions.register("tiny_ints")
def tiny_ints(rng: np.random.Generator, spec: InputSpec) -> np.ndarray:
    if spec.int_max <= 0:
        raise ValueError(f"input {spec.name}: exact-integer mode unavailable for this case")
    m = min(spec.int_max, TINY_INT)
    return rng.integers(-m, m, spec.shape, endpoint=True).astype(np.float64)


def exact_values(rng: np.random.Generator, spec: InputSpec) -> np.ndarray | None:
    """One input of the second run (see :class:`ExactSet`), rounded to the input dtype; None
    when the input has no exact set (neither ``exact`` nor ``int_max``)."""
    es = spec.exact or (ExactSet(spec.int_max) if spec.int_max > 0 else None)
    if es is None or es.max <= 0:
        return None
    x = rng.integers(-es.max, es.max, spec.shape, endpoint=True).astype(np.float64)
    if es.density < 1.0:
        x = np.where(rng.random(spec.shape) < es.density, np.where(x == 0, 1.0, x), 0.0)
    return numerics.round_to(x * es.scale, spec.dtype)
