"""Per-element error bounds: how far a correct kernel may be from the float64 reference.

The reference ``y`` is computed in float64 by numpy from the inputs *already rounded to the
kernel's input dtypes*, so input rounding is not part of any bound below; only the rounding
the kernel itself performs is.  Every bound is a worst case over all evaluation orders a
legal schedule may choose (any reassociation, rfactor, vectorised or pairwise reduction, FMA
contraction, extra intermediate precision), so that no legal schedule can exceed it.

Notation: ``u`` is the per-operation unit roundoff of the dtype an operation is computed in,
as TVM lowers it (:func:`fuzzharness.oracles.numerics.op_u`: ``2^-p``, plus double rounding through
float32 for float16/bfloat16); ``eta`` the absolute error of one operation in the subnormal
range; ``γ_n(u) = n·u / (1 − n·u)`` (Higham, *Accuracy and Stability of Numerical Algorithms*,
2nd ed., Lemma 3.1), infinite when ``n·u ≥ 1``.

The reference's own error
-------------------------
The kernel's output ``ŷ`` is compared with the float64 value ``y64``, not with the exact
``y``: ``|ŷ − y64| ≤ |ŷ − y| + |y − y64|``.  numpy's evaluation obeys the same error model
with ``u = 2^-53`` (and ≤ 1 ulp = 2·2^-53 for ``exp``/``tanh``), and every bound below is
monotone and superadditive in ``u`` (``γ_n(a) + γ_n(b) ≤ γ_n(a + b)``), so a single bound
evaluated with ``u + 2^-53`` (transcendentals: ``+ 2·2^-53``) covers both errors.

Reductions (dot products, matmul, conv, sum, mean, average pooling)
-------------------------------------------------------------------
A reduction computes ``s = Σ_{i=1..k} t_i`` in the accumulation dtype, where each term
``t_i`` is an input or a product of two inputs.  Whatever tree the schedule uses, every term
passes through at most ``k − 1`` additions, plus one rounding for the product when terms are
products, so (Higham eq. 3.5 and Lemma 3.1 / Thm 3.1 for general summation orders)::

    |ŝ − s| ≤ γ_n · Σ|t_i|,     n = k − 1 + [terms are products]

``Σ|t_i|`` is computed in float64 (e.g. ``|A| @ |B|``).  FMA contraction and intermediate
results kept in wider precision only remove roundings, so the bound still holds.  In the
subnormal range the relative model fails; each operation adds at most ``eta`` absolute
error instead, hence the term ``(n + 1)·eta``.  Terms that are themselves computed
(``Σ t̂_i`` with ``|t̂_i − t_i| ≤ e_i``, e.g. softmax's exponentials) add ``Σ e_i`` and use
``Σ(|t_i| + e_i)`` in place of ``Σ|t_i|`` (:func:`reduce_sum`).

When the accumulator is stored to an output of another dtype (an fp32 accumulator cast to
fp16, say) one more rounding applies (see *cast* below).  A mean divides by ``k`` (the
constant as the program writes it, rounded to its dtype): one more division (see *div*).

The bound is meaningless when ``n·u ≥ 1`` (e.g. more than 2048 fp16 terms): those elements
are reported *inconclusive*, never passed or failed silently; generators use the
exact-integer input mode there.  It is also meaningless when a partial sum may overflow
(``Σ|t_i|·(1 + γ_n) > max``): inconclusive too.

Elementwise arithmetic: a running error bound (:class:`Approx`)
----------------------------------------------------------------
Every computed quantity carries its float64 value ``x`` and a bound ``e`` on ``|x̂ − x|``
(Wilkinson's running error analysis, Higham §3.3, but with rigorous rather than first-order
terms).  For an operation computed in a dtype with unit roundoff ``u``::

    x ± y        e_x + e_y + u·(|x ± y| + e_x + e_y)     (subnormal sums are exact: no eta)
    x · y        e' + u·(|xy| + e') + eta,   e' = |x|·e_y + |y|·e_x + e_x·e_y
    x / y        e' + u·(|x/y| + e') + eta,  e' = (|x|·e_y + |y|·e_x) / (|y|·(|y| − e_y));
                 unbounded where |y| ≤ e_y (the divisor may be 0)
    max, min     max(e_x, e_y)   (exact operations, 1-Lipschitz in the ∞-norm); relu = max(x, 0)
    −x, |x|      e_x             (exact)
    cast to d    e_x + u_d·(|x| + e_x) + eta_d when d is narrower; exact when it is wider
    sqrt         e' + u·(√x + e'),  e' = min(√e_x, e_x/√x)   (|√a − √b| ≤ √|a − b|);
                 unbounded where x − e_x < 0
    rsqrt        TVM lowers ``rsqrt(x)`` to ``1 / sqrt(x)``: two roundings, relative
                 (1 + u)/(1 − u) − 1; propagated error e' = e_x / (2·(x − e_x)^{3/2}) by the
                 mean value theorem; unbounded where x − e_x ≤ 0
    exp          e' = exp(x)·(exp(e_x) − 1)  (exp(x̂)/exp(x) ∈ [e^{−e_x}, e^{e_x}]), plus the
                 implementation's relative error r·(exp(x) + e') + eta, r = :func:`fuzzharness.oracles.
                 numerics.func_rel` (libm's expf within 1 float32 ulp, then the final rounding)
    sigmoid      TVM lowers it to ``1 / (1 + exp(−x))``: with ê = e(1 + ε1), |ε1| ≤ r, the sum
                 and the division rounding once each, σ̂ = σ·(1 + ε3)/((1 + ε1')(1 + ε2)) with
                 |ε1'| ≤ r (since e/(1 + e) ≤ 1), so the relative error is at most
                 (1 + u)/((1 − r)(1 − u)) − 1; σ is 1/4-Lipschitz: e' = min(e_x/4, 1).  Where
                 exp(−x̂) may overflow (−x̂ > ln(max) − 2r) the kernel returns 0: error ≤ σ + e'.
    tanh         TVM lowers it to (1 − E)/(1 + E), E = exp(−2x) for x ≥ 0 (mirrored for x < 0;
                 2x is exact).  With E ∈ (0, 1]: |N̂ − N| ≤ r + u, |D̂ − D| ≤ r + u(2 + r),
                 D̂ ≥ 1 − u, N ≤ 1 ≤ D, hence |N̂/D̂ − N/D| ≤ (2r + 3u + ur)/(1 − u) and after
                 the division's rounding an *absolute* error of (1 + u)(2r + 3u + ur)/(1 − u)
                 + u·(|tanh x| + e'), e' = min(e_x, 2) (tanh is 1-Lipschitz).  Near 0 that is
                 far more than one ulp: TVM's formula cancels there (seen, left alone).

    erf          TVM lowers ``erf`` to libm's ``erff`` (float32; narrower dtypes are cast to
                 float32 by the program, e.g. ``gelu``).  erf is 2/√π-Lipschitz and bounded by 1:
                 e' = min(2/√π·e_x, 2); the implementation adds r·(|erf x| + e') with r =
                 :func:`fuzzharness.oracles.numerics.func_rel` (within ``LIBM_ULPS`` float32 ulps, like
                 ``expf``; measured ≤ 0.93 ulp over 8·10⁷ samples), plus 2·eta for a subnormal
                 result (one subnormal ulp).

Bilinear reductions of computed operands (:func:`bilinear`)
-----------------------------------------------------------
A matmul or convolution whose operands are themselves computed (``|x̂_i − x_i| ≤ e_x``,
``|ŷ_i − y_i| ≤ e_y``) sums ``k`` products ``fl(x̂_i·ŷ_i)``.  One product is off by at most
``E_i = e'_i + u·(|x_i y_i| + e'_i) + eta`` with ``e'_i = |x_i|·e_y + |y_i|·e_x + e_x·e_y``
(the *mul* rule), and a sum of ``k`` computed terms by ``Σ E_i + γ_{k−1}·Σ(|t_i| + E_i)``
(the *reduction* rule).  With ``A = Σ|x_i||y_i|`` and ``P = Σ e'_i`` — both bilinear forms
evaluated in float64 by the caller's ``f`` (``f(|x|, e_y) + f(e_x, |y|) + f(e_x, e_y)``) — the
total is ``P + u(A + P) + k·eta + γ_{k−1}·((1 + u)(A + P) + k·eta)``.  For exact operands
(``P = 0``) that is at most the dot-product bound ``γ_k·A + (k + 1)·eta`` above.

Any result whose magnitude plus bound exceeds the dtype's largest finite value may overflow:
unbounded (inconclusive).  Integer dtypes have ``u = eta = 0``: every operation is exact.

Conditioning (softmax, layer norm, mean)
----------------------------------------
Softmax and layer norm are bounded by evaluating the table above along the program's own
formula (max, subtract, exp, sum, divide; mean, centred squares, rsqrt(var + eps), scale and
shift), so their conditioning enters automatically: the sum under the softmax divisor and
the variance under ``rsqrt`` carry their accumulated error, and a variance that cannot be
told from zero within its error makes the element unbounded (inconclusive), never a failure.

Exact results
-------------
``max``/``min`` reductions, argmax/argmin (value and index, ties to the smallest index), max
pooling, copies and padding have bound 0: the kernel must produce the reference bit for bit.
Integer dtypes are exact with two's-complement wrap-around (:func:`fuzzharness.oracles.numerics.wrap_int`);
TVM emits ``add nsw`` (signed overflow is undefined behaviour in LLVM), so inputs keep every
partial sum within range and the wrap is never exercised — a result that only wrapped would
still be reported exactly.  In the exact-integer input mode every intermediate is an integer
representable in its dtype, at most one final correctly rounded operation follows (a mean's
or an average pool's division), and the reference is that correctly rounded value
(:func:`exact_mode`): bound 0.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from fuzzharness.oracles import numerics, target_math
from fuzzharness.oracles.numerics import U64

#: the bounds are themselves computed in float64; this factor absorbs their own rounding
BOUND_SLACK = 1.0 + 2.0**-40


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
    """A result that must match bit for bit: the exact value stored in ``dtype`` (integers
    wrap; floats round once, e.g. a float32 lowest value stored to bfloat16 is −inf)."""
    value = np.asarray(value, dtype=np.float64)
    if numerics.is_int(dtype):
        value = np.where(np.isfinite(value), numerics.wrap_int(np.nan_to_num(value), dtype), value)
    else:  # a no-op for values of the dtype; the correctly rounded store otherwise
        value = numerics.round_to(value, dtype).astype(np.float64)
    return Expected(value, np.zeros(np.shape(value)), dtype, model)


def exact_mode(expected: Expected) -> Expected:
    """The exact-integer input mode: the correctly rounded exact value, bound 0.

    Valid only for programs in which, with the mode's inputs, every intermediate is an integer
    exactly representable in its dtype and at most one correctly rounded operation follows
    (see the module docstring); workloads offer the mode only then.
    """
    value = expected.value
    if numerics.is_int(expected.dtype):
        value = numerics.wrap_int(value, expected.dtype)
    else:
        value = numerics.round_to(value, expected.dtype).astype(np.float64)
    return Expected(value, np.zeros(value.shape), expected.dtype, expected.model + "/exact-int")


# -- the running error bound ---------------------------------------------------------------


@dataclasses.dataclass
class Approx:
    """A computed quantity: float64 ``value`` of the exact result, ``err`` ≥ |computed − value|.

    ``dtype`` is the dtype the kernel holds it in; ``notes`` says why some element became
    unbounded (``err`` infinite although ``value`` is finite).
    """

    value: np.ndarray
    err: np.ndarray
    dtype: str
    notes: tuple[str, ...] = ()

    @classmethod
    def exact(cls, x: np.ndarray, dtype: str) -> Approx:
        x = np.asarray(x, dtype=np.float64)
        return cls(x, np.zeros(x.shape), dtype)


def _u(dtype: str) -> float:
    return 0.0 if numerics.is_int(dtype) else numerics.op_u(dtype) + U64


def _eta(dtype: str) -> float:
    return 0.0 if numerics.is_int(dtype) else target_math.eta(dtype, numerics.fmt(dtype).eta)


def _u_op(kind: str, dtype: str) -> float:
    """Relative error of a division or square root: correctly rounded on llvm, the target's
    documented ulps elsewhere (:mod:`fuzzharness.oracles.target_math`)."""
    return 0.0 if numerics.is_int(dtype) else target_math.op_rel(kind, dtype) + U64


def _max(dtype: str) -> float:
    return float(numerics.int_range(dtype)[1]) if numerics.is_int(dtype) else numerics.fmt(dtype).max


def _finish(value, err, dtype: str, notes: tuple[str, ...], why: str | None = None,
            where=None) -> Approx:
    """Mark overflow-prone and non-finite bounds as unbounded; record why.

    ``why`` names the reason for the elements flagged in ``where`` (the op's own failure:
    a divisor within its error of 0, n·u ≥ 1, ...); an unbounded input error propagates
    without a new note.
    """
    with np.errstate(all="ignore"):
        value = np.asarray(value, dtype=np.float64)
        err = np.asarray(err, dtype=np.float64)
        err = np.where(np.isnan(err), np.inf, err)
        overflow = np.isfinite(err) & (np.abs(value) + err > _max(dtype))
        err = np.where(overflow, np.inf, err)
    finite = np.isfinite(value)
    reasons = []
    if why and where is not None and np.any(finite & np.broadcast_to(where, finite.shape)):
        reasons.append(why)
    if np.any(finite & overflow):
        reasons.append(f"a {dtype} result may overflow")
    notes = (*notes, *[r for r in reasons if r not in notes])
    return Approx(value, err, dtype, notes)


def _notes(*xs: Approx) -> tuple[str, ...]:
    out: list[str] = []
    for x in xs:
        out += [n for n in x.notes if n not in out]
    return tuple(out)


def const(c: float, dtype: str) -> Approx:
    """A literal as the program writes it: rounded to ``dtype`` (``T.bfloat16(1021)`` is 1020)."""
    v = float(numerics.round_to(np.float64(c), dtype).astype(np.float64))
    return Approx(np.asarray(v), np.zeros(()), dtype)


def cast(a: Approx, dtype: str) -> Approx:
    if dtype == a.dtype:
        return a
    if numerics.is_int(dtype):
        return Approx(a.value, a.err, dtype, a.notes)
    to = numerics.fmt(dtype)
    if numerics.is_int(a.dtype):
        widening = bool(np.all(np.abs(a.value) <= to.max_exact_int))
    else:
        src = numerics.fmt(a.dtype)
        widening = to.precision >= src.precision and to.emin <= src.emin and to.max >= src.max
    if widening:
        return Approx(a.value, a.err, dtype, a.notes)
    u = _u(dtype)
    with np.errstate(all="ignore"):
        err = a.err + u * (np.abs(a.value) + a.err) + _eta(dtype)
    return _finish(a.value, err, dtype, a.notes)


def add(a: Approx, b: Approx, dtype: str, sign: float = 1.0) -> Approx:
    with np.errstate(all="ignore"):
        v = a.value + sign * b.value
        e0 = a.err + b.err
        err = e0 + _u(dtype) * (np.abs(v) + e0)
    return _finish(v, err, dtype, _notes(a, b))


def sub(a: Approx, b: Approx, dtype: str) -> Approx:
    return add(a, b, dtype, sign=-1.0)


def mul(a: Approx, b: Approx, dtype: str) -> Approx:
    with np.errstate(all="ignore"):
        v = a.value * b.value
        e0 = np.abs(a.value) * b.err + np.abs(b.value) * a.err + a.err * b.err
        e0 = np.where((a.err == 0) & (b.err == 0), 0.0, e0)  # 0·inf never arises from exact inputs
        err = e0 + _u(dtype) * (np.abs(v) + e0) + _eta(dtype)
    return _finish(v, err, dtype, _notes(a, b))


def div(a: Approx, b: Approx, dtype: str) -> Approx:
    with np.errstate(all="ignore"):
        v = a.value / b.value
        ay, ey = np.abs(b.value), b.err
        e0 = (np.abs(a.value) * ey + ay * a.err) / (ay * (ay - ey))
        e0 = np.where((a.err == 0) & (ey == 0), 0.0, e0)
        bad = ay <= ey
        e0 = np.where(bad, np.inf, e0)
        err = e0 + _u_op("div", dtype) * (np.abs(v) + e0) + _eta(dtype)
    return _finish(v, err, dtype, _notes(a, b), "a divisor cannot be told from 0 within its error",
                   bad)


def neg(a: Approx) -> Approx:
    return Approx(-a.value, a.err, a.dtype, a.notes)


def absolute(a: Approx) -> Approx:
    return Approx(np.abs(a.value), a.err, a.dtype, a.notes)


def maximum(a: Approx, b: Approx, dtype: str) -> Approx:
    return Approx(np.maximum(a.value, b.value), np.maximum(a.err, b.err), dtype, _notes(a, b))


def minimum(a: Approx, b: Approx, dtype: str) -> Approx:
    return Approx(np.minimum(a.value, b.value), np.maximum(a.err, b.err), dtype, _notes(a, b))


def relu(a: Approx) -> Approx:
    return maximum(a, const(0.0, a.dtype), a.dtype)


def exp(a: Approx, dtype: str) -> Approx:
    r = target_math.func_rel("exp", dtype, np.abs(a.value) + a.err) + 2 * U64
    with np.errstate(all="ignore"):
        v = np.exp(a.value)
        e0 = np.where(a.err == 0, 0.0, v * np.expm1(a.err))
        err = e0 + r * (v + e0) + _eta(dtype)
    return _finish(v, err, dtype, a.notes)


def sigmoid(a: Approx, dtype: str) -> Approx:
    r = target_math.func_rel("exp", dtype, np.abs(a.value) + a.err) + 2 * U64
    u = _u(dtype)
    rel = (1 + _u_op("div", dtype)) / ((1 - r) * (1 - u)) - 1
    with np.errstate(all="ignore"):
        v = 1.0 / (1.0 + np.exp(-a.value))
        e0 = np.minimum(a.err / 4, 1.0)
        err = e0 + rel * (v + e0) + _eta(dtype)
        may_overflow = -(a.value - a.err) > math.log(_max(dtype)) - 2 * r
        err = np.where(may_overflow, np.maximum(err, v + e0 + _eta(dtype)), err)
    return _finish(v, err, dtype, a.notes)


def tanh(a: Approx, dtype: str) -> Approx:
    if target_math.library("tanh"):  # CUDA's tanhf/htanh: a relative error, no cancellation
        r = target_math.func_rel("tanh", dtype) + 2 * U64
        with np.errstate(all="ignore"):
            v = np.tanh(a.value)
            e0 = np.minimum(a.err, 2.0)
            err = e0 + r * (np.abs(v) + e0) + _eta(dtype)
        return _finish(v, err, dtype, a.notes)
    r = numerics.func_rel(dtype) + 2 * U64
    u = _u(dtype)
    impl = (1 + u) * (2 * r + 3 * u + u * r) / (1 - u)
    with np.errstate(all="ignore"):
        v = np.tanh(a.value)
        e0 = np.minimum(a.err, 2.0)
        err = e0 + impl + u * (np.abs(v) + e0) + _eta(dtype)
    return _finish(v, err, dtype, a.notes)


def sqrt(a: Approx, dtype: str) -> Approx:
    with np.errstate(all="ignore"):
        v = np.sqrt(a.value)
        e0 = np.where(a.value > 0, np.minimum(np.sqrt(a.err), a.err / np.sqrt(a.value)), np.sqrt(a.err))
        err = e0 + _u_op("sqrt", dtype) * (v + e0) + _eta(dtype)
        bad = a.value - a.err < 0
        err = np.where(bad, np.inf, err)
    return _finish(v, err, dtype, a.notes, "sqrt of a value that cannot be told from 0", bad)


def rsqrt(a: Approx, dtype: str) -> Approx:
    rel = (1 + _u_op("div", dtype)) / (1 - _u_op("sqrt", dtype)) - 1
    if target_math.library("rsqrt"):  # CUDA's rsqrtf, or 1/sqrtf under fast math: the larger
        rel = max(rel, target_math.func_rel("rsqrt", dtype) + U64)
    with np.errstate(all="ignore"):
        lo = a.value - a.err
        v = 1.0 / np.sqrt(a.value)
        e0 = np.where(a.err == 0, 0.0, a.err / (2 * lo**1.5))
        err = e0 + rel * (1.0 / np.sqrt(lo)) + _eta(dtype)
        bad = lo <= 0
        err = np.where(bad, np.inf, err)
    return _finish(v, err, dtype, a.notes, "rsqrt of a value that cannot be told from 0", bad)


def erf(a: Approx, dtype: str) -> Approx:
    """``erf`` as libm's ``erff`` computes it (see the module docstring); ``dtype`` is the
    dtype the program evaluates it in (float32 in every TVM lowering seen)."""
    r = target_math.func_rel("erf", dtype) + 2 * U64
    with np.errstate(all="ignore"):
        v = _erf64(a.value)
        e0 = np.where(a.err == 0, 0.0, np.minimum(2.0 / math.sqrt(math.pi) * a.err, 2.0))
        err = e0 + r * (np.abs(v) + e0) + 2 * _eta(dtype)
    return _finish(v, err, dtype, a.notes)


_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf64(x: np.ndarray) -> np.ndarray:
    """erf in float64 (CPython's ``math.erf``: the C library's ``erf``, within an ulp)."""
    x = np.asarray(x, dtype=np.float64)
    return np.asarray(_ERF(x), dtype=np.float64).reshape(x.shape)


def bilinear(f, a: Approx, b: Approx, k: int, acc_dtype: str) -> Approx:
    """``f(a, b)``: ``k`` products of computed operands per element, summed in ``acc_dtype``
    in any order (see *Bilinear reductions* in the module docstring).

    ``f`` is the bilinear form in float64 (``np.matmul``, a convolution); ``a`` and ``b``
    must already be in ``acc_dtype`` as the program computes the products (a cast to a wider
    dtype is exact, :func:`cast`).
    """
    with np.errstate(all="ignore"):
        v = f(a.value, b.value)
        abs_a, abs_b = np.abs(a.value), np.abs(b.value)
        big_a = f(abs_a, abs_b)
        if a.err.any() or b.err.any():
            ea = np.broadcast_to(a.err, a.value.shape)
            eb = np.broadcast_to(b.err, b.value.shape)
            prop = f(abs_a, eb) + f(ea, abs_b) + f(ea, eb)
        else:
            prop = np.zeros(np.shape(v))
    if numerics.is_int(acc_dtype):
        return _finish(v, prop, acc_dtype, _notes(a, b))
    u, eta = _u(acc_dtype), _eta(acc_dtype)
    g = numerics.gamma(max(k - 1, 0), u)
    with np.errstate(all="ignore"):
        terms = (1 + u) * (big_a + prop) + k * eta
        err = prop + u * (big_a + prop) + k * eta + (g * terms if np.isfinite(g) else np.inf)
        partial_overflow = terms * (1 + (g if np.isfinite(g) else 1.0)) > _max(acc_dtype)
        err = np.where(partial_overflow, np.inf, err)
    if not np.isfinite(g):
        return _finish(v, err, acc_dtype, _notes(a, b),
                       f"n·u = {k - 1}·u({acc_dtype}) ≥ 1: the {acc_dtype} error model says nothing",
                       True)
    return _finish(v, err, acc_dtype, _notes(a, b), "a partial sum may overflow", partial_overflow)


def _axes(a: np.ndarray, axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(a.ndim))
    return tuple(axis) if isinstance(axis, tuple | list) else (axis,)


def reduce_sum(a: Approx, axis, dtype: str, *, keepdims: bool = False) -> Approx:
    """Σ of computed terms accumulated in ``dtype`` in any order (see the module docstring)."""
    axes = _axes(a.value, axis)
    k = int(np.prod([a.value.shape[i] for i in axes])) if axes else 1
    n = max(k - 1, 0)
    g = numerics.gamma(n, _u(dtype)) if _u(dtype) else 0.0
    with np.errstate(all="ignore"):
        v = a.value.sum(axis=axes, keepdims=keepdims)
        e_in = a.err.sum(axis=axes, keepdims=keepdims)
        s_abs = (np.abs(a.value) + a.err).sum(axis=axes, keepdims=keepdims)
        err = e_in + (g * s_abs if np.isfinite(g) else np.inf)
        partial_overflow = s_abs * (1 + (g if np.isfinite(g) else 1.0)) > _max(dtype)
        err = np.where(partial_overflow, np.inf, err)
    if not np.isfinite(g):
        return _finish(v, err, dtype, a.notes,
                       f"n·u = {n}·u({dtype}) ≥ 1: the {dtype} error model says nothing", True)
    return _finish(v, err, dtype, a.notes, "a partial sum may overflow", partial_overflow)


def reduce_max(a: Approx, axis, *, keepdims: bool = False, minimum_: bool = False) -> Approx:
    axes = _axes(a.value, axis)
    f = np.min if minimum_ else np.max
    return Approx(f(a.value, axis=axes, keepdims=keepdims),
                  np.max(a.err, axis=axes, keepdims=keepdims), a.dtype, a.notes)


def accumulate(value, abs_sum, k: int, *, acc_dtype: str, products: bool, extra_ops: int = 0) -> Approx:
    """A k-term reduction of exact inputs (or of products of two exact inputs) in ``acc_dtype``.

    ``value`` and ``abs_sum`` (``Σ|t_i|``) are float64 arrays computed by the caller.
    ``extra_ops`` counts further roundings folded into the same γ (kept for callers that fold
    a final operation into the reduction).
    """
    value = np.asarray(value, dtype=np.float64)
    abs_sum = np.asarray(abs_sum, dtype=np.float64)
    if numerics.is_int(acc_dtype):
        return Approx(value, np.zeros(value.shape), acc_dtype)
    n = max(k - 1, 0) + (1 if products else 0) + extra_ops
    u = _u(acc_dtype)
    g = numerics.gamma(n, u)
    eta = numerics.fmt(acc_dtype).eta
    why = None
    with np.errstate(all="ignore"):
        if np.isfinite(g):
            err = g * abs_sum + (n + 1) * eta
            overflow = abs_sum * (1.0 + g) > numerics.fmt(acc_dtype).max
        else:
            err = np.full(value.shape, np.inf)
            overflow = np.zeros(value.shape, bool)
            why = f"n·u = {n}·2^-{numerics.fmt(acc_dtype).precision} ≥ 1: the {acc_dtype} error model says nothing"
        err = np.where(overflow, np.inf, err)
    if why is not None:
        return _finish(value, err, acc_dtype, (), why, True)
    return _finish(value, err, acc_dtype, (), "a partial sum may overflow", overflow)


def to_expected(a: Approx, out_dtype: str, model: str) -> Expected:
    """Store ``a`` to an output of ``out_dtype`` (one more rounding when narrower)."""
    if numerics.is_int(out_dtype):
        e = exact(a.value, out_dtype, model=f"{model}/int-exact")
        return e
    stored = cast(a, out_dtype)
    bound = stored.err * BOUND_SLACK
    return Expected(stored.value, bound, out_dtype, model, "; ".join(stored.notes) or None)


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
    ``extra_ops``: further roundings applied to the accumulated value before the store.
    """
    acc = accumulate(value, abs_sum, k, acc_dtype=acc_dtype, products=products, extra_ops=extra_ops)
    if numerics.is_int(acc_dtype):
        return exact(acc.value, out_dtype, model=f"{model}/int-exact")
    return to_expected(acc, out_dtype, model)
