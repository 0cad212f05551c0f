"""Case kinds: what differs between a TIR case and a Relax graph case, behind one seam.

One package per kind, each exposing ``KIND`` (a :class:`fuzzharness.core.kinds.CaseKind`),
registered by dotted name in :data:`fuzzharness.core.kinds.kinds`:

* :mod:`fuzzharness.kinds.tir` — one PrimFunc of a registered workload, one schedule trace;
* :mod:`fuzzharness.kinds.relax` — a whole Relax graph through TVM's Relax pipeline, each
  fused PrimFunc with its own trace.

A kind sits on top of the layers it serves (execution, minimizer, repro kit), so nothing
below imports it: they ask :func:`fuzzharness.core.kinds.kind_of`.  Adding a kind is adding
a package here (or in a plugin) and naming it in :data:`fuzzharness.core.kinds.kinds`.
"""
