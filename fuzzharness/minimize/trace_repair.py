"""Make an edited trace replay again, with TVM's own replay as the judge (in this process).

Removing an instruction can change how many loops (or child blocks) a later lookup returns:
drop ``add_unit_loop`` and a later ``get_loops`` yields two loops where the stored trace names
three, and TVM's replay stops with ``Check failed: old_outputs.size() == new_outputs.size()
(3 vs. 2)``.  :func:`repair` renames the lookup's outputs to the new count — aligned at the
innermost end first (what ``add_unit_loop``, ``cache_*`` and ``compute_at`` change is the
outer part of a loop nest), else at the outermost end — drops whatever used a vanished
output, and tries again.  The result replays (:func:`replay_error` is None) or is None.

Replaying here, in the minimizing process, is also a cheap filter: a candidate trace that
cannot even be replayed need not occupy a worker.  Replay runs TVM schedule primitives only
(no lowering, no code generation, no execution).
"""

from __future__ import annotations

import re
from typing import Any

from fuzzharness.core.tvm_support import replay_trace
from fuzzharness.minimize import trace_edit

ARITY = re.compile(r"old_outputs\.size\(\) == new_outputs\.size\(\) \((\d+) vs\. (\d+)\)")
MAX_REPAIRS = 6


def replay_error(func, trace: Any) -> str | None:
    """None when ``trace`` replays on ``func``; else the error text."""

    try:
        replay_trace(func, trace)
    except Exception as e:  # noqa: BLE001 - any refusal means "does not replay"
        return f"{type(e).__name__}: {e}"
    return None


def _first_failing(func, trace: Any) -> int:
    """Index of the instruction at which the replay of ``trace`` first fails."""
    insts = trace_edit.instructions(trace)
    lo, hi = 0, len(insts)  # prefix of length lo replays; of length hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        prefix = trace_edit.remove(trace, range(mid, len(insts)), with_dependents=False)
        if replay_error(func, prefix) is None:
            lo = mid
        else:
            hi = mid
    return hi - 1


def _fresh_names(trace: Any, prefix: str, n: int) -> list[str]:
    used = {o for inst in trace_edit.instructions(trace) for o in trace_edit.outputs(inst)}
    top = max((int(m.group(1)) for o in used if (m := re.fullmatch(r"[a-z](\d+)", o))), default=0)
    return [f"{prefix}{top + 1 + i}" for i in range(n)]


def _renamed(trace: Any, index: int, new_outputs: list[str]) -> Any:
    insts = [list(i) for i in trace_edit.instructions(trace)]
    old = trace_edit.outputs(insts[index])
    insts[index] = [*insts[index][:3], new_outputs]
    fixed = [insts, trace_edit.decisions(trace)]
    vanished = set(old) - set(new_outputs)
    users = [j for j, inst in enumerate(insts) if j > index
             and trace_edit.uses(inst, set(old)) & vanished]
    return trace_edit.drop_dead_lookups(trace_edit.remove(fixed, users)) if users else fixed


def arity_variants(trace: Any, index: int, count: int) -> list[Any]:
    """``trace`` with instruction ``index`` returning ``count`` outputs, innermost-aligned first."""
    outs = trace_edit.outputs(trace_edit.instructions(trace)[index])
    if count < len(outs):
        choices = [outs[len(outs) - count:], outs[:count]]
    else:
        extra = _fresh_names(trace, (outs[0][0] if outs else "l"), count - len(outs))
        choices = [extra + outs, outs + extra]
    seen, out = [], []
    for names in choices:
        if names not in seen:
            seen.append(names)
            out.append(_renamed(trace, index, names))
    return out


def repair(func, trace: Any, *, limit: int = MAX_REPAIRS) -> Any | None:
    """``trace`` made to replay on ``func`` by fixing lookup arities, or None."""
    err = replay_error(func, trace)
    if err is None:
        return trace
    if limit <= 0:
        return None
    m = ARITY.search(err)
    if not m:
        return None
    index = _first_failing(func, trace)
    for variant in arity_variants(trace, index, int(m.group(2))):
        fixed = repair(func, variant, limit=limit - 1)
        if fixed is not None:
            return fixed
    return None


def merge_duplicate_lookups(trace: Any) -> Any:
    """Lookups repeated with the same inputs and attributes reuse the first one's outputs."""
    insts = [list(i) for i in trace_edit.instructions(trace)]
    first: dict[str, list[str]] = {}
    rename: dict[str, str] = {}

    def sub(x: Any) -> Any:
        if isinstance(x, str):
            return rename.get(x, x)
        if isinstance(x, list):
            return [sub(y) for y in x]
        return x

    for inst in insts:
        inst[1] = sub(inst[1])
        if trace_edit.is_pure(inst) and inst[0].startswith("Get"):
            key = repr((inst[0], inst[1], inst[2]))
            if key in first and len(first[key]) == len(trace_edit.outputs(inst)):
                rename.update(zip(trace_edit.outputs(inst), first[key], strict=True))
            else:
                first[key] = trace_edit.outputs(inst)
    return trace_edit.drop_dead_lookups([insts, trace_edit.decisions(trace)])
