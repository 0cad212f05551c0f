"""A schedule trace as ``sch.<primitive>(...)`` lines, also where TVM's printer fails.

TVM's ``Trace.as_python`` prints every instruction through its kind's printer.  Some of
those printers are broken in TVM 0.27 — ``DecomposePadding``'s is registered with a
``LoopRV`` argument but is handed the loop's name (``Mismatched type on argument #2``) — and
one broken instruction makes the whole trace unprintable.  Here each such instruction is
printed by :data:`PRINTERS` instead, and TVM prints the rest:

1. the instruction TVM cannot print is replaced, in a copy of the trace, by a *stand-in*
   that TVM prints and that defines the same random variables (``sch.get_sblock`` for one
   block, ``sch.enter_postproc()`` for none), so TVM still names every variable of the
   trace exactly as it would;
2. TVM prints the copy; the stand-in's line is replaced by ours, written with the names TVM
   gave its inputs and outputs.

The caller (:func:`fuzzharness.repro.kit.schedule_calls`) checks the lines by running them
on a fresh schedule: they must rebuild a structurally equal module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Printer = Callable[[list[str], list[Any], list[str]], str]  # (inputs, attrs, outputs) → line


def _lhs(outputs: list[str]) -> str:
    return ", ".join(outputs) + " = " if outputs else ""


def _decompose_padding(inputs: list[str], attrs: list[Any], outputs: list[str]) -> str:
    return f"{_lhs(outputs)}sch.decompose_padding(block={inputs[0]}, loop={inputs[1]})"


def _expr(x: Any) -> str:
    return str(x)


def _annotate_buffer_access(inputs: list[str], attrs: list[Any], outputs: list[str]) -> str:
    block, index, buf_type, index_map = inputs
    return (f"sch.annotate_buffer_access(block={block}, buffer_index={index}, "
            f"buf_type={buf_type}, gen_new_ranges={index_map})")


#: instruction kind → our printer (inputs are already source text: names or literals)
PRINTERS: dict[str, Printer] = {
    "DecomposePadding": _decompose_padding,
    "AnnotateBufferAccess": _annotate_buffer_access,
}


def _input_source(x: Any, names: dict[Any, str], kind: str, position: int) -> str:
    from tvm.tirx import IndexMap

    if x in names:
        return names[x]
    if isinstance(x, IndexMap):
        params = ", ".join(str(v) for v in x.initial_indices)
        finals = [_expr(e) for e in x.final_indices]
        if kind == "AnnotateBufferAccess":  # (begin, end) pairs
            pairs = ", ".join(f"({finals[i]}, {finals[i + 1]})" for i in range(0, len(finals), 2))
            return f"lambda {params}: [{pairs}]"
        return f"lambda {params}: ({', '.join(finals)},)"
    if kind == "AnnotateBufferAccess" and position == 2:
        return '"read"' if int(x) == 0 else '"write"'
    if hasattr(x, "value"):
        return repr(x.value)
    return repr(x)


def _stand_in(inst):
    """A printable instruction defining the same random variables as ``inst`` (or None)."""
    from tvm.s_tir.schedule import Instruction, InstructionKind

    outs = list(inst.outputs)
    if not outs:
        return Instruction(InstructionKind.get("EnterPostproc"), [], [], [])
    if len(outs) == 1 and type(outs[0]).__name__ == "SBlockRV":
        return Instruction(InstructionKind.get("GetSBlock"), [], ["STAND_IN", "main"], outs)
    return None


def python_lines(trace) -> list[str]:
    """``sch.<primitive>(...)`` lines of a TVM ``Trace`` (see the module docstring).

    Raises when an instruction can be printed neither by TVM nor by :data:`PRINTERS`."""
    from tvm.s_tir.schedule import Trace

    try:
        return _typed_pad_values([str(ln) for ln in trace.as_python()], trace)
    except Exception:  # noqa: BLE001 - a kind whose printer is broken: print it ourselves
        pass
    insts = list(trace.insts)
    replaced: dict[int, Any] = {}
    copy = []
    for i, inst in enumerate(insts):
        if inst.kind.name in PRINTERS:
            stand = _stand_in(inst)
            if stand is None:
                raise ValueError(f"no stand-in for {inst.kind.name}")
            replaced[i] = inst
            copy.append(stand)
        else:
            copy.append(inst)
    decisions = {k: v for k, v in trace.decisions.items()}
    lines = [str(ln) for ln in Trace(copy, decisions).as_python()]
    if len(lines) != len(insts):
        raise ValueError("TVM printed the trace in a number of lines other than its instructions'")
    names: dict[Any, str] = {}
    for inst, line in zip(copy, lines, strict=True):
        if inst.outputs:
            lhs = line.split(" = ", 1)[0]
            for rv, name in zip(inst.outputs, [n.strip() for n in lhs.split(",") if n.strip()],
                                strict=True):
                names[rv] = name
    for i, inst in replaced.items():
        inputs = [_input_source(x, names, inst.kind.name, k) for k, x in enumerate(inst.inputs)]
        outputs = [names[rv] for rv in inst.outputs]
        lines[i] = PRINTERS[inst.kind.name](inputs, list(inst.attrs), outputs)
    return _typed_pad_values(lines, trace)


def _typed_pad_values(lines: list[str], trace) -> list[str]:
    """TVM prints a constant ``transform_layout`` pad value as a bare Python number
    (``pad_value=lambda i, j: (0,)``), which ``transform_layout`` refuses when it runs: spell
    it with its dtype (``T.int32(0)``)."""
    import re

    for i, inst in enumerate(trace.insts):
        if inst.kind.name != "TransformLayout" or i >= len(lines) or len(inst.attrs) < 3:
            continue
        pad = inst.attrs[2]
        finals = list(getattr(pad, "final_indices", None) or [])
        if len(finals) != 1 or not hasattr(finals[0], "value") or not hasattr(finals[0], "ty"):
            continue
        typed = f"T.{finals[0].ty}({finals[0].value!r})"
        lines[i] = re.sub(r"(pad_value=lambda [^:]*: \()([-+0-9.eE]+|inf|-inf|nan)(,\))",
                          lambda m, typed=typed: m.group(1) + typed + m.group(3), lines[i])
    return lines
