"""Elementwise operators: activations (unary) and broadcasting binary arithmetic.

Unary: ``relu``, ``gelu`` (erf form), ``gelu_tanh``, ``sigmoid``, ``tanh``, ``exp``, ``abs``,
``neg``.  Binary (numpy broadcasting, either operand may be the broadcast one): ``add``,
``sub``, ``mul``, ``max``, ``min`` — the second operand is another value of a compatible
shape or a new input: same shape, or a *bias*-like shape that keeps some extents and is 1
elsewhere (``[1, C, 1, 1]`` after an NCHW convolution), possibly of lower rank.

What TVM 0.27's legalization computes (``tests/test_graphs.py`` checks the TIR), all in the
graph dtype unless said otherwise, and the bound rule used (:mod:`fuzzharness.oracles.bounds`):

``relu``       ``max(x, 0)`` — exact
``gelu``       ``x · (0.5 + erf(x · 0.70710678) · 0.5)``; ``erf`` in float32 (a float16
               operand is cast up and the result cast back), the rest in the graph dtype
``gelu_tanh``  ``(0.5·x) · (1 + tanh((0.79788456·x) · (1 + (0.044715·x)·x)))``
``sigmoid``, ``tanh``, ``exp``  the rules of :mod:`fuzzharness.generators.workloads.chain` (shared)
``abs``, ``neg``, ``max``, ``min``  exact; ``add``, ``sub``, ``mul``  one rounding each
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzzharness.generators.graphs.nodes import Node, Shape
from fuzzharness.generators.graphs.ops.base import (
    MAX_ELEMENTS,
    DrawContext,
    GraphOp,
    elements,
    register_op,
    require,
)
from fuzzharness.generators.workloads.chain import OPS as CHAIN_OPS
from fuzzharness.oracles import bounds


class Unary(GraphOp):
    chain: str = ""  # the chain operation whose bound and magnitude rules apply

    def draw(self, ctx: DrawContext) -> Node | None:
        x = ctx.pick()
        return None if x is None else ctx.node(self.name, [x], {})

    def infer(self, shapes: list[Shape], attrs: dict[str, Any]) -> Shape:
        require(len(shapes) == 1, f"{self.name} takes one argument")
        return shapes[0]

    def reference(self, args, attrs, dtype):
        return CHAIN_OPS[self.chain].bound(args[0], None, dtype)

    def magnitude(self, mags, shapes, attrs):
        return CHAIN_OPS[self.chain].magnitude(mags[0], 0.0)


def _unary(name: str, chain: str, relax_op: str, exact: bool, emit):
    cls = type(name.title().replace("_", ""), (Unary,), {
        "name": name, "chain": chain, "integer_exact": exact, "relax_ops": (relax_op,),
        "emit": lambda self, args, shapes, attrs, dtype: emit(args[0])})
    return register_op(cls)


def _relax():
    from tvm import relax

    return relax.op


_unary("relu", "relu", "nn.relu", True, lambda x: _relax().nn.relu(x))
_unary("sigmoid", "sigmoid", "sigmoid", False, lambda x: _relax().sigmoid(x))
_unary("tanh", "tanh", "tanh", False, lambda x: _relax().tanh(x))
_unary("exp", "exp", "exp", False, lambda x: _relax().exp(x))
_unary("abs", "abs", "abs", True, lambda x: _relax().abs(x))
_unary("neg", "neg", "negative", True, lambda x: _relax().negative(x))

SQRT1_2 = 0.70710678118654757
SQRT_2_OVER_PI = 0.79788456080286541
GELU_CUBIC = 0.044714999999999998


@register_op
class Gelu(Unary):
    name = "gelu"
    relax_ops = ("nn.gelu",)

    def emit(self, args, shapes, attrs, dtype):
        return _relax().nn.gelu(args[0])

    def reference(self, args, attrs, dtype):
        x = args[0]
        c = bounds.const
        t = bounds.mul(x, c(SQRT1_2, dtype), dtype)
        e = bounds.cast(bounds.erf(bounds.cast(t, "float32"), "float32"), dtype)
        half = bounds.add(c(0.5, dtype), bounds.mul(e, c(0.5, dtype), dtype), dtype)
        return bounds.mul(x, half, dtype)

    def magnitude(self, mags, shapes, attrs):
        return mags[0]


@register_op
class GeluTanh(Unary):
    name = "gelu_tanh"
    relax_ops = ("nn.gelu_tanh",)

    def emit(self, args, shapes, attrs, dtype):
        return _relax().nn.gelu_tanh(args[0])

    def reference(self, args, attrs, dtype):
        x = args[0]
        c = bounds.const
        half_x = bounds.mul(c(0.5, dtype), x, dtype)
        k = bounds.mul(c(SQRT_2_OVER_PI, dtype), x, dtype)
        cubic = bounds.mul(bounds.mul(c(GELU_CUBIC, dtype), x, dtype), x, dtype)
        inner = bounds.mul(k, bounds.add(c(1.0, dtype), cubic, dtype), dtype)
        return bounds.mul(half_x, bounds.add(c(1.0, dtype), bounds.tanh(inner, dtype), dtype),
                          dtype)

    def magnitude(self, mags, shapes, attrs):
        m = mags[0]
        return max(m, SQRT_2_OVER_PI * m * (1 + GELU_CUBIC * m * m))  # the tanh argument


# -- binary ------------------------------------------------------------------------------------
def broadcast(a: Shape, b: Shape) -> Shape:
    rank = max(len(a), len(b))
    a1, b1 = (1,) * (rank - len(a)) + tuple(a), (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a1, b1, strict=True):
        require(x == y or x == 1 or y == 1, f"shapes {a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


class Binary(GraphOp):
    chain: str = ""

    def draw(self, ctx: DrawContext) -> Node | None:
        x = ctx.pick()
        if x is None:
            return None
        shape = ctx.shapes[x]
        rank = len(shape)
        kind = ctx.draw(st.sampled_from(["new_same", "new_bias", "value"]))
        other = None
        if kind == "value":  # another value that broadcasts against x without growing x
            other = ctx.pick(lambda s: s != () and _fits(s, shape))
        if other is None and kind != "new_same":
            # keep a drawn subset of the trailing axes (1 elsewhere); leading axes may go
            drop = ctx.draw(st.integers(0, max(rank - 1, 0)))
            keep = [ctx.draw(st.booleans()) for _ in range(rank)]
            dims: list[Any] = [[x, i] if keep[i] else 1 for i in range(rank)][drop:]
            other = ctx.new_input("b", dims or [1])
        if other is None:
            other = ctx.new_input("y", [[x, i] for i in range(rank)], data=True)
        args = [x, other] if ctx.draw(st.booleans()) else [other, x]
        if elements(broadcast(ctx.shapes[args[0]], ctx.shapes[args[1]])) > MAX_ELEMENTS:
            return None
        return ctx.node(self.name, args, {})

    def infer(self, shapes, attrs):
        require(len(shapes) == 2, f"{self.name} takes two arguments")
        return broadcast(shapes[0], shapes[1])

    def reference(self, args, attrs, dtype):
        return CHAIN_OPS[self.chain].bound(args[0], args[1], dtype)

    def magnitude(self, mags, shapes, attrs):
        return CHAIN_OPS[self.chain].magnitude(mags[0], mags[1])


def _fits(small: Shape, big: Shape) -> bool:
    """``small`` broadcasts against ``big`` and the result has ``big``'s shape."""
    if len(small) > len(big):
        return False
    return all(s == b or s == 1 for s, b in zip(small[::-1], big[::-1], strict=False))


def _binary(name: str, chain: str, relax_op: str):
    cls = type(name.title(), (Binary,), {
        "name": name, "chain": chain, "integer_exact": True, "relax_ops": (relax_op,),
        "weight": 2 if name == "add" else 1,
        "emit": lambda self, args, shapes, attrs, dtype: getattr(_relax(), relax_op)(*args)})
    return register_op(cls)


_binary("add", "add", "add")
_binary("sub", "sub", "subtract")
_binary("mul", "mul", "multiply")
_binary("max", "max", "maximum")
_binary("min", "min", "minimum")
