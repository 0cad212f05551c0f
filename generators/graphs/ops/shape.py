"""Data movement: reshape, transpose, layout_transform, concatenate — all exact (bound 0
added; an element keeps the error it had).

``reshape``           ``merge`` two adjacent axes, or ``split`` one axis by a factor that
                      divides it (attributes relative to the input's shape, so the node
                      stays valid when the minimizer shrinks extents)
``transpose``         ``relax.op.permute_dims`` with a drawn permutation
``layout_transform``  ``pack``: axis ``a`` → ``(a // f, …, a % f)`` moved last (NCHW →
                      NCHW{f}c), padded with ``pad_value`` when ``f`` does not divide it;
                      ``unpack``: the inverse for a value whose last axis is the packed one
``concat``            two or three values along an axis (the others equal); the extra
                      operands are values that fit or new inputs
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from fuzzharness.generators.graphs.nodes import Node
from fuzzharness.generators.graphs.ops.base import (
    MAX_ELEMENTS,
    DrawContext,
    GraphOp,
    elements,
    norm_axis,
    register_op,
    require,
)
from fuzzharness.oracles import numerics
from fuzzharness.oracles.bounds import Approx


def _approx(a: Approx, fn) -> Approx:
    return Approx(fn(a.value), fn(np.broadcast_to(a.err, a.value.shape)), a.dtype, a.notes)


class Movement(GraphOp):
    integer_exact = True

    def magnitude(self, mags, shapes, attrs):
        return max(mags)


@register_op
class Reshape(Movement):
    name = "reshape"
    relax_ops = ("reshape",)

    def draw(self, ctx: DrawContext) -> Node | None:
        x = ctx.pick()
        if x is None:
            return None
        shape = ctx.shapes[x]
        mode = ctx.draw(st.sampled_from(["merge", "split"]))
        if mode == "merge" and len(shape) >= 2:
            return ctx.node(self.name, [x], {"mode": "merge",
                                             "axis": ctx.draw(st.integers(0, len(shape) - 2))})
        axis = ctx.draw(st.integers(0, len(shape) - 1))
        factors = [f for f in range(2, shape[axis]) if shape[axis] % f == 0] or [1]
        return ctx.node(self.name, [x], {"mode": "split", "axis": axis,
                                         "factor": ctx.draw(st.sampled_from(factors))})

    def infer(self, shapes, attrs):
        require(len(shapes) == 1, "reshape takes one argument")
        s, a = list(shapes[0]), attrs["axis"]
        if attrs["mode"] == "merge":
            require(0 <= a < len(s) - 1, f"reshape: cannot merge axis {a} of {tuple(s)}")
            return (*s[:a], s[a] * s[a + 1], *s[a + 2:])
        require(attrs["mode"] == "split" and 0 <= a < len(s), "reshape: bad attributes")
        f = attrs["factor"]
        require(f >= 1 and s[a] % f == 0, f"reshape: {f} does not divide {s[a]}")
        return (*s[:a], f, s[a] // f, *s[a + 1:])

    def emit(self, args, shapes, attrs, dtype):
        from tvm import relax

        return relax.op.reshape(args[0], self.infer(shapes, attrs))

    def reference(self, args, attrs, dtype):
        out = self.infer([args[0].value.shape], attrs)
        return _approx(args[0], lambda a: np.reshape(a, out))


@register_op
class Transpose(Movement):
    name = "transpose"
    relax_ops = ("permute_dims",)

    def draw(self, ctx: DrawContext) -> Node | None:
        x = ctx.pick(lambda s: len(s) >= 2)
        if x is None:
            return None
        perm = ctx.draw(st.permutations(range(len(ctx.shapes[x]))))
        return ctx.node(self.name, [x], {"axes": list(perm)})

    def infer(self, shapes, attrs):
        require(len(shapes) == 1 and sorted(attrs["axes"]) == list(range(len(shapes[0]))),
                "transpose: axes must permute the input's axes")
        return tuple(shapes[0][a] for a in attrs["axes"])

    def emit(self, args, shapes, attrs, dtype):
        from tvm import relax

        return relax.op.permute_dims(args[0], attrs["axes"])

    def reference(self, args, attrs, dtype):
        return _approx(args[0], lambda a: np.transpose(a, attrs["axes"]))


@register_op
class LayoutTransform(Movement):
    name = "layout_transform"
    relax_ops = ("layout_transform",)

    def draw(self, ctx: DrawContext) -> Node | None:
        x = ctx.pick(lambda s: len(s) >= 2)
        if x is None:
            return None
        shape = ctx.shapes[x]
        if ctx.draw(st.booleans()) and len(shape) >= 3 and shape[-1] in (2, 4, 8):
            axis = ctx.draw(st.integers(0, len(shape) - 2))
            return ctx.node(self.name, [x], {"mode": "unpack", "axis": axis})
        axis = ctx.draw(st.integers(0, len(shape) - 1))
        factor = ctx.draw(st.sampled_from([4, 2, 8, 3]))
        pad = ctx.draw(st.sampled_from([0.0, 1.0, -2.5]))
        attrs = {"mode": "pack", "axis": axis, "factor": factor, "pad_value": pad}
        if elements(self.infer([shape], attrs)) > MAX_ELEMENTS:
            return None
        return ctx.node(self.name, [x], attrs)

    def infer(self, shapes, attrs):
        require(len(shapes) == 1, "layout_transform takes one argument")
        s, a = list(shapes[0]), attrs["axis"]
        if attrs["mode"] == "unpack":
            require(len(s) >= 3 and 0 <= a < len(s) - 1, "layout_transform: bad unpack axis")
            return tuple([*s[:a], s[a] * s[-1], *s[a + 1:-1]])
        require(attrs["mode"] == "pack" and 0 <= a < len(s) and attrs["factor"] >= 1,
                "layout_transform: bad attributes")
        f = attrs["factor"]
        return tuple([*s[:a], -(-s[a] // f), *s[a + 1:], f])

    def emit(self, args, shapes, attrs, dtype):
        from tvm import relax
        from tvm.tirx import IndexMap

        rank, a = len(shapes[0]), attrs["axis"]
        if attrs["mode"] == "pack":
            f = attrs["factor"]

            def fn(*ix):
                return [*ix[:a], ix[a] // f, *ix[a + 1:], ix[a] % f]
            pad = attrs["pad_value"] if shapes[0][a] % f else None
        else:
            f = shapes[0][-1]

            def fn(*ix):
                return [*ix[:a], ix[a] * f + ix[-1], *ix[a + 1:-1]]
            pad = None
        index_map = IndexMap.from_func(fn, ndim=rank)
        return relax.op.layout_transform(args[0], index_map=index_map, pad_value=pad)

    def reference(self, args, attrs, dtype):
        x = args[0]
        a = attrs["axis"]
        rank = x.value.ndim
        if attrs["mode"] == "unpack":
            def fn(v):  # (..., Co, ..., f) → (..., Co*f, ...)
                v = np.moveaxis(v, -1, a + 1)
                return v.reshape(*v.shape[:a], v.shape[a] * v.shape[a + 1], *v.shape[a + 2:])
            return _approx(x, fn)
        f = attrs["factor"]
        n = x.value.shape[a]
        extra = -n % f

        def pack(v, fill):
            width = [(0, 0)] * rank
            width[a] = (0, extra)
            v = np.pad(v, width, constant_values=fill)
            v = v.reshape(*v.shape[:a], v.shape[a] // f, f, *v.shape[a + 1:])
            return np.moveaxis(v, a + 1, -1)

        pad = float(numerics.round_to(np.float64(attrs["pad_value"]), dtype))
        return Approx(pack(x.value, pad), pack(np.broadcast_to(x.err, x.value.shape), 0.0),
                      dtype, x.notes)

    def magnitude(self, mags, shapes, attrs):
        return max(mags[0], abs(attrs.get("pad_value", 0.0)))

    def exact_for(self, attrs) -> bool:
        # a fractional pad value (-2.5) would put non-integers into the exact-integer mode,
        # where the magnitude caps assume integers
        return float(attrs.get("pad_value", 0.0)).is_integer()


@register_op
class Concat(Movement):
    name = "concat"
    relax_ops = ("concat",)

    def draw(self, ctx: DrawContext) -> Node | None:
        x = ctx.pick()
        if x is None:
            return None
        shape = ctx.shapes[x]
        rank = len(shape)
        axis = ctx.draw(st.integers(0, rank - 1))
        args = [x]
        for _ in range(ctx.draw(st.integers(1, 2))):
            other = None
            if ctx.draw(st.booleans()):
                other = ctx.pick(lambda s: len(s) == rank and all(
                    s[i] == shape[i] for i in range(rank) if i != axis))
            if other is None:
                dims = [[x, i] if i != axis else ctx.draw(st.integers(1, 8)) for i in range(rank)]
                other = ctx.new_input("y", dims, data=True)
            args.append(other)
        if ctx.draw(st.booleans()):
            args.reverse()
        attrs = {"axis": axis - rank if ctx.draw(st.booleans()) else axis}
        if elements(self.infer([ctx.shapes[a] for a in args], attrs)) > MAX_ELEMENTS:
            return None
        return ctx.node(self.name, args, attrs)

    def infer(self, shapes, attrs):
        require(len(shapes) >= 2, "concat takes two or more values")
        rank = len(shapes[0])
        a = norm_axis(attrs["axis"], rank)
        for s in shapes[1:]:
            require(len(s) == rank and all(s[i] == shapes[0][i] for i in range(rank) if i != a),
                    f"concat: {shapes} do not match outside axis {a}")
        return (*shapes[0][:a], sum(s[a] for s in shapes), *shapes[0][a + 1:])

    def emit(self, args, shapes, attrs, dtype):
        from tvm import relax

        return relax.op.concat(args, axis=attrs["axis"])

    def reference(self, args, attrs, dtype):
        a = norm_axis(attrs["axis"], args[0].value.ndim)
        notes: tuple[str, ...] = ()
        for x in args:
            notes += tuple(n for n in x.notes if n not in notes)
        return Approx(np.concatenate([x.value for x in args], axis=a),
                      np.concatenate([np.broadcast_to(x.err, x.value.shape) for x in args],
                                     axis=a), dtype, notes)
