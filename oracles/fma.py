"""A correctly rounded float32 fused multiply-add, vectorised with numpy.

numpy has no ``fma``.  For float32 operands the product ``x·y`` is exact in float64
(24 + 24 ≤ 53 bits), so only the sum ``p + z`` needs care: it is computed in float64 as
``s`` with its exact error ``e = (p + z) − s`` by Knuth's TwoSum, and ``s`` is rounded to
float32.  That single rounding of ``s`` gives the correctly rounded ``p + z`` unless ``s`` lies
exactly halfway between two float32 numbers while ``e ≠ 0`` — then the true sum is on the side
of the midpoint that ``e`` points to, and the result is that neighbour (round to nearest needs
the tie-break only for true ties, ``e = 0``).  Overflow of ``s`` beyond float32 gives ±inf like
the hardware; nan and inf operands propagate through the float64 arithmetic.
"""

from __future__ import annotations

import numpy as np


def fma32(x, y, z) -> np.ndarray:
    """``round_to_float32(x·y + z)`` for float32 arrays (broadcasting)."""
    x64 = np.asarray(x, dtype=np.float32).astype(np.float64)
    y64 = np.asarray(y, dtype=np.float32).astype(np.float64)
    z64 = np.asarray(z, dtype=np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        p = x64 * y64
    return fma32_from_product(p, z64, None)


_LOW29 = np.uint64((1 << 29) - 1)
_HALF29 = np.uint64(1 << 28)
_TINY = 2.0**-126


def fma_chain(acc: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``acc ← fma(x_i, y_i, acc)`` for i = 0, 1, … with the exact products ``p[i] = x_i·y_i``
    (float64, exact for float32 operands): the float32 accumulation chain of fused
    multiply-adds, one rounding per step.

    Each step adds in float64 and rounds to float32; that double rounding can differ from one
    correct rounding only where the float64 sum is exactly halfway between two float32 numbers
    (its low 29 significand bits ``1000…0``) or the result is subnormal — such steps, rare,
    are redone with :func:`fma32`.
    """
    a64 = np.asarray(acc, dtype=np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        for i in range(p.shape[0]):
            s = a64 + p[i]
            r = s.astype(np.float32)
            low = s.view(np.uint64) & _LOW29
            if (low == _HALF29).any() or (np.abs(r) < _TINY).any():
                r = fma32_from_product(p[i], a64, r)
            a64 = r.astype(np.float64)
    return a64.astype(np.float32)


def fma32_from_product(p64: np.ndarray, z64: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Correct :func:`fma32` rounding of ``p + z`` given the exact float64 product ``p``."""
    with np.errstate(all="ignore"):
        s = p64 + z64
        bb = s - p64
        e = (p64 - (s - bb)) + (z64 - bb)
        r = s.astype(np.float32)
        r64 = r.astype(np.float64)
        toward = np.where(s > r64, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32)
        nb = np.nextafter(r, toward)
        half = (nb.astype(np.float64) - r64) / 2
        tie = (s != r64) & (s - r64 == half) & (e != 0) & np.isfinite(s)
        return np.where(tie & (np.sign(e) == np.sign(s - r64)), nb, r)
