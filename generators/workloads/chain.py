"""Chains of elementwise operations: program text, float64 reference with bounds, magnitudes.

Not a workload: the elementwise, fused-epilogue and dense workloads build their programs from
these pieces.  A chain is a list of steps ``{"op": name, "arg": operand or None}``; step ``i``
is one block named ``<op>_<i>`` that applies its operation to the previous step's result (the
first step to the chain's input) and, for binary operations, to an operand that may be
broadcast.  Every intermediate is stored in the compute dtype; the last step stores to the
output dtype (a cast in the store when they differ).

Per operation (see :data:`OPS`): its TVMScript template, its error-bound rule from
:mod:`fuzzharness.oracles.bounds`, a worst-case magnitude rule (used to pick an input scale that keeps
every intermediate finite, and an exact-integer magnitude that keeps every intermediate an
exactly representable integer), whether integer arithmetic can express it (exact modes and
int8), and whether a nan operand has an order-independent IEEE result (not for max/min/relu:
TVM lowers them to a compare and select).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from fuzzharness.oracles import bounds, numerics
from fuzzharness.oracles.bounds import Approx


@dataclasses.dataclass(frozen=True)
class Op:
    arity: int
    template: str  # {a}, {b}: operand expressions; {dt}: compute dtype
    bound: Callable[..., Approx]
    magnitude: Callable[[float, float], float]
    integer: bool = True  # expressible in integer arithmetic (stays integral)
    nan_safe: bool = True  # a nan operand gives nan whatever the lowering's operand order


def _exp_mag(a: float, _: float) -> float:
    return math.exp(min(a, 700.0))


OPS: dict[str, Op] = {
    "add": Op(2, "{a} + {b}", lambda a, b, dt: bounds.add(a, b, dt), lambda a, b: a + b),
    "sub": Op(2, "{a} - {b}", lambda a, b, dt: bounds.sub(a, b, dt), lambda a, b: a + b),
    "mul": Op(2, "{a} * {b}", lambda a, b, dt: bounds.mul(a, b, dt), lambda a, b: a * b),
    "max": Op(2, "T.max({a}, {b})", lambda a, b, dt: bounds.maximum(a, b, dt), max, nan_safe=False),
    "min": Op(2, "T.min({a}, {b})", lambda a, b, dt: bounds.minimum(a, b, dt), max, nan_safe=False),
    "relu": Op(1, "T.max({a}, T.{dt}(0))", lambda a, b, dt: bounds.relu(a), lambda a, b: a,
               nan_safe=False),
    "abs": Op(1, "T.abs({a})", lambda a, b, dt: bounds.absolute(a), lambda a, b: a),
    "neg": Op(1, "T.{dt}(0) - {a}", lambda a, b, dt: bounds.neg(a), lambda a, b: a),
    "exp": Op(1, "T.exp({a})", lambda a, b, dt: bounds.exp(a, dt), _exp_mag, integer=False),
    "sigmoid": Op(1, "T.sigmoid({a})", lambda a, b, dt: bounds.sigmoid(a, dt), lambda a, b: 1.0,
                  integer=False),
    "tanh": Op(1, "T.tanh({a})", lambda a, b, dt: bounds.tanh(a, dt), lambda a, b: 1.0,
               integer=False),
}


@dataclasses.dataclass(frozen=True)
class Operand:
    """A chain input: its buffer shape and its index expression in terms of ``v0 .. v{r-1}``."""

    name: str
    shape: tuple[int, ...]
    index: str
    dtype: str


def load(operand: Operand, compute: str) -> str:
    text = f"{operand.name}[{operand.index}]"
    return text if operand.dtype == compute else f'T.Cast("{compute}", {text})'


def op_names(integer_only: bool) -> list[str]:
    return [n for n, op in OPS.items() if op.integer or not integer_only]


def emit(steps: list[dict], first: str, operands: dict[str, Operand], shape: tuple[int, ...],
         compute: str, out: str, out_name: str, prefix: str = "") -> tuple[str, str]:
    """(allocations, loop nests) for the chain; ``first`` is the first step's input expression."""
    rank = len(shape)
    loops = ", ".join(f"ax{i}" for i in range(rank))
    vs = ", ".join(f"v{i}" for i in range(rank))
    idx = vs
    dims = ", ".join(map(str, shape)) + ("," if rank == 1 else "")
    allocs, nests = "", ""
    prev = first
    for i, step in enumerate(steps):
        op = OPS[step["op"]]
        b = load(operands[step["arg"]], compute) if op.arity == 2 else ""
        expr = op.template.format(a=prev, b=b, dt=compute)
        last = i == len(steps) - 1
        if last:
            dst = out_name
            if out != compute:
                expr = f'T.Cast("{out}", {expr})'
        else:
            dst = f"{prefix}T{i}"
            allocs += f'    {dst} = T.sblock_alloc_buffer(({dims}), "{compute}")\n'
        nests += f'''    for {loops} in T.grid({", ".join(map(str, shape))}):
        with T.sblock("{prefix}{step["op"]}_{i}"):
            {vs} = T.axis.remap("{"S" * rank}", [{loops}])
            {dst}[{idx}] = {expr}
'''
        prev = f"{dst}[{idx}]"
    return allocs, nests


