"""Graph cases: a random graph, its inputs, and a compilation mode, as one plain-JSON Case.

Draw order (after :func:`fuzzharness.generators.cases.draw_case` decided on a graph):

1. the graph (:func:`fuzzharness.generators.graphs.generate.draw_graph`);
2. the input mode: the exact-integer mode in ``exact_fraction`` of the cases where every op
   is exact in integer arithmetic (:func:`fuzzharness.generators.graphs.reference.int_max`), else one of
   the float distributions; the input seed;
3. the mode (``case.schedule["source"]``, see :mod:`fuzzharness.execution.relax_run`):
   MetaSchedule samples in ``metaschedule_fraction`` of the cases, else ``default``,
   ``dlight`` or ``random`` (random twice as often); GPU targets always use TVM's default
   GPU pipeline;
4. a layout conversion (``LAYOUT_FRACTION`` of the graphs with a convolution; NCHW4c only
   with ``known_bug_sites``: TVM 0.27 cannot build it on llvm);
5. compiler options (:func:`fuzzharness.generators.options.draw_options`);
6. for ``random`` / ``metaschedule``: the module is legalized and fused here (TVM runs at
   generation, as for TIR schedules), then each fused PrimFunc, in name order, is scheduled
   with probability ``FUNCTION_FRACTION`` — its trace stored with the function's
   fingerprint.  A trace that changes the function's signature (``transform_layout`` of a
   parameter: the Relax caller would pass the old layout) is dropped, its step recorded as
   ``signature``.

``case.schedule``: ``{"source", "trace": None, "layout", "functions": {name: {"trace",
"fingerprint"}}}``; ``case.origin``: ``dtype``, the graph's ``ops``, every schedule step
(``steps``, for the coverage table), ``options``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzzharness.core.case import Case
from fuzzharness.core.relax_pipeline import (
    KNOWN_BUG_LAYOUTS,
    LAYOUTS,
    fingerprint,
    graph_target,
    legalize,
    param_signature,
    prim_functions,
    runs_on_vm,
)
from fuzzharness.core.tvm_support import trace_to_json
from fuzzharness.generators import draw as draws
from fuzzharness.generators.graphs.generate import draw_graph
from fuzzharness.generators.graphs.program import build_module
from fuzzharness.generators.graphs.reference import input_specs
from fuzzharness.generators.graphs.spec import GRAPH_WORKLOAD
from fuzzharness.generators.inputs import EXACT_DISTRIBUTIONS, FLOAT_DISTRIBUTIONS
from fuzzharness.generators.options import draw_options
from fuzzharness.generators.schedules import ScheduleOptions, random_schedule
from fuzzharness.generators.schedules.metaschedule import metaschedule_schedule

LAYOUT_FRACTION = 0.3
FUNCTION_FRACTION = 0.75
#: random schedules of a graph are drawn per fused function: fewer steps each than a TIR case
STEPS_PER_FUNCTION = 4


def draw_graph_case(data: Any, settings) -> Case:

    graph = draw_graph(data, settings.dtypes)
    specs = input_specs(graph)
    exact_ok = all(s.int_max > 0 for s in specs)
    if draws.chance(data, settings.exact_fraction) and exact_ok:
        distribution, oracle = data.draw(st.sampled_from(sorted(EXACT_DISTRIBUTIONS))), "exact"
    else:
        distribution, oracle = data.draw(st.sampled_from(FLOAT_DISTRIBUTIONS)), "bound"
    input_seed = data.draw(st.integers(0, 2**32 - 1))

    target = graph_target(settings.target)
    wanted_ms = settings.primitives is None or "metaschedule" in settings.primitives
    metaschedule = draws.chance(data, settings.metaschedule_fraction) and wanted_ms
    source = "graph:metaschedule" if metaschedule else data.draw(
        st.sampled_from(["graph:default", "graph:dlight", "graph:random", "graph:random"]))
    layout = None
    if draws.chance(data, LAYOUT_FRACTION) and "conv2d" in graph.ops():
        layout = data.draw(st.sampled_from(sorted(LAYOUTS)))
        if layout in KNOWN_BUG_LAYOUTS and not settings.known_bug_sites:
            layout = None  # the draw stays: the known_bug_sites switch shifts nothing
    target, pass_config, labels, tier = draw_options(data, target, settings.option_fraction)
    origin: dict[str, Any] = {"dtype": graph.dtype, "ops": graph.ops(), "options": labels,
                              "steps": []}
    if tier is not None:
        origin["mcpu_tier"] = tier
    if not runs_on_vm(target):  # GPU targets: TVM's own GPU pipeline and schedules
        source = "graph:default"
    functions: dict[str, Any] = {}
    if source in ("graph:random", "graph:metaschedule"):
        functions, steps = draw_function_schedules(graph, target, layout, source, data, settings)
        origin["steps"] = steps
    return Case(
        workload={"name": GRAPH_WORKLOAD, "params": graph.to_dict()},
        inputs={"distribution": distribution, "seed": input_seed},
        schedule={"source": source, "trace": None, "layout": layout, "functions": functions},
        target=target,
        pass_config=pass_config,
        oracle={"mode": oracle},
        origin=origin,
    )


def draw_function_schedules(graph, target, layout, source, data, settings):
    """``({function name: {"trace", "fingerprint"}}, [step dicts])`` for the fused PrimFuncs."""

    funcs = prim_functions(legalize(build_module(graph), target, layout))
    options = ScheduleOptions(max_steps=min(settings.max_steps, STEPS_PER_FUNCTION),
                              primitives=settings.primitives,
                              known_bug_sites=settings.known_bug_sites)
    functions: dict[str, Any] = {}
    steps: list[dict[str, Any]] = []
    for name, func in funcs.items():
        if not draws.chance(data, FUNCTION_FRACTION):
            continue
        if source == "graph:metaschedule":
            sch, fsteps = metaschedule_schedule(func, data)
        else:
            sch, fsteps = random_schedule(func, data, options)
        if param_signature(sch.mod["main"]) != param_signature(func):
            # undone: the Relax caller passes every parameter in its original layout
            steps += [dict(s.to_dict(), function=name, outcome="dropped",
                           error="changes the function's signature")
                      if s.outcome == "accepted" else dict(s.to_dict(), function=name)
                      for s in fsteps]
            continue
        trace = trace_to_json(sch.trace)
        steps += [dict(s.to_dict(), function=name) for s in fsteps]
        if trace and trace[0]:
            functions[name] = {"trace": trace, "fingerprint": fingerprint(func)}
    return functions, steps
