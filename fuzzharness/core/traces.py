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