def reference(steps: list[dict], first: Approx, operands: dict[str, Approx], compute: str) -> Approx:
    """The chain along the program's formula, in float64 with running error bounds.

    ``first`` and ``operands`` carry the dtype they are stored in; loads cast them to the
    compute dtype exactly as the program does.
    """
    acc = bounds.cast(first, compute)
    for step in steps:
        op = OPS[step["op"]]
        b = bounds.cast(operands[step["arg"]], compute) if op.arity == 2 else None
        acc = op.bound(acc, b, compute)
    return acc


def first_block(steps: list[dict]) -> str | None:
    """The name of step 0's block (None: no steps)."""
    return f"{steps[0]['op']}_0" if steps else None


def reduction_then(steps: list[dict], value, abs_sum, k: int, *, acc: str, products: bool,
                   operands: dict[str, Approx], folded: bool) -> Approx:
    """A k-term sum in ``acc`` (:func:`fuzzharness.oracles.bounds.accumulate`: ``value`` and
    ``abs_sum`` = ``Σ|t_i|`` in float64), then the chain.

    ``folded``: the schedule folded step 0 into the sum (``fuse_reduction_epilogue``, read by
    :meth:`fuzzharness.oracles.program.Numerics.folds`): its operand is the sum's init, so
    the reduction computes ``b + Σ t_i`` — ``k + 1`` terms, the operand rounded with every
    partial sum — and the chain goes on from step 1.  Only ``+ operand`` folds (the
    generator proposes TVM's linear Bias pattern alone; anything else is judged as unfolded),
    and only into a sum: folding it into a max or a min is a wrong result, which the caller's
    unfolded reference reports.
    """
    folded = folded and bool(steps) and steps[0]["op"] == "add"  # else: judged unfolded
    if folded:
        b = bounds.cast(operands[steps[0]["arg"]], acc)  # the init loads it in acc
        value, abs_sum = value + b.value, abs_sum + np.abs(b.value)
        k, steps = k + 1, steps[1:]
    r = bounds.accumulate(value, abs_sum, k, acc_dtype=acc, products=products)
    if folded and np.any(b.err):  # a narrowing load: its error enters the sum as it is
        r = dataclasses.replace(r, err=r.err + b.err)
    return reference(steps, r, operands, acc)


Magnitude = Callable[[float], float]


def magnitude(steps: list[dict], first: float, operand_mag: dict[str, float]) -> list[float]:
    """Worst-case |value| after each step when the inputs are bounded by the given magnitudes."""
    out, m = [], first
    for step in steps:
        op = OPS[step["op"]]
        m = op.magnitude(m, operand_mag.get(step["arg"], 0.0) if op.arity == 2 else 0.0)
        out.append(m)
    return out


def _linear(s: float) -> float:
    return s


def safe_scale(steps: list[dict], operands: list[str], dtypes: tuple[str, ...],
               base: float = 1.0, first: Magnitude = _linear) -> float:
    """The largest ``base·2^-j`` input magnitude keeping every intermediate below max/16.

    ``first(s)``: the magnitude of the chain's input when every program input is bounded by
    ``s`` (e.g. ``K·s²`` after a K-term dot product).
    """
    limit = min(_max(d) for d in dtypes) / 16
    s = base
    for _ in range(200):
        mags = magnitude(steps, first(s), {o: s for o in operands})
        if all(m <= limit for m in [first(s), *mags]):
            return s
        s /= 2
    return 0.0


def exact_int_max(steps: list[dict], operands: list[str], in_dtype: str,
                  dtypes: tuple[str, ...], first: Magnitude = _linear) -> int:
    """Largest integer input magnitude with every intermediate an exact integer (0: none)."""
    if not all(OPS[s["op"]].integer for s in steps):
        return 0

    def cap(d: str) -> int:
        return numerics.fmt(d).max_exact_int if numerics.is_float(d) else numerics.int_range(d)[1]

    limit = min(cap(d) for d in dtypes)
    hi = cap(in_dtype)
    lo, best = 1, 0
    while lo <= hi:  # the magnitude rules are monotone in the input magnitude
        mid = (lo + hi) // 2
        mags = magnitude(steps, first(mid), {o: mid for o in operands})
        if all(m <= limit for m in [first(mid), *mags]):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def nan_safe(steps: list[dict]) -> bool:
    return all(OPS[s["op"]].nan_safe for s in steps)


def _max(dtype: str) -> float:
    return float(numerics.int_range(dtype)[1]) if numerics.is_int(dtype) else numerics.fmt(dtype).max
