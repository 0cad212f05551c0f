"""Per-element error bounds: how far a correct kernel may be from the float64 reference.

The reference ``y`` is computed in float64 by numpy from the inputs *already rounded to the
kernel's input dtypes*, so input rounding is not part of any bound below; only the rounding
the kernel itself performs is.  Every bound is a worst case over all evaluation orders a
legal schedule may choose (any reassociation, rfactor, vectorised or pairwise reduction, FMA
contraction, extra intermediate precision), so that no legal schedule can exceed it.

Reductions (dot products, matmul, conv, sum, mean)
--------------------------------------------------
A reduction computes ``s = Σ_{i=1..k} t_i`` in the accumulation dtype (unit roundoff ``u``),
where each term ``t_i`` is an input or a product of two inputs.  Whatever tree the schedule
uses, every term passes through at most ``k − 1`` additions, plus one rounding for the
product when terms are products, so (Higham, 2nd ed., eq. 3.5 and Lemma 3.1 / Thm 3.1 for
general summation orders)::

    |ŝ − s| ≤ γ_n · Σ|t_i|,     γ_n = n·u / (1 − n·u),   n = k − 1 + [terms are products]

``Σ|t_i|`` is computed in float64 (e.g. ``|A| @ |B|``).  FMA contraction and intermediate
results kept in wider precision only remove roundings, so the bound still holds.  In the
subnormal range the relative model fails; each operation adds at most ``eta`` absolute
error instead (see :mod:`oracles.numerics`), hence the term ``(n + 1)·eta_acc``.

When the accumulator is then stored to an output of another dtype (an fp32 accumulator cast
to fp16, say) one more rounding applies::

    |fl_out(ŝ) − s| ≤ (1 + u_out)·B_acc + u_out·|s| + eta_out

A mean divides by ``k``: one more rounding, ``n += 1``.

The bound is meaningless when ``n·u ≥ 1`` (e.g. more than 2048 fp16 terms): those elements
are reported *inconclusive*, never passed or failed silently; generators should use the
exact-integer input mode there.  It is also meaningless when a partial sum may overflow
(``Σ|t_i|·(1 + γ_n) > max``): inconclusive too.

Exact results
-------------
``max``/``min`` reductions, copies, padding and exact-integer inputs (every partial sum an
integer representable in the accumulation dtype) have bound 0: the kernel must produce the
reference bit for bit.  Integer dtypes are exact with two's-complement wrap-around.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from oracles import numerics


@dataclasses.dataclass
class Expected:
    """The float64 reference for one output and the per-element bound it must meet.

    ``bound`` has the shape of ``value``; 0 means "bitwise equal", ``inf`` marks an element the
    error model cannot judge (``inconclusive`` then says why).  ``model`` names the error
    model, for reports.
    """

    value: np.ndarray
    bound: np.ndarray
    dtype: str
    model: str
    inconclusive: str | None = None

    def __post_init__(self) -> None:
        self.value = np.asarray(self.value, dtype=np.float64)
        self.bound = np.broadcast_to(np.asarray(self.bound, dtype=np.float64), self.value.shape)


def exact(value: np.ndarray, dtype: str, model: str = "exact") -> Expected:
    return Expected(value, np.zeros(np.shape(value)), dtype, model)


def reduction(
    value: np.ndarray,
    abs_sum: np.ndarray,
    k: int,
    *,
    acc_dtype: str,
    out_dtype: str,
    products: bool,
    extra_ops: int = 0,
    model: str = "reduction",
) -> Expected:
    """Bound for a k-term reduction accumulated in ``acc_dtype`` and stored as ``out_dtype``.

    ``products``: each term is a product of two inputs (one more rounding per term).
    ``extra_ops``: further roundings applied to the accumulated value before the store
    (1 for a mean's division, 1 for an added bias, ...).
    """
    if numerics.is_int(acc_dtype):
        return exact(value, out_dtype, model=f"{model}/int-exact")
    acc = numerics.fmt(acc_dtype)
    n = max(k - 1, 0) + (1 if products else 0) + extra_ops
    g = numerics.gamma(n, acc.u)
    abs_sum = np.asarray(abs_sum, dtype=np.float64)
    value = np.asarray(value, dtype=np.float64)
    bound = g * abs_sum + (n + 1) * acc.eta
    reasons = []
    if not np.isfinite(g):
        reasons.append(f"n·u = {n}·2^-{acc.precision} ≥ 1: the {acc_dtype} error model says nothing")
    overflow = abs_sum * (1.0 + (g if np.isfinite(g) else 1.0)) > acc.max
    if out_dtype != acc_dtype:
        out = numerics.fmt(out_dtype)
        bound = (1.0 + out.u) * bound + out.u * np.abs(value) + out.eta
        overflow |= np.abs(value) + bound > out.max
    if np.any(overflow):
        reasons.append("a partial sum may overflow")
    bound = np.where(overflow, np.inf, bound)
    return Expected(value, bound, out_dtype, model, "; ".join(reasons) or None)
