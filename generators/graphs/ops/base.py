"""The operator interface of graph generation: one op family = one module, ops registered by
decorator.

A :class:`GraphOp` knows, for one Relax operator (or a small fixed idiom of them):

``draw``       how to add a node to a graph under construction: pick arguments among the
               values built so far (:class:`DrawContext`), create the inputs it needs
               (weights, biases) with shapes that *refer* to its arguments' extents, draw its
               attributes — through ``ctx.draw`` only (deterministic, shrinkable); ``None``
               when the graph offers no site
``infer``      the output shape from argument shapes and attributes; raises
               :class:`~fuzzharness.generators.graphs.spec.InvalidGraph` for anything the op does not
               accept (the model's validity check, and the minimizer's)
``emit``       the Relax expression (``tvm.relax.op``) for the node
``reference``  the float64 value and running error bound (:class:`fuzzharness.oracles.bounds.Approx`) of
               the node along the formula TVM's legalization computes (each op module says
               which: ``tests/test_graphs.py`` checks the legalized TIR against it)
``magnitude``  a worst-case bound on ``|value|`` given bounds on the arguments', used to pick
               input scales that keep every intermediate finite (and, for ops that are
               ``integer_exact``, the exact-integer input mode's magnitudes)

Invariant: ``reference`` never under-estimates the error of any evaluation TVM may legally
choose (fusion, any schedule): the bound rules of :mod:`fuzzharness.oracles.bounds` hold for every
summation order and for fewer roundings.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from hypothesis import strategies as st

from fuzzharness.core.registry import Registry
from fuzzharness.generators.graphs.nodes import InvalidGraph, Node, Shape
from fuzzharness.generators.workloads.base import draw_extent as base
from fuzzharness.oracles.bounds import Approx

#: elements of any one value, and multiply-adds of any one node: keeps compile, run and the
#: float64 reference of a graph small next to TVM's build time
MAX_ELEMENTS = 16_384
MAX_MACS = 400_000


class GraphOp:
    name: ClassVar[str]
    weight: ClassVar[int] = 1
    #: exact in integer arithmetic: integer inputs (small enough) give an integer result with
    #: no rounding at all (the exact-integer input mode needs every op of the graph to be)
    integer_exact: ClassVar[bool] = False
    #: the Relax operators a node of this op emits (for statistics and bucket signatures)
    relax_ops: ClassVar[tuple[str, ...]] = ()

    def exact_for(self, attrs: dict[str, Any]) -> bool:
        """``integer_exact`` for one node (an attribute may break it, e.g. a pad value)."""
        return self.integer_exact

    def draw(self, ctx: DrawContext) -> Node | None:
        raise NotImplementedError

    def infer(self, shapes: list[Shape], attrs: dict[str, Any]) -> Shape:
        raise NotImplementedError

    def emit(self, args: list[Any], attrs: dict[str, Any], dtype: str):
        raise NotImplementedError

    def reference(self, args: list[Approx], attrs: dict[str, Any], dtype: str) -> Approx:
        raise NotImplementedError

    def magnitude(self, mags: list[float], shapes: list[Shape], attrs: dict[str, Any]) -> float:
        raise NotImplementedError


graph_ops: Registry[GraphOp] = Registry("graph operator")


def register_op(cls: type[GraphOp]) -> type[GraphOp]:
    """Class decorator: register one instance of an operator class under ``cls.name``."""
    graph_ops.add(cls.name, cls())
    return cls


def menu() -> list[str]:
    """The op draw: every registered op, sorted by name, repeated ``weight`` times (weight 0:
    registered for hand-built graphs only, e.g. the test suite's deliberately wrong op)."""
    return [n for n, op in graph_ops.items() for _ in range(op.weight)]


def require(cond: bool, message: str) -> None:
    if not cond:
        raise InvalidGraph(message)


def elements(shape: Shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def norm_axis(axis: int, rank: int) -> int:
    require(-rank <= axis < rank, f"axis {axis} out of range for rank {rank}")
    return axis % rank


@dataclasses.dataclass
class DrawContext:
    """A graph under construction: what ops may look at and extend while drawing a node."""

    data: Any
    dtype: str
    inputs: list[dict[str, Any]]
    nodes: list[Node]
    shapes: dict[str, Shape]
    counters: dict[str, int] = dataclasses.field(default_factory=dict)
    #: inputs that ops may take as data (the rest are weights, biases, gamma/beta: they
    #: feed only the node they were made for)
    data_inputs: set[str] = dataclasses.field(default_factory=set)

    def draw(self, strategy):
        return self.data.draw(strategy)

    def values(self, pred=None) -> list[str]:
        """Value names, the most recent first (so that draws shrink towards chains)."""
        names = [n.name for n in reversed(self.nodes)] + [
            i["name"] for i in reversed(self.inputs) if i["name"] in self.data_inputs]
        return [n for n in names if pred is None or pred(self.shapes[n])]

    def pick(self, pred=None) -> str | None:
        """A value whose shape satisfies ``pred``; the draw favours the latest (shrinks to it)."""
        names = self.values(pred)
        if not names:
            return None
        return names[self.draw(st.integers(0, len(names) - 1))]

    def fresh(self, prefix: str) -> str:
        taken = {i["name"] for i in self.inputs} | {n.name for n in self.nodes}
        k = self.counters.get(prefix, 0)
        while f"{prefix}{k}" in taken:
            k += 1
        self.counters[prefix] = k + 1
        return f"{prefix}{k}"

    def new_input(self, prefix: str, shape: list[Any], *, data: bool = False) -> str:
        """Add a graph input whose extents are ints or ``[value, axis(, divisor)]`` references
        (``data``: later ops may use it as data too)."""
        name = self.fresh(prefix)
        if data:
            self.data_inputs.add(name)
        self.inputs.append({"name": name, "shape": shape})
        self.shapes[name] = resolve_shape(shape, self.shapes)
        return name

    def node(self, op: str, args: list[str], attrs: dict[str, Any]) -> Node:
        return Node(self.fresh("n"), op, args, attrs)


def resolve_shape(shape: list[Any], shapes: dict[str, Shape]) -> Shape:
    out = []
    for d in shape:
        if isinstance(d, list):
            e = shapes[d[0]][d[1]]
            out.append(e // d[2] if len(d) == 3 else e)
        else:
            out.append(int(d))
    return tuple(out)


def like(name: str, rank: int) -> list[Any]:
    """A shape that follows every extent of value ``name``."""
    return [[name, i] for i in range(rank)]


def draw_extent(ctx: DrawContext, hi: int, lo: int = 1) -> int:
    """An extent in [lo, hi], often 1, a prime or a power of two (odd shapes on purpose)."""

    return base(ctx.data, hi, lo=lo)
