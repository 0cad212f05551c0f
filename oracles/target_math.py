"""How each target computes what the IEEE model of :mod:`fuzzharness.oracles.bounds` assumes exact-ish.

The error model's defaults describe TVM's llvm code: + − × ÷ √ correctly rounded, subnormals
kept, ``exp``/``erf`` from glibc within ``LIBM_ULPS``, ``tanh``/``sigmoid``/``rsqrt`` as TVM's
formulas.  GPU code differs, and the bound of a case must describe the code that ran
(:func:`math_for` picks the model from the case's target; :func:`applied` makes it the one
:mod:`fuzzharness.oracles.bounds` uses while a reference is computed).

CUDA (``fuzzharness/backends/cuda.py`` compiles with TVM's nvcc flags, ``--use_fast_math``
included unless ``$TVM_CUDA_NVCC_NO_FAST_MATH`` is set, exactly as ``tvm/support/nvcc.py``
does).  ``--use_fast_math`` implies ``-ftz=true -prec-div=false -prec-sqrt=false`` and maps
``expf`` to ``__expf`` (CUDA C++ Programming Guide, "Mathematical Functions" appendix:
"Intrinsic Functions" and the ``-use_fast_math`` table; the functions affected are those whose
declaration in ``crt/math_functions.h`` carries ``\\note_fastmath``: expf, exp10f, logf,
log2f, log10f, sinf, cosf, tanf, sincosf, powf — not tanhf, erff, rsqrtf):

============  ==========================  ===============================================
operation     IEEE flags                  --use_fast_math
============  ==========================  ===============================================
x/y           0 ulp (correctly rounded)   2 ulp (``__fdividef``, 2^-126 ≤ |y| ≤ 2^126;
                                          else 0 — such divisors are unbounded here)
sqrtf         0 ulp                       approximate: 3 ulp allowed (the guide lists
                                          ``-prec-sqrt=false`` as approximate; 3 is the
                                          OpenCL full-profile bound, used as the ceiling)
expf          2 ulp                       ``__expf``: 2 + floor(|1.173·x|) ulp
tanhf         2 ulp                       2 ulp (not affected)
erff          2 ulp                       2 ulp (not affected)
rsqrtf        2 ulp                       2 ulp
subnormals    kept                        flushed to zero (inputs and results: an absolute
                                          error up to the smallest normal, 2^-126)
============  ==========================  ===============================================

float16 on CUDA: + − × are native IEEE half operations; ``hexp`` is computed as
``ex2.approx.ftz.f32(x·log2 e)`` rounded to half and ``htanh`` as ``tanhf`` rounded to half
(``cuda_fp16.hpp`` of CUDA 13.0) — so the float32 tables above apply, then one half
rounding, which is how :func:`fuzzharness.oracles.numerics.func_rel` composes narrow dtypes anyway.

OpenCL (TVM emits the built-ins ``exp``, ``tanh``, ``erf``, ``sqrt``, ``rsqrt`` and ``/``;
``fuzzharness/backends/opencl.py`` builds without ``-cl-fast-relaxed-math``), from the OpenCL
C specification, "Relative Error as ULPs" (§7.4 in 3.0; full profile, single precision):
x/y 2.5 ulp, sqrt 3 ulp, exp 3 ulp, tanh 5 ulp, erf 16 ulp, rsqrt 2 ulp; subnormals are
optional for float (``CL_FP_DENORM``), so results may be flushed.  Half-precision built-ins
are given the same ulp counts in float32 units, then one half rounding (the half table is
not tighter than that for these functions).

Every value is a documented maximum, not a measurement; "not guaranteed bounds" in CUDA's own
words, so the llvm-measured margins of :mod:`fuzzharness.oracles.numerics` are not claimed here.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import os
from collections.abc import Iterator
from typing import Any


@dataclasses.dataclass(frozen=True)
class TargetMath:
    """Float32 error of the operations whose implementation depends on the target.

    ``div_ulps`` / ``sqrt_ulps``: float32 ulps of a division / square root (0.5: correctly
    rounded); ``funcs``: float32 ulps of library functions that replace TVM's formulas
    (``tanh``, ``rsqrt``) or libm (``exp``, ``erf``); ``exp_slope``: ``__expf``'s extra
    ``floor(|slope·x|)`` ulps; ``ftz``: subnormals flushed (inputs and results).
    """

    name: str
    div_ulps: float = 0.5
    sqrt_ulps: float = 0.5
    funcs: tuple[tuple[str, float], ...] = ()
    exp_slope: float = 0.0
    ftz: bool = False

    def func_ulps(self, name: str) -> float | None:
        return dict(self.funcs).get(name)

    def exp_ulps(self, x) -> Any:
        """Float32 ulps of ``exp`` at ``x`` (an array), or None for the llvm/libm model."""
        import numpy as np

        base = self.func_ulps("exp")
        if base is None:
            return None
        return base + np.floor(np.abs(self.exp_slope * np.asarray(x, dtype=np.float64)))


LLVM = TargetMath("llvm")
CUDA_IEEE = TargetMath("cuda", funcs=(("exp", 2.0), ("tanh", 2.0), ("erf", 2.0), ("rsqrt", 2.0)))
CUDA_FAST = TargetMath("cuda --use_fast_math", div_ulps=2.0, sqrt_ulps=3.0,
                       funcs=(("exp", 2.0), ("tanh", 2.0), ("erf", 2.0), ("rsqrt", 2.0)),
                       exp_slope=1.173, ftz=True)
OPENCL = TargetMath("opencl", div_ulps=2.5, sqrt_ulps=3.0,
                    funcs=(("exp", 3.0), ("tanh", 5.0), ("erf", 16.0), ("rsqrt", 2.0)), ftz=True)


def cuda_fast_math() -> bool:
    """Whether nvcc gets ``--use_fast_math`` — TVM's own rule (``tvm/support/nvcc.py``)."""
    return not os.environ.get("TVM_CUDA_NVCC_NO_FAST_MATH")


