"""Elementwise intrinsics (exp, tanh, sigmoid, erf, sqrt, rsqrt, fabs, log) as the kernel computes them.

The same-order emulation (:mod:`fuzzharness.oracles.emulate`) must reproduce a kernel's bits, and a
transcendental's bits are those of the implementation the kernel calls: on llvm, ``T.exp``
becomes ``llvm.exp`` and then glibc's ``expf`` (also inside vectorised loops), ``T.erf``
``erff``, and ``tanh``/``sigmoid``/``rsqrt`` are expanded by TVM's intrinsic lowering into
formulas of ``exp``, ``sqrt``, +, −, ÷ (see :mod:`fuzzharness.oracles.bounds`).  numpy's own ``exp`` is a
different implementation (its float32 loop is SIMD code of its own, not glibc) and rounding a
float64 ``exp`` to float32 disagrees with glibc's ``expf`` near rounding midpoints, so neither
can stand in for it.

So each intrinsic is evaluated by a one-operation TVM kernel — ``Y[i] = T.<op>(X[i])`` over a
flat array of the operand's dtype, compiled once per (op, dtype) and cached in the process —
built by the same lowering and code generation as the kernel under test.  That assumes what
TVM's lowering guarantees: an intrinsic call is a function of its operand alone, expanded the
same way wherever it appears.  The helpers are compiled for plain ``llvm`` whatever the
case's ``mcpu``: none of the expansions has a multiply feeding an addition (``tanh``'s ``2x``
feeds ``exp``), so FMA contraction cannot change them, and vectorised ``llvm.exp`` calls the
same scalar ``expf`` (checked on ``znver4`` by ``tests/test_emulate.py``).  The helper is TVM judging TVM only in this narrow sense; the
arithmetic around the call is numpy's, and the error-bound oracle checks the same values
against float64 independently.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

#: intrinsics the emulation evaluates this way (TIR op name without the ``tirx.`` prefix)
SUPPORTED = frozenset({"exp", "erf", "tanh", "sigmoid", "sqrt", "rsqrt", "fabs", "log"})

_CACHE: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()

_TEMPLATE = '''
@T.prim_func(s_tir=True)
def main(x: T.handle, y: T.handle):
    n = T.int32()
    X = T.match_buffer(x, (n,), "{dtype}")
    Y = T.match_buffer(y, (n,), "{dtype}")
    for i in range(n):
        with T.sblock("f"):
            vi = T.axis.remap("S", [i])
            Y[vi] = T.{op}(X[vi])
'''


def _kernel(op: str, dtype: str):
    key = (op, dtype)
    with _LOCK:
        fn = _CACHE.get(key)
        if fn is None:
            import tvm

            from fuzzharness.backends.llvm import codegen_tir, lower_tir
            from fuzzharness.core.tvm_support import parse_prim_func

            func = parse_prim_func(_TEMPLATE.format(op=op, dtype=dtype))
            fn = codegen_tir(lower_tir(tvm.IRModule({"main": func}), {"kind": "llvm"}, {}))["main"]
            _CACHE[key] = fn
    return fn


def apply(op: str, dtype: str, x: np.ndarray) -> np.ndarray:
    """``T.<op>`` of every element of ``x`` (a numpy array of ``dtype``), computed by TVM's
    llvm code; same shape and dtype as ``x``."""
    import tvm

    if op not in SUPPORTED:
        raise KeyError(op)
    flat = np.ascontiguousarray(x).reshape(-1)
    if flat.size == 0:
        return np.asarray(x).copy()
    out = tvm.runtime.tensor(np.empty_like(flat))
    _kernel(op, dtype)(tvm.runtime.tensor(flat), out)
    return out.numpy().reshape(np.shape(x))
