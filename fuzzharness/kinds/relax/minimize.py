"""Graph minimization: simpler graph cases that may still fail the same way.

:func:`propose` lists candidate simplifications of a graph case, biggest first; whoever runs
them (the minimizer's evaluator, or :func:`minimize` here) keeps the first one that still
fails with the same bucket signature, and asks again.  Every candidate is valid by
construction — checked with the model's own shape inference (:meth:`Graph.shapes`), never
by running TVM — and never harder than the case it came from:

``outputs``   drop one output (with everything only it needed), or end the graph earlier:
              an output node's argument becomes the output instead
``cut``       replace a node by a new graph input of its shape: its whole upstream goes
``bypass``    remove a node, its uses redirected to an argument of the same shape
``schedule``  drop one function's trace; drop the layout conversion; the dlight / random /
              MetaSchedule mode → the default pipeline
``attrs``     an attribute toward its plainest value (strides and dilation 1, no padding, one
              group, no float32 accumulator, ``count_include_pad`` on, pad value 0)
``shapes``    one input extent smaller (1, 2, half), alone or together with every input
              extent of the same value (extents that refer to it follow: see the model)

After an edit the fused PrimFuncs of the graph change: a trace whose function is gone is
dropped; a function that kept its name keeps its trace, re-targeted (its fingerprint,
:func:`fuzzharness.execution.relax_run.fingerprint`, updated) — replaying it on smaller extents
mostly works, and when TVM refuses it the candidate is simply not the same bug.  That needs
TVM's legalization (~40 ms) in the minimizing process.

The campaign minimizer (:mod:`fuzzharness.minimize.minimizer`) runs, for a graph case,
:func:`fuzzharness.minimize.passes.minimize_function_traces` (ddmin over each function's trace,
through :func:`function_traces` / :func:`with_function_trace`) and then ``("graph",
propose)`` with its generic ``params`` (the graph's ``dtype``), ``inputs`` and ``options``
passes.  The same-bug predicate needs nothing new: a graph case's bucket signature lists its
operators and per-function schedule primitives as ``primitives``
(:func:`fuzzharness.generators.graphs.spec.graph_primitives`), so a wrong answer shrinks to a subset, as
the predicate expects.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from fuzzharness.core.case import Case
from fuzzharness.core.relax_pipeline import fingerprint, graph_target, legalize, prim_functions
from fuzzharness.generators.graphs.ops.base import elements
from fuzzharness.generators.graphs.program import build_module
from fuzzharness.generators.graphs.spec import Graph, InvalidGraph
from fuzzharness.minimize.passes import ddmin_trace, greedy

FirstInteresting = Callable[[list[Case]], "Case | None"]

#: attribute → plainest values, tried in order (only where the op has the attribute)
PLAIN_ATTRS: dict[str, list[Any]] = {
    "strides": [[1, 1], 1],
    "dilation": [[1, 1]],
    "padding": [[0, 0, 0, 0], 0],
    "groups": [1],
    "acc": [None],
    "count_include_pad": [True],
    "pad_value": [0.0],
}


def propose(case: Case) -> list[Case]:
    """Valid, simpler variants of a graph case, the biggest simplifications first."""
    g = Graph.from_dict(case.params)
    try:
        shapes = g.shapes()
    except InvalidGraph:
        return []
    graphs: list[Graph] = []
    if len(g.outputs) > 1:
        for o in g.outputs:
            h = g.copy()
            h.outputs = [x for x in h.outputs if x != o]
            graphs.append(h.live())
    node_names = {n.name for n in g.nodes}
    for o in g.outputs:  # end the graph earlier: an output node's argument becomes the output
        for a in dict.fromkeys(g.node(o).args):
            if a in node_names and a not in g.outputs:
                h = g.copy()
                h.outputs = [a if x == o else x for x in h.outputs]
                graphs.append(h.live())
    for n in g.nodes:
        graphs.append(g.cut(n.name, shapes))
    for n in g.nodes:
        for a in dict.fromkeys(n.args):
            if shapes[a] == shapes[n.name]:
                graphs.append(g.bypass(n.name, a))
    structural = sorted(_valid(graphs), key=_size)
    out = [_with_graph(case, h) for h in structural if _size(h) < _size(g)]
    out += _schedule_variants(case)
    out += [_with_graph(case, h) for h in _valid(_attr_variants(g) + _shape_variants(g, shapes))]
    seen: set[str] = {case.id}
    unique = []
    for c in out:
        if c.id not in seen:
            seen.add(c.id)
            unique.append(c)
    return unique


def minimize(case: Case, first_interesting: FirstInteresting,
             should_stop: Callable[[], bool] = lambda: False) -> Case:
    """Greedy: apply :func:`propose` until none of its candidates is interesting.

    ``first_interesting(candidates)`` runs candidates (in order) and returns the first that
    still fails the same way, or None.  Candidates already tried are not proposed again.
    """
    return greedy(case, propose, first_interesting, should_stop)


# -- helpers ----------------------------------------------------------------------------------
def _size(g: Graph) -> tuple[int, int, int]:

    shapes = g.shapes()
    return (len(g.nodes), len(g.outputs), sum(elements(s) for s in shapes.values()))


def _valid(graphs: list[Graph]) -> list[Graph]:
    out = []
    for h in graphs:
        try:
            h.shapes()
        except InvalidGraph:
            continue
        out.append(h)
    return out


def _with_graph(case: Case, g: Graph) -> Case:
    origin = {k: v for k, v in case.origin.items() if k not in ("choices", "steps")}
    origin.setdefault("minimized_from", case.origin.get("minimized_from") or case.id)
    origin["ops"] = g.ops()
    origin["dtype"] = g.dtype
    new = case.replace(workload={"name": case.workload_name, "params": g.to_dict()},
                       origin=origin)
    return refresh_schedule(new)


def refresh_schedule(case: Case) -> Case:
    """Keep only the traces whose function the (edited) graph still has, unchanged; a mode
    left without traces, or a layout conversion with no convolution left, is dropped."""
    schedule = dict(case.schedule)
    g = Graph.from_dict(case.params)
    if schedule.get("layout") and "conv2d" not in g.ops():
        schedule["layout"] = None
    functions = schedule.get("functions") or {}
    if functions:
        try:
            funcs = prim_functions(legalize(build_module(g), graph_target(case.target),
                                            schedule.get("layout")))
        except Exception:  # noqa: BLE001 - the candidate's run will say what fails
            return case.replace(schedule=schedule)
        # a function that kept its name keeps its trace, re-targeted at the function as it
        # is now: replaying it either works (the extents changed, the structure did not) or
        # TVM refuses it (schedule_rejected: not the bug, so not kept by the minimizer)
        functions = {n: dict(e, fingerprint=fingerprint(funcs[n]))
                     for n, e in functions.items() if n in funcs}
        schedule["functions"] = functions
    if schedule.get("source") in ("graph:random", "graph:metaschedule") and not functions:
        schedule["source"] = "graph:default"
    return case.replace(schedule=schedule)


def _schedule_variants(case: Case) -> list[Case]:
    schedule = case.schedule or {}
    out = []

    def variant(**changes):
        return case.replace(schedule=dict(schedule, **changes))

    functions = schedule.get("functions") or {}
    if schedule.get("source", "graph:default") != "graph:default":
        out.append(variant(source="graph:default", functions={}))
    for name in sorted(functions):
        rest = {k: v for k, v in functions.items() if k != name}
        out.append(variant(functions=rest) if rest else
                   variant(functions={}, source="graph:default"))
    if schedule.get("layout"):
        out.append(refresh_schedule(variant(layout=None)))
    return out


def _attr_variants(g: Graph) -> list[Graph]:
    out = []
    for i, n in enumerate(g.nodes):
        for key, plain in PLAIN_ATTRS.items():
            if key not in n.attrs:
                continue
            cur = n.attrs[key]
            simpler = [v for v in plain if v != cur and
                       (v is None or cur is None or type(v) is type(cur))]
            if simpler:
                h = g.copy()
                h.nodes[i].attrs[key] = copy.deepcopy(simpler[0])
                out.append(h)
    return out


def _smaller(v: int) -> list[int]:
    return sorted({x for x in (1, 2, v // 2) if 1 <= x < v})


def _shape_variants(g: Graph, shapes) -> list[Graph]:
    out = []
    values = sorted({d for i in g.inputs for d in i["shape"] if isinstance(d, int) and d > 1},
                    reverse=True)
    for v in values:  # every input extent equal to v at once (extents tied by the model)
        for x in _smaller(v):
            h = g.copy()
            for i in h.inputs:
                i["shape"] = [x if d == v else d for d in i["shape"]]
            out.append(h)
    for k, spec in enumerate(g.inputs):  # one extent alone
        for axis, d in enumerate(spec["shape"]):
            if isinstance(d, int) and d > 1:
                for x in _smaller(d):
                    h = g.copy()
                    h.inputs[k]["shape"][axis] = x
                    out.append(h)
    return out


# -- per-function traces, for a trace minimizer ------------------------------------------------------
def function_traces(case: Case) -> dict[str, Any]:
    """``{fused function name: its stored trace}`` (TVM ``Trace.as_json`` data).

    A trace minimizer that works on ``case.trace`` (the minimizer engineer's ddmin over trace
    instructions with their dependents) works on a graph case one function at a time::

        for name, trace in function_traces(case).items():
            smaller = <ddmin over trace>, each candidate = with_function_trace(case, name, t)
    """
    return {n: e.get("trace") for n, e in sorted(((case.schedule or {}).get("functions") or {}).items())}


def with_function_trace(case: Case, name: str, trace: Any) -> Case:
    """``case`` with function ``name``'s trace replaced (an empty trace drops the entry)."""
    schedule = dict(case.schedule)
    functions = dict(schedule.get("functions") or {})
    if trace and trace[0]:
        functions[name] = dict(functions[name], trace=trace)
    else:
        functions.pop(name, None)
    schedule["functions"] = functions
    if not functions and schedule.get("source") in ("graph:random", "graph:metaschedule"):
        schedule["source"] = "graph:default"
    origin = {k: v for k, v in case.origin.items() if k not in ("choices", "steps")}
    origin.setdefault("minimized_from", case.origin.get("minimized_from") or case.id)
    return case.replace(schedule=schedule, origin=origin)


def minimize_function_traces(case: Case, first_interesting: Callable[[list[Case]], Case | None],
                             should_stop: Callable[[], bool]) -> Case:
    """ddmin over each fused function's trace of a Relax graph case, one function at a time.

    The same removals as :func:`minimize_trace` (an instruction with its dependents, then
    dead lookups); a candidate that no longer replays is left to the worker, which calls it
    ``schedule_rejected`` — not the same bug, so not kept.
    """
    for name in list(function_traces(case)):
        case = ddmin_trace(case, lambda c, n=name: function_traces(c).get(n),
                            lambda c, t, n=name: with_function_trace(c, n, t),
                            first_interesting, should_stop)
    return case
