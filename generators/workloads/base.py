"""The workload interface: one operator family = one module = one registered class.

A workload turns drawn parameters into three things that must agree:

* a program — TVMScript text of one ``@T.prim_func(s_tir=True)`` named ``main`` whose
  parameters are the inputs followed by the outputs, in the order of :meth:`inputs` +
  :meth:`outputs`;
* inputs — :class:`~fuzzharness.generators.inputs.InputSpec` with the magnitudes that keep the float modes
  overflow-free and the exact-integer mode exact;
* a float64 reference — computed with numpy (never TVM) from the inputs as the kernel sees
  them, with per-element bounds from :mod:`fuzzharness.oracles.bounds`; the accumulation dtype is read from
  the program through :class:`fuzzharness.oracles.program.Numerics`, not taken from the parameters.

Parameters are plain JSON data (ints, strings, lists) and fully determine the program.
``draw_params`` must draw only through ``data.draw`` so that generation is deterministic and
shrinkable.

Dtype labels (:data:`DTYPE_LABELS`) name the input, accumulation/compute and output dtypes:
``float32``, ``float16``, ``bfloat16`` (all three the same), ``float16-acc32`` (fp16 inputs,
fp32 accumulation and output), ``float16-acc32-out16`` (fp16 inputs, an fp32 accumulator
stored to an fp16 output by a separate cast block) and ``int8`` (int8 inputs, int32
accumulation and output; max/min/copies keep int8).

Conventions every workload keeps:

* blocks are named after what they compute (``C``, ``conv``, ``pad``, ``pool_max``, ...) and
  an accumulator stored to a narrower output gets its own cast block (``<name>_cast``);
* float-mode ``scale`` keeps every intermediate finite for every input the distributions can
  draw (worst case, not typical case); ``int_max`` (exact-integer mode) keeps every partial
  result an integer exactly representable in every dtype it passes through, or is 0 where the
  program cannot be exact (transcendentals, a rounding division before further arithmetic);
* ``specials`` lists the IEEE special values an input may carry in the ``special_values``
  distribution — only where the program's result for them is defined by IEEE arithmetic
  regardless of evaluation order (no nan into ``max``/``min``: TVM lowers them to a compare and
  select whose nan result depends on the operand order);
* the reference mirrors the program's formula and its literals as the program writes them
  (rounded to their dtype), in float64.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from fuzzharness.core.registry import Registry
from fuzzharness.core.tvm_support import parse_prim_func  # cached: see its docstring
from fuzzharness.generators.inputs import InputSpec
from fuzzharness.oracles import numerics
from fuzzharness.oracles.bounds import Expected
from fuzzharness.oracles.program import Numerics

#: dtype label → (input dtype, accumulation/compute dtype, output dtype)
DTYPE_LABELS: dict[str, tuple[str, str, str]] = {
    "float32": ("float32", "float32", "float32"),
    "float16": ("float16", "float16", "float16"),
    "bfloat16": ("bfloat16", "bfloat16", "bfloat16"),
    "float16-acc32": ("float16", "float32", "float32"),
    "float16-acc32-out16": ("float16", "float32", "float16"),
    "int8": ("int8", "int32", "int32"),
}
FLOAT_LABELS = tuple(k for k in DTYPE_LABELS if k != "int8")

ALL_SPECIALS = ("inf", "-inf", "nan")
INF_SPECIALS = ("inf", "-inf")


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

    def params_problem(self, params: dict[str, Any]) -> str | None:
        """Why ``params`` lie outside what :meth:`draw_params` can draw (a shape constraint
        the program relies on), or None.  The minimizer never proposes such params: a
        failure of a program that cannot be drawn is no repro of the drawn one.

        This default refuses a tensor with an extent below 1 — e.g. a pooling window larger
        than its padded input, an empty output that TVM then builds and runs (a minimized
        pool2d with ``H`` 3 < ``KH`` 4 crashed, and no repro script could be written for
        it); workloads add their own draw constraints and call this.
        """
        try:
            specs = [*self.inputs(params), *self.outputs(params)]
        except Exception as e:  # noqa: BLE001 - params the workload cannot even describe
            return f"the workload cannot describe its tensors: {type(e).__name__}: {e}"
        for spec in specs:
            if any(int(d) < 1 for d in spec.shape):
                return f"{spec.name} would have the shape {tuple(spec.shape)}"
        return None

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

    def exact_inputs(self, params: dict[str, Any], rng: np.random.Generator
                     ) -> dict[str, np.ndarray] | None:
        """Inputs of the second run of every kernel (:mod:`fuzzharness.execution.second_run`): exact inputs —
        small integers times powers of two, from each input's :class:`~generators.inputs.
        ExactSet` (or ``int_max``) — or None when some input has none.  Workloads whose exact
        inputs need structure override it (balanced layer-norm rows, softmax rows of 0 and a
        value whose exponential underflows)."""
        from fuzzharness.generators.inputs import exact_values

        out = {}
        for spec in self.inputs(params):
            x = exact_values(rng, spec)
            if x is None:
                return None
            out[spec.name] = x
        return out

    def kernel_source(self, params: dict[str, Any]) -> str:
        """The program the kernel is built from: :meth:`source` itself.

        A fault-injection point for simulated miscompilations (the deliberately wrong programs
        of ``fuzzharness/testing/wrong_programs.py``): the reference, the error model, the order
        analysis and the unscheduled baseline all use :meth:`source`, only the scheduled
        kernel uses this — exactly as if TVM had compiled :meth:`source` into this program.
        """
        return self.source(params)

    # -- helpers ------------------------------------------------------------------------
    def prim_func(self, params: dict[str, Any]):

        return parse_prim_func(self.source(params))

    def kernel_prim_func(self, params: dict[str, Any], func=None):
        """The PrimFunc of :meth:`kernel_source` (``func`` when the texts agree)."""
        text = self.kernel_source(params)
        if func is not None and text == self.source(params):
            return func

        return parse_prim_func(text)

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


def draw_label(data: Any, workload: Workload, options: GenOptions,
               labels: tuple[str, ...] | None = None) -> str:
    from hypothesis import strategies as st

    from fuzzharness.generators.steering import weighted

    pool = [lb for lb in (labels or workload.dtype_labels)
            if options.dtypes is None or lb in options.dtypes]
    if not pool:  # a filter that excludes this family's choices: fall back to its first label
        pool = workload.allowed_labels(options) or list(workload.dtype_labels)
    return data.draw(st.sampled_from(weighted("dtype", pool)))  # steered: generators/steering.py


def grid_vars(n: int, prefix: str = "ax") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def cast_block(src: str, dst: str, shape: tuple[int, ...], out_dtype: str, block: str) -> str:
    """A loop nest copying ``src`` to ``dst`` with a cast: the store of a wide accumulator."""
    loops = grid_vars(len(shape))
    vs = [f"v{i}" for i in range(len(shape))]
    idx = ", ".join(vs)
    return f'''
    for {", ".join(loops)} in T.grid({", ".join(map(str, shape))}):
        with T.sblock("{block}"):
            {", ".join(vs)} = T.axis.remap("{"S" * len(shape)}", [{", ".join(loops)}])
            {dst}[{idx}] = T.Cast("{out_dtype}", {src}[{idx}])
'''


def alloc(name: str, shape: tuple[int, ...], dtype: str) -> str:
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    return f'    {name} = T.sblock_alloc_buffer(({dims}), "{dtype}")\n'


def buf(shape: tuple[int, ...], dtype: str) -> str:
    """``T.Buffer(...)`` text for a parameter."""
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    return f'T.Buffer(({dims}), "{dtype}")'


def zero(dtype: str) -> str:
    return f"T.{dtype}(0)"


def minmax_dtype(dtype: str) -> str:
    """The dtype max/min reductions of ``dtype`` values run in: bfloat16 goes through float32.

    TVM 0.27 cannot express the bfloat16 extremes: ``T.min_value("bfloat16")`` is float32's
    lowest, which becomes −inf once stored as bfloat16, and any positive bfloat16 literal
    above 65504 (``T.max_value("bfloat16")`` included) is rejected by a float16 range check
    (see tests/test_workloads.py::test_tvm_bfloat16_extremes).  Max and min of bfloat16 values
    are exact in float32 — TVM computes bfloat16 arithmetic in float32 anyway — so the
    workloads accumulate them there and store once.
    """
    return "float32" if dtype == "bfloat16" else dtype


def lowest(dtype: str) -> str:
    assert dtype != "bfloat16", "see minmax_dtype"
    return f'T.min_value("{dtype}")'


def highest(dtype: str) -> str:
    assert dtype != "bfloat16", "see minmax_dtype"
    return f'T.max_value("{dtype}")'


def lowest_value(dtype: str) -> float:
    """``T.min_value(dtype)`` as a float (the finite lowest value, not −inf)."""

    return float(numerics.int_range(dtype)[0]) if numerics.is_int(dtype) else -numerics.fmt(dtype).max


def int_input_max(dtype: str) -> int:
    """The largest symmetric integer magnitude an input of ``dtype`` may take."""

    if numerics.is_int(dtype):
        return numerics.int_range(dtype)[1]
    return numerics.fmt(dtype).max_exact_int


def exact_int_max(k: int, in_dtype: str, sum_dtypes: tuple[str, ...], *, products: bool) -> int:
    """Largest m such that k input terms of magnitude ≤ m (products: m²) sum exactly.

    Every partial sum, in any order, is an integer of magnitude ≤ k·m (or k·m²); it is exact
    when that is ≤ 2^p of every dtype the sum passes through (``sum_dtypes``: accumulation and
    output), and the inputs themselves must be representable in ``in_dtype``.
    """

    def cap(d: str) -> int:
        return numerics.fmt(d).max_exact_int if numerics.is_float(d) else numerics.int_range(d)[1]

    per_term = min(cap(d) for d in sum_dtypes) // max(k, 1)
    m = int(np.floor(np.sqrt(per_term))) if products else per_term
    return max(min(m, cap(in_dtype)), 0)


def exact_set(k: int, in_dtype: str, acc: str, out: str, *, products: bool):
    """The :class:`~generators.inputs.ExactSet` of a k-term reduction of inputs (products: of
    pairs of inputs) accumulated in ``acc`` and stored as ``out``.

    Integers up to ``m`` keep every partial sum of the k terms exact in ``acc`` (``k·m`` or
    ``k·m² ≤ 2^p``; a narrower accumulator, e.g. fp16 for fp32, then rounds); where that
    leaves ``m < 2`` the inputs are sparse ternary, nonzero with the density that keeps the
    *expected* ``Σ|t|`` at a quarter of ``2^p`` (elements above it are simply not certified
    exact).  A power-of-two ``scale`` keeps the worst-case result within a quarter of the
    largest finite value of ``acc`` and ``out`` (an fp16 output of an fp32 accumulator).
    """
    from fuzzharness.generators.inputs import ExactSet
    from fuzzharness.oracles import numerics

    if not numerics.is_float(acc):
        return ExactSet(exact_int_max(k, in_dtype, (acc, out), products=products))
    k = max(k, 1)
    per_term = numerics.fmt(acc).max_exact_int // k
    m = int(np.floor(np.sqrt(per_term))) if products else per_term
    m = min(m, int_input_max(in_dtype))
    density = 1.0
    if m < 2:
        m, want = 1, numerics.fmt(acc).max_exact_int / 4 / k
        density = float(min(1.0, np.sqrt(want) if products else want))
    limit = min(numerics.fmt(acc).max, numerics.fmt(out).max if numerics.is_float(out) else np.inf) / 4
    scale = 1.0
    while k * (m * scale) ** (2 if products else 1) > limit:
        scale /= 2
    return ExactSet(m, scale, density)


def reduction_limit(options: GenOptions, label: str) -> int:
    """The longest reduction worth drawing for a dtype label: ``options.max_reduction``, capped
    at ``2^p`` of a float accumulator — beyond it neither mode can judge (``k·u ≥ 1`` and not
    even inputs of magnitude 1 keep every partial sum exact), so such a case could only be
    inconclusive."""

    acc = DTYPE_LABELS[label][1]
    cap = numerics.fmt(acc).max_exact_int if numerics.is_float(acc) else options.max_reduction
    return max(1, min(options.max_reduction, cap))


def draw_extent(data: Any, hi: int, *, lo: int = 1) -> int:
    """An extent in [lo, hi] that is often interesting: 1, a prime, a power of two, or any.

    Shrinks towards ``lo``.
    """
    from hypothesis import strategies as st

    special = [e for e in (1, 2, 3, 7, 13, 16, 31, 32, 61, 64, 127, 128, 251, 256, 1021, 1024)
               if lo <= e <= hi]
    return data.draw(st.integers(lo, hi) | st.sampled_from(special or [lo]))
