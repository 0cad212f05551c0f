"""Elementwise chains with broadcasting: ``out = f_n(… f_1(X, Y) …, Z)``.

One block per operation (``<op>_<i>``, see :mod:`fuzzharness.generators.workloads.chain`) so that
``compute_inline``/``reverse_compute_inline``/``compute_at`` have targets.  ``X`` has the
output's shape; ``Y`` and ``Z`` are broadcast along any subset of the trailing dimensions
(numpy rules: a lower rank, or extent 1).  Error model: the running error bound of
:mod:`fuzzharness.oracles.bounds` along the chain (ulp-based rules for ``exp``/``sigmoid``/``tanh``);
integer chains (int8 → int32, and the exact-integer mode when the chain has no
transcendental) are exact.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzzharness.generators.inputs import InputSpec
from fuzzharness.generators.workloads import chain
from fuzzharness.generators.workloads.base import (
    ALL_SPECIALS,
    DTYPE_LABELS,
    GenOptions,
    TensorSpec,
    Workload,
    buf,
    draw_extent,
    draw_label,
    register,
)
from fuzzharness.oracles import bounds, numerics
from fuzzharness.oracles.bounds import Approx

MAX_EXTENT = {1: 1024, 2: 64, 3: 16, 4: 8}


@register
class Elementwise(Workload):
    name = "elementwise"
    description = "a chain of 1-3 elementwise operations with broadcast operands"
    dtype_labels = tuple(DTYPE_LABELS)

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        label = draw_label(data, self, options)
        rank = data.draw(st.integers(1, 4))
        shape = [draw_extent(data, MAX_EXTENT[rank]) for _ in range(rank)]
        broadcast = {}
        for name in ("Y", "Z"):
            r = data.draw(st.integers(1, rank))
            keep = [data.draw(st.booleans()) for _ in range(r)]
            broadcast[name] = keep
        names = chain.op_names(integer_only=label == "int8")
        steps = []
        for _ in range(data.draw(st.integers(1, 3))):
            op = data.draw(st.sampled_from(names))
            arg = data.draw(st.sampled_from(["X", "Y", "Z"])) if chain.OPS[op].arity == 2 else None
            steps.append({"op": op, "arg": arg})
        return {"shape": shape, "broadcast": broadcast, "steps": steps, "dtype": label}

    # -- shapes ---------------------------------------------------------------------------
    def _operands(self, p) -> dict[str, chain.Operand]:
        din = DTYPE_LABELS[p["dtype"]][0]
        shape = tuple(p["shape"])
        rank = len(shape)
        ops = {"X": chain.Operand("X", shape, ", ".join(f"v{i}" for i in range(rank)), din)}
        for name, keep in p["broadcast"].items():
            r = len(keep)
            dims = [shape[rank - r + d] if k else 1 for d, k in enumerate(keep)]
            index = ", ".join(f"v{rank - r + d}" if k else "0" for d, k in enumerate(keep))
            ops[name] = chain.Operand(name, tuple(dims), index, din)
        return ops

    def _used(self, p) -> list[str]:
        used = {"X"} | {s["arg"] for s in p["steps"] if s["arg"]}
        return [n for n in ("X", "Y", "Z") if n in used]

    def source(self, p: dict[str, Any]) -> str:
        din, compute, dout = DTYPE_LABELS[p["dtype"]]
        ops = self._operands(p)
        shape = tuple(p["shape"])
        params = ", ".join(f"{n}: {buf(ops[n].shape, din)}" for n in self._used(p))
        allocs, nests = chain.emit(p["steps"], chain.load(ops["X"], compute), ops, shape,
                                   compute, dout, "out")
        return f'''
@T.prim_func(s_tir=True)
def main({params}, out: {buf(shape, dout)}):
{allocs}{nests}'''

    def inputs(self, p: dict[str, Any]) -> list[InputSpec]:
        din, compute, dout = DTYPE_LABELS[p["dtype"]]
        ops = self._operands(p)
        used = self._used(p)
        base = float(numerics.int_range(din)[1]) if numerics.is_int(din) else 1.0
        scale = chain.safe_scale(p["steps"], used, (compute, dout), base=base)
        m = chain.exact_int_max(p["steps"], used, din, (compute, dout))
        if numerics.is_int(din):
            scale = float(min(int(scale), m))
        specials = ALL_SPECIALS if numerics.is_float(din) and chain.nan_safe(p["steps"]) else ()
        return [InputSpec(n, ops[n].shape, din, scale=scale, int_max=m, specials=specials)
                for n in used]

    def outputs(self, p: dict[str, Any]) -> list[TensorSpec]:
        return [TensorSpec("out", tuple(p["shape"]), DTYPE_LABELS[p["dtype"]][2])]

    def reference(self, p, inputs, numerics_):
        din, compute, dout = DTYPE_LABELS[p["dtype"]]
        approx = {n: Approx.exact(inputs[n], din) for n in self._used(p)}
        result = chain.reference(p["steps"], approx["X"], approx, compute)
        return {"out": bounds.to_expected(result, dout, "elementwise")}
