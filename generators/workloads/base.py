"""The workload interface: one operator family = one module = one registered class.

A workload turns drawn parameters into three things that must agree:

* a program — TVMScript text of one ``@T.prim_func(s_tir=True)`` named ``main`` whose
  parameters are the inputs followed by the outputs, in the order of :meth:`inputs` +
  :meth:`outputs`;
* inputs — :class:`~generators.inputs.InputSpec` with the magnitudes that keep the float modes
  overflow-free and the exact-integer mode exact;
* a float64 reference — computed with numpy (never TVM) from the inputs as the kernel sees
  them, with per-element bounds from :mod:`oracles.bounds`; the accumulation dtype is read from
  the program through :class:`oracles.program.Numerics`, not taken from the parameters.

Parameters are plain JSON data (ints, strings, lists) and fully determine the program.
``draw_params`` must draw only through ``data.draw`` so that generation is deterministic and
shrinkable.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from fuzzharness.registry import Registry
from generators.inputs import InputSpec
from oracles.bounds import Expected
from oracles.program import Numerics


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclasses.dataclass(frozen=True)
class GenOptions:
    """What the workload generators may draw (campaign filters narrow it)."""

    dtypes: tuple[str, ...] | None = None  # dtype labels to allow; None: all
    max_reduction: int = 1024  # largest reduction length drawn
    exact_modes: bool = True


class Workload:
    name: ClassVar[str]
    description: ClassVar[str] = ""
    dtype_labels: ClassVar[tuple[str, ...]] = ()
    #: drawn by campaigns that do not name their workloads (False: only when asked by name,
    #: e.g. the deliberately wrong programs of the test suite)
    default: ClassVar[bool] = True

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        raise NotImplementedError

    def source(self, params: dict[str, Any]) -> str:
        raise NotImplementedError

    def inputs(self, params: dict[str, Any]) -> list[InputSpec]:
        raise NotImplementedError

    def outputs(self, params: dict[str, Any]) -> list[TensorSpec]:
        raise NotImplementedError

    def reference(
        self, params: dict[str, Any], inputs: dict[str, np.ndarray], numerics: Numerics
    ) -> dict[str, Expected]:
        raise NotImplementedError

    def dtype_label(self, params: dict[str, Any]) -> str:
        """A short dtype tag for statistics and filters, e.g. ``float16`` or ``float16-acc32``."""
        return params["dtype"]

    # -- helpers ------------------------------------------------------------------------
    def prim_func(self, params: dict[str, Any]):
        from fuzzharness.tvm_support import parse_prim_func

        return parse_prim_func(self.source(params))

    def allowed_labels(self, options: GenOptions) -> list[str]:
        labels = [d for d in self.dtype_labels if options.dtypes is None or d in options.dtypes]
        return labels


workloads: Registry[Workload] = Registry("workload")


def register(cls: type[Workload]) -> type[Workload]:
    """Class decorator: register one instance of a workload class under ``cls.name``."""
    workloads.add(cls.name, cls())
    return cls


def as_f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def exact_int_max(k: int, in_dtype: str, sum_dtypes: tuple[str, ...], *, products: bool) -> int:
    """Largest m such that k input terms of magnitude ≤ m (products: m²) sum exactly.

    Every partial sum, in any order, is an integer of magnitude ≤ k·m (or k·m²); it is exact
    when that is ≤ 2^p of every dtype the sum passes through (``sum_dtypes``: accumulation and
    output), and the inputs themselves must be representable in ``in_dtype``.
    """
    from oracles import numerics

    def cap(d: str) -> int:
        return numerics.fmt(d).max_exact_int if numerics.is_float(d) else numerics.int_range(d)[1]

    per_term = min(cap(d) for d in sum_dtypes) // max(k, 1)
    m = int(np.floor(np.sqrt(per_term))) if products else per_term
    return max(min(m, cap(in_dtype)), 0)


def draw_extent(data: Any, hi: int, *, lo: int = 1) -> int:
    """An extent in [lo, hi] that is often interesting: 1, a prime, a power of two, or any.

    Shrinks towards ``lo``.
    """
    from hypothesis import strategies as st

    special = [e for e in (1, 2, 3, 7, 13, 16, 31, 32, 61, 64, 127, 128, 251, 256, 1021, 1024)
               if lo <= e <= hi]
    return data.draw(st.integers(lo, hi) | st.sampled_from(special or [lo]))
