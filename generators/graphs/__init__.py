"""Whole-graph generation: random small Relax graphs, valid by construction.

* :mod:`~fuzzharness.generators.graphs.spec` — the graph model (plain JSON), validation, edits;
* :mod:`~fuzzharness.generators.graphs.ops` — one module per operator family, registered by decorator;
* :mod:`~fuzzharness.generators.graphs.generate` — random graphs from ``data.draw``;
* :mod:`~fuzzharness.generators.graphs.reference` — the float64 reference with composed error bounds;
* :mod:`~fuzzharness.generators.graphs.program` — the Relax module (``relax.BlockBuilder``);
* :mod:`~fuzzharness.generators.graphs.cases` — graph cases: inputs, compilation mode, per-function
  schedules;
* :mod:`~fuzzharness.kinds.relax.minimize` — graph minimization; :mod:`~fuzzharness.kinds.relax.script` —
  Relax TVMScript repro scripts.

Compilation and execution live in :mod:`fuzzharness.execution.relax_run`.
"""

from fuzzharness.generators.graphs.spec import GRAPH_WORKLOAD, Graph, InvalidGraph

__all__ = ["GRAPH_WORKLOAD", "Graph", "InvalidGraph"]
