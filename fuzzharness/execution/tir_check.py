"""Is a user's TIR case a valid case?  (:meth:`fuzzharness.core.kinds.CaseKind.check_case`)

Valid means: the workload builds its program from the parameters (the same calls the
``generate`` stage makes: source text, TVMScript parse, inputs, outputs), and the schedule
is a stored trace — TVM's ``Trace.as_json()`` shape, naming instruction kinds TVM has.
Whether TVM then *accepts* the trace on this program is the case's question, not this one:
a valid trace that TVM refuses is a ``schedule_rejected`` verdict, as in a campaign.
"""

from __future__ import annotations

from fuzzharness.core.case import Case
from fuzzharness.core.traces import trace_kinds, trace_shape_problem
from fuzzharness.core.tvm_support import unknown_instruction_kinds
from fuzzharness.generators.workloads import workloads


def check_case(case: Case) -> str | None:
    params = case.params
    if not isinstance(params, dict):
        return "workload 'params' must be an object"
    workload = workloads[case.workload_name]
    try:
        workload.prim_func(params)
        workload.inputs(params)
        workload.outputs(params)
    except Exception as e:  # noqa: BLE001 - any failure here means the params are not valid
        first = (str(e).strip().splitlines() or [""])[0][:200]
        return (f"workload {case.workload_name!r} builds no program from its params "
                f"({type(e).__name__}: {first})")
    problem = trace_shape_problem(case.trace)
    if problem is not None:
        return problem
    unknown = unknown_instruction_kinds(trace_kinds(case.trace))
    if unknown:
        return f"schedule.trace names instruction kinds TVM does not have: {', '.join(unknown)}"
    return None
