"""Compare a kernel's outputs with the references: the verdict's numbers.

Rules, per output element:

* the reference is finite and the output is nan/inf → ``nan_inf`` (unless the element is
  inconclusive);
* the reference itself is nan/inf (special-value inputs) → the output must match by IEEE
  semantics: nan where nan, the same infinity where inf;
* otherwise ``ratio = |actual − reference| / bound`` (``bound == 0`` demands bitwise equality:
  ratio 0 when equal, inf when not); the worst ratio over all outputs is reported with its
  element, and ratio > 1 fails.

Elements with an infinite bound are inconclusive: skipped, and the case is ``inconclusive``
when nothing else failed and at least one element could not be judged.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from fuzzharness.verdict import Status
from oracles.bounds import Expected


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
        judged = np.isfinite(exp.bound)
        if not judged.all():
            inconclusive.append(f"{name}: {exp.inconclusive or 'unbounded elements'}")

        ref_finite = np.isfinite(ref)
        bad_nan = judged & ref_finite & ~np.isfinite(act)
        if bad_nan.any():
            idx = [int(i) for i in np.argwhere(bad_nan)[0]]
            return Judgement(
                Status.NAN_INF, float("inf"), float("inf"), name, idx,
                f"{name}{idx} = {float(act[tuple(idx)])!r} where the reference is {float(ref[tuple(idx)])!r}",
            )
        special = judged & ~ref_finite
        ieee_mismatch = special & ~((np.isnan(ref) & np.isnan(act)) | (ref == act))
        if ieee_mismatch.any():
            idx = [int(i) for i in np.argwhere(ieee_mismatch)[0]]
            return Judgement(
                Status.WRONG_RESULT, float("inf"), float("inf"), name, idx,
                f"{name}{idx} = {float(act[tuple(idx)])!r} where IEEE semantics give {float(ref[tuple(idx)])!r}",
            )

        check = judged & ref_finite
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
