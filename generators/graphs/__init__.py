"""Whole-graph generation: random small Relax graphs, valid by construction.

* :mod:`~generators.graphs.spec` — the graph model (plain JSON), validation, edits;
* :mod:`~generators.graphs.ops` — one module per operator family, registered by decorator;
* :mod:`~generators.graphs.generate` — random graphs from ``data.draw``;
* :mod:`~generators.graphs.reference` — the float64 reference with composed error bounds;
* :mod:`~generators.graphs.program` — the Relax module (``relax.BlockBuilder``);
* :mod:`~generators.graphs.cases` — graph cases: inputs, compilation mode, per-function
  schedules;
* :mod:`~generators.graphs.minimize` — graph minimization; :mod:`~generators.graphs.repro` —
  Relax TVMScript repro scripts.

Compilation and execution live in :mod:`fuzzharness.pipelines.relax`.
"""

from generators.graphs.spec import GRAPH_WORKLOAD, Graph, InvalidGraph

__all__ = ["GRAPH_WORKLOAD", "Graph", "InvalidGraph"]
