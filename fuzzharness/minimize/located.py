"""The schedule step that made a *located* defect (:func:`fuzzharness.execution.facts.located_facts`).

A located fact is a defect a schedule step leaves in the scheduled program — a block that
iterates outside its declared domain with no predicate.  It may show long before anything
fails: pad_einsum's out-of-domain iterations of a block that shares the padded loop store
into padding until a later transform_layout folds them onto a live row.  The step probe
(:mod:`fuzzharness.minimize.step_bisect`) names the first step whose prefix *fails*; this
names the first step whose prefix *has the defect* the whole case has, and the probe takes it
when it comes no later.

Static: each prefix of the probed trace is replayed and inspected, nothing is compiled or
run.  Replaying a minimized trace can still crash TVM (a LoopPartition segfault in a witness),
so :func:`located_step_isolated` runs it in a child process (``python -m
fuzzharness.minimize.located``: the case's JSON on stdin, the answer's on stdout) and reads a
crash, a timeout or unreadable output as "no defect located".

Invariants: a function of the case's plain data; None unless the whole case's program has a
located fact the unscheduled program does not have; the step named is a schedule primitive of the probed trace, at the position
returned (1 for the first step).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from fuzzharness.core.case import Case
from fuzzharness.core.traces import primitive_sequence
from fuzzharness.minimize import trace_edit

#: (position of the step, the step's primitive, the located facts, the probed trace cut
#: after it — None when that is the whole trace)
Located = tuple[int, str, tuple[str, ...], Any]


def located_step(case: Case) -> Located | None:
    """The first step whose program has a located fact the whole case's program has (see
    the module docstring), in this process.  The probed trace is a TIR case's or a graph's
    one scheduled function's (:func:`fuzzharness.minimize.step_site.program_and_trace`)."""
    from fuzzharness.core.tvm_support import replay_trace
    from fuzzharness.execution.facts import located_facts
    from fuzzharness.minimize.step_site import program_and_trace

    func, trace = program_and_trace(case)
    if func is None:
        return None
    import tvm

    # a defect the program has before any step is no step's (a frontend's, say)
    before = set(located_facts(tvm.IRModule({"main": func})))
    whole = set(located_facts(replay_trace(func, trace).mod)) - before
    if not whole:
        return None
    steps = trace_edit.step_indices(trace)
    for position, j in enumerate(steps, start=1):
        last = j == steps[-1]
        cut = trace if last else trace_edit.prefix_through(trace, j)
        found = whole & set(located_facts(replay_trace(func, cut).mod))
        if found:
            return position, primitive_sequence(cut)[-1], tuple(sorted(found)), None if last else cut
    return None


def located_step_isolated(case: Case, *, timeout: float = 120.0) -> Located | None:
    """:func:`located_step` in a child process (None when it crashes, hangs or finds none)."""
    try:
        r = subprocess.run([sys.executable, "-m", __name__], input=json.dumps(case.to_dict()),
                           capture_output=True, text=True, timeout=timeout, check=False)
        if r.returncode != 0 or not r.stdout.strip():
            return None
        return _decode(json.loads(r.stdout.strip().splitlines()[-1]))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
        return None


def _encode(found: Located | None) -> dict[str, Any] | None:
    if found is None:
        return None
    position, step, facts, prefix = found
    return {"position": position, "step": step, "facts": list(facts), "trace": prefix}


def _decode(doc: dict[str, Any] | None) -> Located | None:
    if doc is None:
        return None
    return int(doc["position"]), str(doc["step"]), tuple(doc["facts"]), doc["trace"]


def main() -> int:
    case = Case.from_dict(json.loads(sys.stdin.read()))
    try:
        found = located_step(case)
    except Exception:  # noqa: BLE001 - a replay TVM refuses names no defect
        found = None
    print(json.dumps(_encode(found)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
