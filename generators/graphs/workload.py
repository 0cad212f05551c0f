"""The graph family as a registered workload named ``graph`` (``default = False``).

Graph cases are not drawn through the single-PrimFunc path: :func:`fuzzharness.generators.cases.draw_case`
hands them to :func:`fuzzharness.generators.graphs.cases.draw_graph_case` and :mod:`fuzzharness.execution.stages`
to :mod:`fuzzharness.execution.relax_run`.  Registering the family lets every tool that looks a
workload up by name — ``--workloads graph``, replay, dtype filters, the minimizer's generic
passes — treat a graph case like any other: its parameters are the graph spec, its inputs,
outputs and reference come from the graph (:mod:`fuzzharness.generators.graphs.reference`), and its
"source" is the Relax program as TVMScript.  It has no single PrimFunc.
"""

from __future__ import annotations

from typing import Any

from fuzzharness.generators.graphs.generate import draw_graph
from fuzzharness.generators.graphs.program import build_module
from fuzzharness.generators.graphs.reference import expected, input_specs
from fuzzharness.generators.graphs.spec import DTYPES, GRAPH_WORKLOAD, Graph
from fuzzharness.generators.workloads.base import GenOptions, TensorSpec, Workload


class GraphWorkload(Workload):
    name = GRAPH_WORKLOAD
    description = "a random Relax graph compiled by TVM's whole pipeline (fusion, layouts, VM)"
    dtype_labels = DTYPES
    default = False  # drawn through fuzzharness.generators.cases' graph_fraction, not as a TIR workload

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:

        return draw_graph(data, options.dtypes).to_dict()

    def source(self, params: dict[str, Any]) -> str:

        return build_module(Graph.from_dict(params)).script()

    def inputs(self, params):

        return input_specs(Graph.from_dict(params))

    def outputs(self, params):
        g = Graph.from_dict(params)
        shapes = g.shapes()
        return [TensorSpec(o, shapes[o], g.dtype) for o in g.outputs]

    def reference(self, params, inputs, numerics=None):

        return expected(Graph.from_dict(params), inputs)

    def dtype_label(self, params: dict[str, Any]) -> str:
        return str(params["dtype"])

    def prim_func(self, params):
        raise TypeError("a graph case is a Relax program with several PrimFuncs; "
                        "see fuzzharness.execution.relax_run")


WORKLOAD = GraphWorkload()  # registered by dotted name in fuzzharness.generators.workloads
