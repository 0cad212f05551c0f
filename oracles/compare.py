"""Compare a kernel's outputs with the references: the verdict's numbers.

Rules, per output element:

* the reference itself is nan/inf (special-value inputs) → the output must match by IEEE
  semantics: nan where nan, the same infinity where inf — whatever the bound says;
* the reference is finite and its bound is infinite → the element cannot be judged
  (inconclusive: k·u ≥ 1, possible overflow, an ill-conditioned step);
* the reference is finite, the bound finite and the output nan/inf → ``nan_inf``;
* otherwise ``ratio = |actual − reference| / bound`` (``bound == 0`` demands bitwise equality:
  ratio 0 when equal, inf when not); the worst ratio over all outputs is reported with its
  element, and ratio > 1 fails.

The case is ``inconclusive`` when nothing failed and at least one element could not be
judged.  Every judgement carries the worst ratio and the element where it occurs, also when
the case passes.

:func:`first_bit_difference` compares two runs bit for bit (the metamorphic check against
TVM's unscheduled build): nan equals nan whatever its payload, everything else by bits
(so +0 and −0 differ).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fuzzharness.core.verdict import Status
from fuzzharness.oracles.bounds import Expected


@dataclasses.dataclass
class Judgement:
    status: Status
    ratio: float
    worst_error: float
    worst_output: str | None
    worst_index: list[int] | None
    message: str = ""
    inconclusive: str | None = None


def _as_f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def _index(mask: np.ndarray) -> list[int]:
    return [int(i) for i in np.argwhere(mask)[0]]


def judge(expected: dict[str, Expected], actual: dict[str, np.ndarray]) -> Judgement:
    worst = Judgement(Status.PASS, 0.0, 0.0, None, None)
    inconclusive: list[str] = []
    for name in sorted(expected):
        exp = expected[name]
        act = _as_f64(actual[name])
        if act.shape != exp.value.shape:
            return Judgement(
                Status.WRONG_RESULT, float("inf"), float("inf"), name, None,
                f"{name}: output shape {act.shape} != reference shape {exp.value.shape}",
            )
        ref = exp.value
        ref_finite = np.isfinite(ref)
        bounded = np.isfinite(exp.bound)

        special = ~ref_finite
        ieee_mismatch = special & ~((np.isnan(ref) & np.isnan(act)) | (ref == act))
        if ieee_mismatch.any():
            idx = _index(ieee_mismatch)
            return Judgement(
                Status.WRONG_RESULT, float("inf"), float("inf"), name, idx,
                f"{name}{idx} = {float(act[tuple(idx)])!r} where IEEE semantics give {float(ref[tuple(idx)])!r}",
            )
        unjudged = ref_finite & ~bounded
        if unjudged.any():
            inconclusive.append(
                f"{name}: {int(unjudged.sum())} element(s) unbounded ({exp.inconclusive or 'no error model'})"
            )
        check = ref_finite & bounded
        bad_nan = check & ~np.isfinite(act)
        if bad_nan.any():
            idx = _index(bad_nan)
            return Judgement(
                Status.NAN_INF, float("inf"), float("inf"), name, idx,
                f"{name}{idx} = {float(act[tuple(idx)])!r} where the reference is {float(ref[tuple(idx)])!r}",
            )

        with np.errstate(invalid="ignore"):
            err = np.where(check, np.abs(act - np.where(ref_finite, ref, 0.0)), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(exp.bound > 0, err / exp.bound, np.where(err > 0, np.inf, 0.0))
        ratio = np.where(check, ratio, 0.0)
        if ratio.size == 0:
            continue
        flat = int(np.argmax(ratio))
        r = float(ratio.flat[flat])
        if r > worst.ratio or worst.worst_output is None:
            idx = [int(i) for i in np.unravel_index(flat, ratio.shape)]
            worst = Judgement(Status.PASS, r, float(err.flat[flat]), name, idx)
            worst.message = (
                f"{name}{idx}: got {float(act.flat[flat])!r}, reference {float(ref.flat[flat])!r}, "
                f"|error| {err.flat[flat]:.3g} vs bound {exp.bound.flat[flat]:.3g} ({exp.model})"
            )
    if worst.ratio > 1.0:
        worst.status = Status.WRONG_RESULT
    elif inconclusive:
        worst.status = Status.INCONCLUSIVE
        worst.inconclusive = "; ".join(inconclusive)
    return worst


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def first_bit_difference(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray]
) -> tuple[str, list[int]] | None:
    """The first (output, index) where ``a`` and ``b`` differ bitwise; None when identical."""
    for name in sorted(a):
        x, y = np.ascontiguousarray(a[name]), np.ascontiguousarray(b[name])
        if x.shape != y.shape or x.dtype != y.dtype:
            return name, []
        differ = _bits(x) != _bits(y)
        if x.dtype.kind not in "iub":
            xf, yf = x.astype(np.float64), y.astype(np.float64)
            differ &= ~(np.isnan(xf) & np.isnan(yf))
        if differ.any():
            return name, _index(differ)
    return None
