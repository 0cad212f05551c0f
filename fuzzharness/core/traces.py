"""Schedule traces as plain data: which primitives a stored trace applies.

A stored trace is TVM's own ``Trace.as_json()`` (IntImm/FloatImm turned into Python numbers):
``[[instruction, ...], decisions]`` where an instruction is ``[kind, inputs, attrs,
outputs]``.  Read here without TVM, by the bucket signatures, the reports, the coverage table
and the issue text — one place that says how a trace instruction is named as a primitive.
"""

from __future__ import annotations

import re
from typing import Any

#: trace instructions that only look things up or sample (their effect is in later steps)
_QUERY_PREFIXES = ("Get", "Sample")
_QUERY_KINDS = frozenset({"EnterPostproc"})
#: annotations that are how a primitive is spelled in the trace
ANNOTATION_PRIMITIVES = {
    "pragma_auto_unroll_max_step": "unroll",
    "pragma_unroll_explicit": "unroll",
    "software_pipeline_stage": "software_pipeline",
    "software_pipeline_order": "software_pipeline",
    "double_buffer_scope": "double_buffer",
}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
# instruction kinds whose snake_case is not the Schedule method's name
_KIND_METHODS = {"RFactor": "rfactor", "ReIndex": "reindex", "UnsafeSetDType": "unsafe_set_dtype"}


def trace_primitives(trace: Any) -> tuple[str, ...]:
    """Sorted primitive names applied by a stored trace (TVM ``Trace.as_json()`` data)."""
    return tuple(sorted(set(primitive_sequence(trace))))


def primitive_sequence(trace: Any) -> tuple[str, ...]:
    """The primitives a stored trace applies, in trace order (lookups and samplers left out;
    an annotation named by what it spells, consecutive repeats of one annotation kept once:
    ``pragma_auto_unroll_max_step`` + ``pragma_unroll_explicit`` is one ``unroll``)."""
    if not trace or not isinstance(trace, list | tuple) or not trace[0]:
        return ()
    names: list[str] = []
    for inst in trace[0]:
        if not isinstance(inst, list | tuple) or not inst or not isinstance(inst[0], str):
            continue
        kind = inst[0]
        if kind.startswith(_QUERY_PREFIXES) or kind in _QUERY_KINDS:
            continue
        if kind == "Annotate":
            attrs = inst[2] if len(inst) > 2 and isinstance(inst[2], list | tuple) else []
            name = ANNOTATION_PRIMITIVES.get(str(attrs[0]) if attrs else "", "annotate")
            if name != "annotate" and names and names[-1] == name:
                continue
        else:
            name = _KIND_METHODS.get(kind) or _CAMEL.sub("_", kind).lower()
        names.append(name)
    return tuple(names)


def trace_shape_problem(trace: Any, where: str = "schedule.trace") -> str | None:
    """Why ``trace`` is not a stored trace (``None``, or TVM's ``Trace.as_json()`` shape:
    ``[[[kind, inputs, attrs, outputs], ...], [[instruction index, decision], ...]]``), or
    None when it has that shape.  Plain data only: whether TVM knows each kind is the
    caller's question (:func:`fuzzharness.core.tvm_support.unknown_instruction_kinds`)."""
    if trace is None:
        return None
    if not isinstance(trace, list) or len(trace) != 2 or not all(isinstance(x, list) for x in trace):
        return (f"{where} must be null or TVM's Trace.as_json(): [instructions, decisions], "
                f"not {str(trace)[:60]!r}")
    insts, decisions = trace
    for i, inst in enumerate(insts):
        if not (isinstance(inst, list) and len(inst) == 4 and isinstance(inst[0], str)
                and all(isinstance(x, list) for x in inst[1:])):
            return f"{where}: instruction {i} is not [kind, inputs, attrs, outputs]: {str(inst)[:60]}"
    for d in decisions:
        if not (isinstance(d, list) and len(d) == 2 and isinstance(d[0], int)
                and not isinstance(d[0], bool) and 0 <= d[0] < len(insts)):
            return f"{where}: decision {str(d)[:60]} does not name an instruction by index"
    return None


def trace_kinds(trace: Any) -> list[str]:
    """The instruction kinds of a trace of the shape :func:`trace_shape_problem` accepts."""
    return [inst[0] for inst in (trace or [[], []])[0]]
