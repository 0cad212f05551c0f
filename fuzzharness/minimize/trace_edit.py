"""Edits of a stored schedule trace (TVM ``Trace.as_json()`` data), without TVM.

A stored trace is ``[instructions, decisions]``; an instruction is
``[kind, inputs, attrs, outputs]`` where ``outputs`` are the names of the random variables
(block, loop and expression RVs: ``b0``, ``l1``, ``v5``) it defines and ``inputs`` refer to
earlier outputs by name (possibly inside nested lists), or hold literals (numbers, ``"None"``).
``decisions`` is a list of ``[instruction index, decision]`` for the sampling instructions.

Invariants every edit here keeps, so that the result still replays with
``s_tir.Trace.apply_json_to_schedule`` (unless the schedule itself refuses it):

* an instruction is removed together with every instruction that (transitively) uses one of
  its outputs — removing only the definition of a random variable breaks replay ("The random
  variable is not defined");
* decision indices follow their instruction; decisions of removed instructions go too;
* :func:`drop_dead_lookups` removes pure instructions (lookups ``Get*`` and samplers
  ``Sample*``) whose outputs nothing uses — what TVM's ``Trace.simplified`` does, on plain
  data, so that a removal does not leave lookups behind.

The input trace is never modified; every function returns a new one.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from typing import Any

Trace = list  # [instructions, decisions]

PURE_PREFIXES = ("Get", "Sample")


def instructions(trace: Any) -> list[list[Any]]:
    if not trace:
        return []
    return list(trace[0])


def decisions(trace: Any) -> list[list[Any]]:
    if not trace or len(trace) < 2 or not trace[1]:
        return []
    return [list(d) for d in trace[1]]


def length(trace: Any) -> int:
    """Number of instructions (lookups included: what a maintainer has to read)."""
    return len(instructions(trace))


def is_pure(inst: list[Any]) -> bool:
    return isinstance(inst[0], str) and inst[0].startswith(PURE_PREFIXES)


def step_indices(trace: Any) -> list[int]:
    """The indices of the trace's schedule steps: instructions that are not lookups or
    samplers (a primitive can be several: a software pipeline's two annotations)."""
    return [i for i, inst in enumerate(instructions(trace)) if not is_pure(inst)]


def prefix_through(trace: Any, index: int) -> Trace:
    """The trace cut after instruction ``index`` (-1: no instruction), without the lookups
    nothing kept uses."""
    return drop_dead_lookups(remove(trace, range(index + 1, len(instructions(trace)))))


def _strings(x: Any) -> Iterator[str]:
    if isinstance(x, str):
        yield x
    elif isinstance(x, list | tuple):
        for y in x:
            yield from _strings(y)


def outputs(inst: list[Any]) -> list[str]:
    return [o for o in (inst[3] if len(inst) > 3 else []) if isinstance(o, str)]


def uses(inst: list[Any], defined: set[str]) -> set[str]:
    """Names of random variables ``inst`` reads (strings in its inputs that are RV names)."""
    return {s for s in _strings(inst[1] if len(inst) > 1 else []) if s in defined}


def dependents(trace: Any, roots: Iterable[int]) -> set[int]:
    """``roots`` plus every instruction that transitively uses an output of one of them."""
    insts = instructions(trace)
    gone = set(roots)
    dead_names: set[str] = set()
    defined: set[str] = set()
    for inst in insts:
        defined.update(outputs(inst))
    for i, inst in enumerate(insts):
        if i in gone or uses(inst, defined) & dead_names:
            gone.add(i)
            dead_names.update(outputs(inst))
    return gone


def remove(trace: Any, indices: Iterable[int], *, with_dependents: bool = True) -> Trace:
    """The trace without ``indices`` (and, by default, without what depends on them)."""
    insts = instructions(trace)
    gone = dependents(trace, indices) if with_dependents else set(indices)
    keep = [i for i in range(len(insts)) if i not in gone]
    new_index = {old: new for new, old in enumerate(keep)}
    new_insts = [copy.deepcopy(insts[i]) for i in keep]
    new_decisions = [[new_index[d[0]], copy.deepcopy(d[1])] for d in decisions(trace)
                     if d[0] in new_index]
    return [new_insts, new_decisions]


def drop_dead_lookups(trace: Any) -> Trace:
    """Remove pure instructions whose outputs are unused, repeatedly (mirrors Trace.simplified)."""
    current = [instructions(trace), decisions(trace)]
    while True:
        insts = current[0]
        defined: set[str] = set()
        for inst in insts:
            defined.update(outputs(inst))
        used: set[str] = set()
        for inst in insts:
            used |= uses(inst, defined)
        dead = [i for i, inst in enumerate(insts)
                if is_pure(inst) and not (set(outputs(inst)) & used)]
        if not dead:
            return current
        current = remove(current, dead, with_dependents=False)


def decision_of(trace: Any, index: int) -> Any:
    for i, d in decisions(trace):
        if i == index:
            return d
    return None


def with_decision(trace: Any, index: int, decision: Any) -> Trace:
    """The trace with the decision of instruction ``index`` replaced (cf. Trace.with_decision)."""
    decs = [[i, copy.deepcopy(d) if i != index else decision] for i, d in decisions(trace)]
    return [copy.deepcopy(instructions(trace)), decs]


def with_inputs(trace: Any, index: int, inputs: list[Any]) -> Trace:
    insts = copy.deepcopy(instructions(trace))
    insts[index][1] = inputs
    return [insts, decisions(trace)]


def kinds(trace: Any) -> list[str]:
    return [inst[0] for inst in instructions(trace)]