def math_for(target: dict[str, Any] | None) -> TargetMath:
    kind = (target or {}).get("kind", "llvm")
    if kind == "cuda":
        return CUDA_FAST if cuda_fast_math() else CUDA_IEEE
    if kind == "opencl":
        return OPENCL
    return LLVM


_CURRENT: contextvars.ContextVar[TargetMath] = contextvars.ContextVar("target_math", default=LLVM)


def current() -> TargetMath:
    return _CURRENT.get()


@contextlib.contextmanager
def applied(target: dict[str, Any] | None) -> Iterator[TargetMath]:
    """Make the target's model the one the bounds use inside the ``with`` block."""
    token = _CURRENT.set(math_for(target))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


#: float32's smallest normal number: what a flushed subnormal loses at most
MIN_NORMAL32 = math.ldexp(1.0, -126)


# -- what fuzzharness.oracles.bounds asks ----------------------------------------------------------------


def _u32() -> float:
    return 2.0**-24


def op_rel(kind: str, dtype: str) -> float:
    """Relative error of one ``kind`` ("div" / "sqrt") operation in ``dtype`` on the current
    target: :func:`fuzzharness.oracles.numerics.op_u` where it is correctly rounded, else the target's
    float32 ulps (1 ulp ≤ 2u) followed, for a narrower dtype, by its own rounding."""
    from fuzzharness.oracles import numerics

    m = current()
    ulps = m.div_ulps if kind == "div" else m.sqrt_ulps
    if ulps <= 0.5 or numerics.is_int(dtype) or dtype == "float64":
        return numerics.op_u(dtype)
    f32 = 2.0 * ulps * _u32()
    if dtype == "float32":
        return f32
    u = numerics.fmt(dtype).u
    return u + f32 + u * f32


def func_rel(name: str, dtype: str, x=None):
    """Relative error of the library function ``name`` in ``dtype`` at arguments ``x`` on the
    current target (an array where the error depends on the argument, ``__expf``); the
    llvm/libm model (:func:`fuzzharness.oracles.numerics.func_rel`) where the target has no entry."""
    from fuzzharness.oracles import numerics

    m = current()
    ulps = m.exp_ulps(x if x is not None else 0.0) if name == "exp" else m.func_ulps(name)
    if ulps is None or dtype == "float64":
        return numerics.func_rel(dtype)
    lib = 2.0 * ulps * _u32()
    if dtype == "float32":
        return lib
    u = numerics.fmt(dtype).u
    return u + lib * (1.0 + u)


def eta(dtype: str, default: float) -> float:
    """Absolute error of one operation near zero: the smallest normal where the target
    flushes float32 subnormals (results and inputs), ``default`` otherwise."""
    if current().ftz and dtype in ("float32", "bfloat16"):
        return max(default, MIN_NORMAL32)
    return default


def library(name: str) -> bool:
    """Whether the target computes ``name`` with a library function of its own (CUDA's
    ``tanhf``, ``rsqrtf``) rather than TVM's formula."""
    return current().func_ulps(name) is not None
