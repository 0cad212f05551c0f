"""Floating-point facts per dtype: unit roundoff, underflow unit, overflow threshold.

For a binary floating-point format with ``p`` significand bits (the implicit bit counted),
round-to-nearest gives ``fl(x op y) = (x op y)(1 + δ)``, ``|δ| ≤ u = 2^-p`` for every result in
the normal range (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §2.2).
Below the normal range the relative model fails; an absolute error of at most
``eta = 2^(emin - p)`` (half the spacing of subnormals) per operation holds instead (Higham
§2.1, eq. 2.8 with gradual underflow).  Integer dtypes are exact with two's-complement
wrap-around.

Per-operation roundoff as TVM lowers it (:func:`op_u`)
-----------------------------------------------------
On llvm, TVM computes float16 arithmetic in LLVM ``half`` (legalised through float32 on CPUs
without native fp16) and bfloat16 arithmetic in float32 (``BF16ComputeLegalize``) with a
rounding to bfloat16 at every store.  A result may therefore be rounded twice: once to
float32, once to the narrow format.  Double rounding ``fl_p(fl_24(x)) = x(1 + δ1)(1 + δ2)``
gives ``|δ| ≤ u_p + u_24 + u_p·u_24``; that is the per-operation unit roundoff used by every
bound (for float32 and float64 it is ``u`` itself).  For +, −, ×, ÷ and √ of two p-bit
operands with 24 ≥ 2p + 2 the double rounding is known to be innocuous (Figueroa, 1995), but
a fused multiply-add or an operand that is itself a float32 intermediate breaks that premise,
so the bounds do not rely on it.

Transcendental functions (:data:`LIBM_ULPS`)
--------------------------------------------
TVM lowers ``exp`` to ``llvm.exp`` (the platform libm's ``expf``; narrow formats go through
float32), and builds ``sigmoid``, ``tanh`` and ``rsqrt`` from ``exp``, ``sqrt``, +, −, ÷ (see
:mod:`fuzzharness.oracles.bounds`).  The model: libm's float32 ``expf`` is within ``LIBM_ULPS`` float32 ulps
(glibc documents ≤ 1 ulp for ``expf`` on x86-64; its implementation since 2.28 measures
0.502 ulp); one ulp is at most ``2·u``.  ``tests/test_transcendental_bounds.py`` checks the
resulting bounds on every float16 and bfloat16 input and on a float32 sample.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np


@dataclasses.dataclass(frozen=True)
class FloatFormat:
    name: str
    precision: int  # significand bits p, implicit bit included
    emin: int  # exponent of the smallest normal number
    max: float  # largest finite value

    @property
    def u(self) -> float:
        """Unit roundoff 2^-p (round to nearest)."""
        return 2.0**-self.precision

    @property
    def eta(self) -> float:
        """Max absolute rounding error of one operation in the subnormal range."""
        return 2.0 ** (self.emin - self.precision)

    @property
    def max_exact_int(self) -> int:
        """Every integer of magnitude ≤ this is exactly representable."""
        return 2**self.precision


FLOATS = {
    "float16": FloatFormat("float16", 11, -14, 65504.0),
    "bfloat16": FloatFormat("bfloat16", 8, -126, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
    "float32": FloatFormat("float32", 24, -126, float(np.finfo(np.float32).max)),
    "float64": FloatFormat("float64", 53, -1022, float(np.finfo(np.float64).max)),
}


def is_float(dtype: str) -> bool:
    return str(dtype) in FLOATS


def is_int(dtype: str) -> bool:
    return str(dtype).startswith(("int", "uint"))


def fmt(dtype: str) -> FloatFormat:
    try:
        return FLOATS[str(dtype)]
    except KeyError:
        raise ValueError(f"{dtype} is not a floating-point dtype with an error model") from None


def gamma(k: int | np.ndarray, u: float) -> float | np.ndarray:
    """γ_k = k·u / (1 − k·u) (Higham Lemma 3.1); inf where k·u ≥ 1 (the model says nothing)."""
    ku = np.asarray(k, dtype=np.float64) * u
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(ku < 1.0, ku / (1.0 - ku), np.inf)
    return float(g) if np.ndim(g) == 0 else g


#: float32 ulps of error allowed to the platform libm's ``expf`` (see the module docstring)
LIBM_ULPS = 1.0

#: unit roundoff of the float64 reference computation itself (numpy)
U64 = 2.0**-53


def op_u(dtype: str) -> float:
    """Relative error of one arithmetic operation in ``dtype`` as TVM lowers it (double rounding
    through float32 included for the narrow formats); 0 for integer dtypes (exact)."""
    if is_int(dtype):
        return 0.0
    f = fmt(dtype)
    if f.precision < FLOATS["float32"].precision:
        u32 = FLOATS["float32"].u
        return f.u + u32 + f.u * u32
    return f.u


def func_rel(dtype: str) -> float:
    """Relative error of one ``exp`` in ``dtype``: libm's float32 error plus the final rounding
    to a narrower format (float64: numpy's own ≤ 1 ulp)."""
    f = fmt(dtype)
    lib = 2.0 * LIBM_ULPS * FLOATS["float32"].u
    if f.precision < FLOATS["float32"].precision:
        return f.u + lib * (1.0 + f.u)
    if f.precision == FLOATS["float32"].precision:
        return lib
    return 2.0 * f.u


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype that holds a TVM dtype's values (bfloat16 via ml_dtypes)."""
    if str(dtype) == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    if str(dtype) == "bool":
        return np.dtype(np.bool_)
    return np.dtype(str(dtype))


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """Round float64 values to ``dtype`` (round to nearest even) and return them in that dtype."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to ±inf is the rounding
        return np.asarray(x).astype(numpy_dtype(dtype))


def int_range(dtype: str) -> tuple[int, int]:
    info = np.iinfo(np.dtype(str(dtype)))
    return int(info.min), int(info.max)


def wrap_int(x: np.ndarray, dtype: str) -> np.ndarray:
    """Exact integers (as float64 or int64) wrapped to ``dtype`` with two's complement."""
    lo, hi = int_range(dtype)
    span = hi - lo + 1
    v = np.asarray(np.rint(x)).astype(np.int64)
    return ((v - lo) % span + lo).astype(np.float64)
