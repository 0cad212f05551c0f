"""The graph model: a small dataflow graph of tensor operators as plain JSON data.

A graph case stores its graph in ``case.workload["params"]`` (workload name ``"graph"``)::

    {"dtype": "float32",
     "inputs":  [{"name": "x0", "shape": [1, 3, 9, 9]},
                 {"name": "w0", "shape": [8, ["x0", 1], 3, 3]},
                 {"name": "b0", "shape": [1, ["n0", 1], 1, 1]}],
     "nodes":   [{"name": "n0", "op": "conv2d", "args": ["x0", "w0"], "attrs": {...}},
                 {"name": "n1", "op": "add", "args": ["n0", "b0"], "attrs": {}}],
     "outputs": ["n1"]}

* ``dtype`` is the graph's dtype (``float32`` or ``float16``): every input has it, every op
  computes in it except where the op itself says otherwise (an op may accumulate in float32
  and cast back, see its ``attrs``);
* an input's shape is a list of extents; an extent is an int, or a *reference*
  ``[value, axis]`` / ``[value, axis, divisor]`` — the extent of another value (an input or
  a node) along ``axis``, divided by ``divisor``.  References make shapes follow each other:
  a weight's input channels follow the activation it is applied to, a bias follows the
  channels of the node it is added to, so shrinking one extent keeps the graph valid;
* a node applies a registered operator (:mod:`fuzzharness.generators.graphs.ops`) to earlier values;
  its output shape is inferred (:meth:`Graph.shapes`), never stored;
* ``outputs`` names nodes (at least one); the compiled function returns them in this order
  (a tuple when there are several).

Invariants (checked by :meth:`Graph.shapes`, which raises :class:`InvalidGraph`): names are
unique; a node uses only inputs and earlier nodes; an input's references point to values
that are resolved before the input's first use (no cycles); every operator accepts its
argument shapes and attributes.  Nothing here imports TVM: the model, its validation and its
edits (the minimizer's) are pure Python.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from fuzzharness.core.kinds import RELAX_WORKLOAD
from fuzzharness.core.traces import trace_primitives
from fuzzharness.generators.graphs.nodes import InvalidGraph, Node, Shape
from fuzzharness.generators.graphs.ops import graph_ops

GRAPH_WORKLOAD = RELAX_WORKLOAD  # the workload name of a graph case (fuzzharness.core.kinds)
DTYPES = ("float32", "float16")


@dataclasses.dataclass
class Graph:
    dtype: str
    inputs: list[dict[str, Any]]  # {"name", "shape": [int | [value, axis(, divisor)]]}
    nodes: list[Node]
    outputs: list[str]

    # -- JSON -----------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Graph:
        try:
            return cls(str(d["dtype"]), [dict(i) for i in d["inputs"]],
                       [Node(n["name"], n["op"], list(n["args"]), dict(n.get("attrs") or {}))
                        for n in d["nodes"]], list(d["outputs"]))
        except (KeyError, TypeError) as e:
            raise InvalidGraph(f"not a graph spec: {type(e).__name__}: {e}") from None

    def to_dict(self) -> dict[str, Any]:
        # a JSON round trip: plain lists and dicts only, nothing shared with self
        return json.loads(json.dumps({"dtype": self.dtype, "inputs": self.inputs,
                                      "nodes": [n.to_dict() for n in self.nodes],
                                      "outputs": self.outputs}))

    def copy(self) -> Graph:
        return Graph.from_dict(copy.deepcopy(self.to_dict()))

    # -- lookups ----------------------------------------------------------------------------
    def input_names(self) -> list[str]:
        return [i["name"] for i in self.inputs]

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def users(self, name: str) -> list[Node]:
        return [n for n in self.nodes if name in n.args]

    def ops(self) -> list[str]:
        return sorted({n.op for n in self.nodes})

    # -- shapes -------------------------------------------------------------------------------
    def shapes(self) -> dict[str, Shape]:
        """Every value's shape (inputs and nodes), validating the whole graph on the way."""
        if self.dtype not in DTYPES:
            raise InvalidGraph(f"graph dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        names = self.input_names() + [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise InvalidGraph("value names are not unique")
        if not self.nodes or not self.outputs:
            raise InvalidGraph("a graph needs at least one node and one output")
        pending = {i["name"]: i for i in self.inputs}
        shapes: dict[str, Shape] = {}

        def resolve(name: str, stack: tuple[str, ...]) -> Shape:
            if name in shapes:
                return shapes[name]
            if name not in pending:
                raise InvalidGraph(f"{stack[-1] if stack else '?'} refers to {name!r}, which is "
                                   "not defined before it")
            if name in stack:
                raise InvalidGraph(f"cyclic shape references through {name!r}")
            dims = []
            for d in pending[name]["shape"]:
                if isinstance(d, int) and not isinstance(d, bool):
                    dims.append(d)
                    continue
                if not (isinstance(d, list) and len(d) in (2, 3)):
                    raise InvalidGraph(f"input {name}: bad extent {d!r}")
                ref = resolve(d[0], (*stack, name))
                axis = int(d[1])
                if not -len(ref) <= axis < len(ref):
                    raise InvalidGraph(f"input {name}: {d[0]} has no axis {axis}")
                extent = ref[axis]
                if len(d) == 3:
                    if extent % int(d[2]):
                        raise InvalidGraph(f"input {name}: {extent} is not divisible by {d[2]}")
                    extent //= int(d[2])
                dims.append(extent)
            if any(e < 1 for e in dims):
                raise InvalidGraph(f"input {name}: extent < 1 in {dims}")
            shapes[name] = tuple(dims)
            return shapes[name]

        for node in self.nodes:
            if node.op not in graph_ops:
                raise InvalidGraph(f"unknown operator {node.op!r}")
            arg_shapes = []
            for a in node.args:
                if a not in shapes:
                    resolve(a, (node.name,))
                arg_shapes.append(shapes[a])
            shapes[node.name] = tuple(graph_ops[node.op].infer(arg_shapes, node.attrs))
        for name in self.outputs:
            if name not in shapes or name in self.input_names():
                raise InvalidGraph(f"output {name!r} is not a node")
        for name in list(pending):  # unused inputs: still resolvable (the model allows them)
            resolve(name, ())
        return shapes

    # -- edits (minimization) -------------------------------------------------------------------
    def live(self) -> Graph:
        """This graph without the nodes and inputs no output depends on (a value a live
        input's shape refers to is live too)."""
        needed = set(self.outputs)
        refs = {i["name"]: [d[0] for d in i["shape"] if isinstance(d, list)] for i in self.inputs}
        changed = True
        while changed:
            changed = False
            for n in reversed(self.nodes):
                if n.name in needed:
                    for v in [*n.args, *(r for a in n.args for r in refs.get(a, []))]:
                        if v not in needed:
                            needed.add(v)
                            changed = True
            for name in list(needed):
                for r in refs.get(name, []):
                    if r not in needed:
                        needed.add(r)
                        changed = True
        return Graph(self.dtype, [i for i in self.inputs if i["name"] in needed],
                     [n for n in self.nodes if n.name in needed], list(self.outputs))

    def cut(self, name: str, shapes: dict[str, Shape] | None = None) -> Graph:
        """Node ``name`` replaced by a new graph input of its shape (everything before it that
        nothing else needs goes away with :meth:`live`)."""
        shapes = shapes if shapes is not None else self.shapes()
        g = self.copy()
        g.nodes = [n for n in g.nodes if n.name != name]
        g.inputs.append({"name": name, "shape": list(shapes[name])})
        # a reference through the cut node now points at the new input: same extents
        return g.live()

    def bypass(self, name: str, arg: str) -> Graph:
        """Node ``name`` removed, its uses (and outputs) redirected to its argument ``arg``."""
        g = self.copy()
        g.nodes = [n for n in g.nodes if n.name != name]
        for n in g.nodes:
            n.args = [arg if a == name else a for a in n.args]
        for i in g.inputs:
            i["shape"] = [[arg, *d[1:]] if isinstance(d, list) and d[0] == name else d
                          for d in i["shape"]]
        outs: list[str] = []
        for o in g.outputs:
            o = arg if o == name else o
            if o not in outs:
                outs.append(o)
        g.outputs = outs
        return g.live()


def graph_of(params: dict[str, Any]) -> Graph:
    return Graph.from_dict(params)


def graph_primitives(case: dict[str, Any]) -> tuple[str, ...]:
    """The "primitives" of a graph case for its bucket signature (plain JSON in, no TVM):
    the graph's operators, the schedule primitives of its per-function traces, and
    ``convert_layout`` / ``dlight`` / ``metaschedule`` when the mode uses them.

    A minimized graph case drops operators and traces, so its set shrinks — which is what
    the minimizer's same-bug rule for wrong answers expects (a subset of the original's).
    """

    params = (case.get("workload") or {}).get("params") or {}
    names = {str(n.get("op")) for n in params.get("nodes") or [] if isinstance(n, dict)}
    schedule = case.get("schedule") or {}
    for entry in (schedule.get("functions") or {}).values():
        names.update(trace_primitives((entry or {}).get("trace")))
    if schedule.get("layout"):
        names.add("convert_layout")
    source = str(schedule.get("source") or "")
    if source in ("graph:dlight", "graph:metaschedule"):
        names.add(source.split(":", 1)[1])
    return tuple(sorted(names))
