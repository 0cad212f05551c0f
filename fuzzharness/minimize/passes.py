"""Case-level minimization passes: each proposes simpler cases, the evaluator keeps the first
interesting one, and the pass repeats until nothing it proposes is interesting.

Every pass works on any registered workload — it reads the workload's own parameters,
input specs and dtype labels, never a hard-coded list — and never makes a case harder:

``trace``      ddmin over the schedule trace; an instruction goes with everything that uses
               its outputs (:mod:`fuzzharness.minimize.trace_edit`), then dead lookups go; on a
               short trace, pairs of steps too (an annotate with its unannotate)
``decisions``  sampling decisions toward the simplest choice: a perfect tile with every
               factor but one 1 (the whole extent in one loop), categorical choice 0,
               compute location "root"; literal split / partition factors toward 1 or the
               full extent (``[None, 1]``, ``[1, None]``); unroll-style annotation values
               toward 1
``params``     workload parameters: integers toward 1 (1, 2, 3, v/4, v/2, 3v/4, v−1 — the
               smallest interesting one wins), integer lists element-wise, the dtype label
               toward ``float32``; only params the workload could draw
               (``Workload.params_problem``: every tensor keeps an element, the workload's
               own draw constraints hold), then built and run like any candidate
``inputs``     all-ones inputs with the exact-integer oracle (bitwise equality), then tiny
               integers (|x| ≤ 4), then small integers, then ones with the error-bound oracle, then seed 0
``options``    every compiler option at once, then one by one: ``mcpu``, ``mattr``, each
               PassContext entry, each key of a dict-valued entry (``tirx.UnrollLoop``)

A case edited here keeps ``origin`` as provenance plus ``minimized_from``; the generator's
``choices``/``steps`` are dropped once they no longer describe the case.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from itertools import combinations
from typing import Any

from fuzzharness.core.case import Case
from fuzzharness.core.kinds import shrink_kind
from fuzzharness.generators.workloads import workloads
from fuzzharness.minimize import trace_edit
from fuzzharness.minimize.ddmin import ddmin
from fuzzharness.minimize.trace_repair import merge_duplicate_lookups, repair

Propose = Callable[[Case], list[Case]]
DTYPE_PREFERENCE = ("float32", "float16", "float16-acc32")
#: target keys the option generator varies (generators/options.py); others are the target
OPTION_TARGET_KEYS = ("mcpu", "mattr")
#: annotation keys whose integer values are budgets that shrink toward 1
BUDGET_ANNOTATIONS = ("pragma_auto_unroll_max_step",)


def edited(case: Case, **changes: Any) -> Case:
    """``case`` with ``changes``; generator provenance that no longer applies is dropped."""
    origin = {k: v for k, v in case.origin.items() if k not in ("choices", "steps")}
    origin.setdefault("minimized_from", case.origin.get("minimized_from") or case.id)
    if "workload" in changes:

        wl = workloads[changes["workload"]["name"]]
        origin["dtype"] = wl.dtype_label(changes["workload"]["params"])
    return case.replace(origin=origin, **changes)


def with_trace(case: Case, trace: Any) -> Case:
    return edited(case, schedule=dict(case.schedule, trace=trace))


# -- trace -------------------------------------------------------------------------------------
Fix = Callable[[Case], "Case | None"]


def minimize_trace(case: Case, first_interesting: Callable[[list[Case]], Case | None],
                   should_stop: Callable[[], bool], fix: Fix | None = None) -> Case:
    """ddmin over the trace's instructions (each removed with its dependents).

    ``fix`` (see :func:`replay_fixer`) may repair a candidate or reject it (None) before it
    is run — e.g. when it no longer replays.
    """
    if not trace_edit.length(case.trace):
        return case
    fix = fix or (lambda c: c)

    # free simplifications first: dead lookups, repeated lookups

    for simpler in (trace_edit.drop_dead_lookups(case.trace), merge_duplicate_lookups(case.trace)):
        if simpler != case.trace and (cand := fix(with_trace(case, simpler))) is not None:
            case = first_interesting([cand]) or case
    return ddmin_trace(case, lambda c: c.trace, lambda c, t: fix(with_trace(c, t)),
                        first_interesting, should_stop)


#: pairs of steps are tried together when at most this many schedule steps remain
PAIR_LIMIT = 8


def ddmin_trace(case: Case, get: Callable[[Case], Any], put: Callable[[Case, Any], Case | None],
                 first_interesting: Callable[[list[Case]], Case | None],
                 should_stop: Callable[[], bool]) -> Case:
    """ddmin over the instructions of the trace ``get(case)``; ``put(case, trace)`` makes
    the candidate (or None to skip it).  An instruction goes with its dependents, then dead
    lookups go.

    ddmin ends 1-minimal: no single step can go.  Steps that only go together stay — an
    ``annotate`` whose ``unannotate`` fails without it, while the annotation left alone
    hides the bug — so a short trace (≤ :data:`PAIR_LIMIT` schedule steps) is also made
    2-minimal: every pair of steps is tried, and after a removal ddmin runs again."""
    def units(c: Case) -> list[int]:
        return list(range(trace_edit.length(get(c))))

    def remove(c: Case, chunk: list[int]) -> Case | None:
        old = get(c)
        new = trace_edit.drop_dead_lookups(trace_edit.remove(old, chunk))
        return None if new == old else put(c, new)

    while True:
        case = ddmin(case, units, remove, first_interesting, should_stop)
        steps = trace_edit.step_indices(get(case))
        if should_stop() or not 2 <= len(steps) <= PAIR_LIMIT:
            return case
        candidates = [c for c in (remove(case, list(pair)) for pair in combinations(steps, 2))
                      if c is not None]
        found = first_interesting(candidates) if candidates else None
        if found is None:
            return case
        case = found


def size(case: Case) -> int:
    """How big a case is for the minimizer's report, in its kind's unit (trace instructions;
    for a Relax graph case, graph nodes plus the instructions of every function's trace)."""
    return shrink_kind(case).size(case)


def size_unit(case: Case | None) -> str:
    return shrink_kind(case).size_unit


def replay_fixer(stage: str) -> Fix:
    """A :data:`Fix` that repairs lookup arities and drops candidates that do not replay.

    For a bucket decided at the ``schedule`` stage a candidate that fails to replay is kept
    as it is (its failure may be the bug); otherwise it is dropped before it costs a worker.
    """

    def fix(c: Case) -> Case | None:
        try:
            func = workloads[c.workload_name].prim_func(c.params)
        except Exception:  # noqa: BLE001 - let the worker judge it
            return c
        fixed = repair(func, c.trace)
        if fixed is None:
            return c if stage == "schedule" else None
        return c if fixed == c.trace else with_trace(c, fixed)

    return fix


# -- decisions and factors ------------------------------------------------------------------------
def _tile_candidates(decision: list[int]) -> list[list[int]]:
    n, total = len(decision), 1
    for f in decision:
        total *= int(f)
    if n < 2:
        return []
    return [[1] * (n - 1) + [total], [total] + [1] * (n - 1)]


def _factor_candidates(factors: list[Any]) -> list[list[Any]]:
    out = []
    ints = [i for i, f in enumerate(factors) if isinstance(f, int) and not isinstance(f, bool)]
    if "None" in factors and len(factors) >= 2:
        out.append(["None"] + [1] * (len(factors) - 1))  # innermost 1: outer = full extent
        out.append([1] * (len(factors) - 1) + ["None"])  # outer 1: inner = full extent
    for i in ints:
        if factors[i] != 1:
            out.append([*factors[:i], 1, *factors[i + 1:]])
    return [f for f in out if f != factors]


def propose_decisions(case: Case) -> list[Case]:
    trace = case.trace
    out: list[Case] = []
    for idx, inst in enumerate(trace_edit.instructions(trace)):
        kind, inputs = inst[0], inst[1]
        decision = trace_edit.decision_of(trace, idx)
        if decision is not None:
            if kind == "SamplePerfectTile" and isinstance(decision, list):
                alts = _tile_candidates(decision)
            elif kind == "SampleCategorical":
                alts = [0]
            elif kind == "SampleComputeLocation":
                alts = [-1]
            else:
                alts = []
            out += [with_trace(case, trace_edit.with_decision(trace, idx, a))
                    for a in alts if a != decision]
        if kind in ("Split", "LoopPartition") and len(inputs) > 2:
            for factors in _factor_candidates(list(inputs[1:])):
                out.append(with_trace(case, trace_edit.with_inputs(trace, idx, [inputs[0], *factors])))
        if (kind == "Annotate" and len(inst) > 2 and inst[2] and inst[2][0] in BUDGET_ANNOTATIONS
                and len(inputs) > 1 and isinstance(inputs[1], int) and inputs[1] > 1):
            out.append(with_trace(case, trace_edit.with_inputs(trace, idx, [inputs[0], 1])))
    return out


# -- workload parameters ----------------------------------------------------------------------------
def _smaller_ints(v: int) -> list[int]:
    return sorted({x for x in (1, 2, 3, v // 4, v // 2, (3 * v) // 4, v - 1) if 1 <= x < v})


def propose_params(case: Case) -> list[Case]:
    """Smaller workload parameters, one at a time — only ones the workload could have drawn
    (``params_problem``)."""
    wl = workloads[case.workload_name]
    params = case.params
    out: list[Case] = []

    def variant(key: str, value: Any) -> Case:
        p = copy.deepcopy(params)
        p[key] = value
        return edited(case, workload={"name": case.workload_name, "params": p})

    for key in sorted(params):
        v = params[key]
        if isinstance(v, bool):
            if v:
                out.append(variant(key, False))
        elif isinstance(v, int):
            out += [variant(key, x) for x in _smaller_ints(v)]
        elif isinstance(v, list) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            for i, x in enumerate(v):
                out += [variant(key, [*v[:i], y, *v[i + 1:]]) for y in _smaller_ints(x)]
        elif key == "dtype" and isinstance(v, str):
            labels = list(getattr(wl, "dtype_labels", ()))
            ranked = [d for d in DTYPE_PREFERENCE if d in labels]
            for d in ranked[: ranked.index(v)] if v in ranked else ranked:
                out.append(variant(key, d))
    problem = getattr(wl, "params_problem", lambda p: None)
    return [c for c in out if problem(c.params) is None]


# -- inputs -----------------------------------------------------------------------------------------
def exact_mode_allowed(case: Case) -> bool:

    try:
        specs = workloads[case.workload_name].inputs(case.params)
    except Exception:  # noqa: BLE001 - a workload that cannot say: no exact mode
        return False
    return bool(specs) and all(getattr(s, "int_max", 0) >= 1 for s in specs)


def propose_inputs(case: Case) -> list[Case]:
    current = (case.inputs.get("distribution"), case.inputs.get("seed"), case.oracle.get("mode"))
    levels: list[tuple[Any, Any, Any]] = []
    if exact_mode_allowed(case):
        levels += [("ones", 0, "exact"), ("tiny_ints", 0, "exact"), ("small_ints", 0, "exact")]
    levels += [("ones", 0, "bound"), (current[0], 0, current[2])]
    if current in levels:  # only what is simpler than the current inputs
        levels = levels[: levels.index(current)]
    return [edited(case, inputs=dict(case.inputs, distribution=d, seed=s),
                   oracle=dict(case.oracle, mode=m)) for d, s, m in levels]


# -- compiler options -------------------------------------------------------------------------------
def propose_options(case: Case) -> list[Case]:
    """Every compiler option the bug may not need, dropped: all of them at once first (the
    common case, one candidate), then each target attribute (``mcpu``, ``mattr``) and each
    PassContext entry alone, then each key of a dict-valued entry (``tirx.UnrollLoop``'s
    ``explicit_unroll``, say) alone.  ``greedy`` repeats this until none can go, so whatever
    survives is needed by the bug, one option at a time."""
    target_opts = [k for k in OPTION_TARGET_KEYS if k in case.target]
    base_target = {k: v for k, v in case.target.items() if k not in OPTION_TARGET_KEYS}
    out = []
    if target_opts and case.pass_config:
        out.append(edited(case, target=base_target, pass_config={}))
    if target_opts:
        out.append(edited(case, target=base_target))
        if len(target_opts) > 1:
            for key in target_opts:
                out.append(edited(case, target={k: v for k, v in case.target.items() if k != key}))
    if case.pass_config:
        out.append(edited(case, pass_config={}))
        if len(case.pass_config) > 1:
            for key in sorted(case.pass_config):
                out.append(edited(case, pass_config={k: v for k, v in case.pass_config.items()
                                                     if k != key}))
        for key in sorted(case.pass_config):
            value = case.pass_config[key]
            if isinstance(value, dict) and len(value) > 1:
                for sub in sorted(value):
                    smaller = {k: v for k, v in value.items() if k != sub}
                    out.append(edited(case, pass_config=dict(case.pass_config, **{key: smaller})))
    return out


# -- the target -------------------------------------------------------------------------------------
#: GPU targets whose kernels the CPU target can run too, once the thread bindings are gone
GPU_KINDS = ("opencl", "cuda")


def propose_cpu_target(case: Case) -> list[Case]:
    """A TIR case on a GPU target, on llvm with its ``bind`` steps dropped (a bound loop
    becomes a serial one): a bug of the schedule or of TVM's common lowering fails there
    too, and its repro then runs anywhere, without pyopencl, a device or nvcc — and the
    rest of the minimization no longer needs the GPU's scaffolding (the fuse/split that
    made the thread loops).  A bug of the GPU's own lowering, codegen or runtime passes on
    llvm, so this candidate is refused like any other."""
    trace = case.schedule.get("trace")
    if case.target.get("kind") not in GPU_KINDS or not trace_edit.instructions(trace):
        return []
    binds = [i for i, inst in enumerate(trace_edit.instructions(trace)) if inst[0] == "Bind"]
    cpu = trace_edit.drop_dead_lookups(trace_edit.remove(trace, binds)) if binds else trace
    return [edited(case, target={"kind": "llvm"}, schedule=dict(case.schedule, trace=cpu))]


def greedy(case: Case, propose: Propose, first_interesting: Callable[[list[Case]], Case | None],
           should_stop: Callable[[], bool], seen: set[str] | None = None) -> Case:
    """Apply ``propose`` until none of its candidates is interesting (first one wins).

    A candidate already proposed (``seen``, shared across passes and rounds) is never
    proposed again, so two simplifications that undo each other (``[None, 1]`` ↔
    ``[1, None]``) cannot cycle.
    """
    seen = seen if seen is not None else set()
    seen.add(case.id)
    while not should_stop():
        candidates = [c for c in propose(case) if c.id not in seen]
        seen.update(c.id for c in candidates)
        found = first_interesting(candidates)
        if found is None:
            return case
        case = found
    return case
