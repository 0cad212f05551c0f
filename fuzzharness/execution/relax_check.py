"""Is a user's graph case a valid case?  (:meth:`fuzzharness.core.kinds.CaseKind.check_case`)

Valid means: the params are a graph spec whose every value has a shape (the validation the
generator's graphs pass by construction), and ``schedule.functions`` maps fused-function
names to entries whose ``trace`` has TVM's ``Trace.as_json()`` shape with instruction kinds
TVM has.  Whether a trace still fits the function TVM fuses is checked when the case runs
(a stale trace is a harness error there, never a TVM finding).
"""

from __future__ import annotations

from fuzzharness.core.case import Case
from fuzzharness.core.traces import trace_kinds, trace_shape_problem
from fuzzharness.core.tvm_support import unknown_instruction_kinds
from fuzzharness.generators.graphs.nodes import InvalidGraph
from fuzzharness.generators.graphs.spec import graph_of


def check_case(case: Case) -> str | None:
    if not isinstance(case.params, dict):
        return "workload 'params' must be a graph spec (an object)"
    try:
        graph_of(case.params).shapes()
    except (InvalidGraph, KeyError, TypeError, ValueError) as e:
        return f"not a valid graph: {str(e)[:200]}"
    functions = case.schedule.get("functions") or {}
    if not isinstance(functions, dict):
        return "schedule.functions must map function names to {trace, fingerprint}"
    kinds: list[str] = []
    for name, entry in functions.items():
        if not isinstance(entry, dict):
            return f"schedule.functions[{name!r}] must be an object with a 'trace'"
        where = f"schedule.functions[{name!r}].trace"
        problem = trace_shape_problem(entry.get("trace"), where)
        if problem is not None:
            return problem
        kinds += trace_kinds(entry.get("trace"))
    unknown = unknown_instruction_kinds(kinds)
    if unknown:
        return f"a function's trace names instruction kinds TVM does not have: {', '.join(unknown)}"
    return None
