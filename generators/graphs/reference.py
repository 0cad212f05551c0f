"""The float64 reference of a whole graph, with per-element error bounds composed per op.

Every graph input is drawn (:mod:`fuzzharness.generators.inputs`) and rounded once to the graph dtype:
that rounded array is what the compiled graph receives and what the reference starts from
(:meth:`fuzzharness.oracles.bounds.Approx.exact`, error 0).  Each node then applies its operator's
``reference`` (:mod:`fuzzharness.generators.graphs.ops`) to its arguments' :class:`~fuzzharness.oracles.bounds.Approx`
— value and running error bound — so an error made early is carried, and amplified or
damped, by everything downstream.  Outputs are stored in the graph dtype
(:func:`fuzzharness.oracles.bounds.to_expected`).

Magnitudes (:func:`magnitudes`): a worst-case bound on every value's ``|value|`` when every
input is bounded by ``s``, from each op's ``magnitude`` rule (and ``peak``: the largest
intermediate inside the op, e.g. the sum under softmax's division).  :func:`input_scale` is
the largest ``2^-j ≤ 1`` keeping every peak below ``max/16`` of the graph dtype, so no
distribution can overflow an intermediate; :func:`int_max` the largest integer input
magnitude keeping every value an integer exactly representable in the graph dtype (the
exact-integer mode, offered only when every op is ``integer_exact``; then every
intermediate is an exact integer and the outputs must match bit for bit).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fuzzharness.generators.graphs.ops import graph_ops
from fuzzharness.generators.graphs.spec import Graph
from fuzzharness.generators.inputs import InputSpec
from fuzzharness.oracles import bounds, numerics
from fuzzharness.oracles.bounds import Approx, Expected

HEADROOM = 16.0  # intermediates stay below max/HEADROOM (as the workloads' safe_scale)


def evaluate(graph: Graph, inputs: dict[str, np.ndarray]) -> dict[str, Approx]:
    """Every value of the graph (inputs and nodes) in float64 with its error bound."""
    shapes = graph.shapes()
    env: dict[str, Approx] = {}
    for spec in graph.inputs:
        a = np.asarray(inputs[spec["name"]]).astype(np.float64)
        if a.shape != shapes[spec["name"]]:
            raise ValueError(f"input {spec['name']}: shape {a.shape} != {shapes[spec['name']]}")
        env[spec["name"]] = Approx.exact(a, graph.dtype)
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            op = graph_ops[node.op]
            out = op.reference([env[a] for a in node.args], node.attrs, graph.dtype)
            if out.value.shape != shapes[node.name]:  # a reference bug, never TVM's
                raise AssertionError(f"{node.name} ({node.op}): reference shape "
                                     f"{out.value.shape} != inferred {shapes[node.name]}")
            env[node.name] = out
    return env


def expected(graph: Graph, inputs: dict[str, np.ndarray], *, exact: bool = False) -> dict[str, Expected]:
    env = evaluate(graph, inputs)
    out = {}
    for name in graph.outputs:
        e = bounds.to_expected(env[name], graph.dtype, f"graph/{graph.node(name).op}")
        out[name] = bounds.exact_mode(e) if exact else e
    return out


# -- magnitudes ------------------------------------------------------------------------------
def magnitudes(graph: Graph, scale: float) -> tuple[dict[str, float], float]:
    """(worst-case |value| per value, the largest intermediate anywhere) for inputs ≤ scale."""
    shapes = graph.shapes()
    mags: dict[str, float] = {i["name"]: scale for i in graph.inputs}
    peak = scale
    for node in graph.nodes:
        op = graph_ops[node.op]
        args = [mags[a] for a in node.args]
        arg_shapes = [shapes[a] for a in node.args]
        m = float(op.magnitude(args, arg_shapes, node.attrs))
        inner = getattr(op, "peak", None)
        p = float(inner(args, arg_shapes, node.attrs)) if inner is not None else m
        mags[node.name] = m
        peak = max(peak, m, p)
    return mags, peak


def input_scale(graph: Graph) -> float:
    limit = numerics.fmt(graph.dtype).max / HEADROOM
    s = 1.0
    for _ in range(120):
        if magnitudes(graph, s)[1] <= limit:
            return s
        s /= 2
    return 0.0


def exact_capable(graph: Graph) -> bool:
    return all(graph_ops[n.op].exact_for(n.attrs) for n in graph.nodes)


def int_max(graph: Graph) -> int:
    """Largest integer input magnitude with every value an exact integer (0: no such mode)."""
    if not exact_capable(graph):
        return 0
    cap = numerics.fmt(graph.dtype).max_exact_int
    for n in graph.nodes:  # an fp32 accumulator still ends in the graph dtype: its cap rules
        if n.attrs.get("acc"):
            cap = min(cap, numerics.fmt(n.attrs["acc"]).max_exact_int)
    lo, hi, best = 1, cap, 0
    while lo <= hi:  # the magnitude rules are monotone in the input magnitude
        mid = (lo + hi) // 2
        if magnitudes(graph, float(mid))[1] <= cap:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def input_specs(graph: Graph) -> list[Any]:

    shapes = graph.shapes()
    scale, m = input_scale(graph), int_max(graph)
    return [InputSpec(i["name"], shapes[i["name"]], graph.dtype, scale=scale, int_max=m)
            for i in graph.inputs]
