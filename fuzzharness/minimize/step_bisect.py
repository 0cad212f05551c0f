"""The culprit *step* of a schedule: the first primitive after which the case fails.

The pass probe (:mod:`fuzzharness.kinds.tir.pass_bisect`) asks which lowering pass makes a
scheduled program wrong; when none does, the scheduled program is already wrong and the
question becomes which schedule step made it so.  This replays growing prefixes of the
minimized trace — the lookups each step needs, then the steps up to the k-th — and names the
first step whose prefix fails with the same symptom class.
Steps before it were needed to *reach* the bug (a cache_read that gives blockize a sibling,
a split before a reindex); the culprit step is where TVM went wrong.

A *defect* the scheduled program shows may appear before the first failing prefix: a
pad_einsum that enlarges a loop another block shares leaves that block iterating outside its
domain, harmlessly until a later transform_layout folds its stores onto a live row.  When
the whole case's program has a located fact (:func:`fuzzharness.execution.facts.located_facts`),
:func:`fuzzharness.minimize.located.located_step` finds the first prefix that has it — static trace replays, nothing
compiled — and that step is the culprit if it comes no later than the first failing one.

``prefixes`` builds the candidate cases, :func:`culprit_step` runs them in a worker process
(a prefix can crash TVM) and ``first_failing`` reads the verdicts.  The probed trace
(:func:`probed_trace`) is a TIR case's own, or a graph's when one fused function carries a
schedule (the graph is otherwise unchanged).  With several scheduled functions the probe
first runs the graph with each one's schedule alone (:func:`one_function_cases`): when
exactly one of them fails the same way, its trace is probed (a softmax's loop_partition bug
kept a bystander subtract's vectorize); otherwise none is named.  The step is evidence for
recognizing a *known* bug reached by a longer route (a known bug whose trigger is one
primitive, :meth:`fuzzharness.buckets.known_bug.KnownBug.matches_minimized`), and with the
*site* it acted on (:mod:`fuzzharness.minimize.step_site`) it keys a root cause: the step
alone would merge different bugs that go wrong at one primitive (pad_einsum, reindex,
cache_write each have several; benchmarks/dedup_precision.py --steps measured 6 false merges
on 138 labelled repros).
"""

from __future__ import annotations

from collections.abc import Sequence

from fuzzharness.buckets.root_causes import MEMORY_CRASH, WRONG_OUTPUT, symptom_class
from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.core.case import Case
from fuzzharness.core.kinds import shrink_kind
from fuzzharness.core.traces import primitive_sequence
from fuzzharness.core.verdict import Status, Verdict
from fuzzharness.minimize import trace_edit
from fuzzharness.minimize.step_site import site_facts


def probed_trace(case: Case) -> tuple[str, object] | None:
    """(the scheduled function's name, its trace) of the trace the probe cuts: a TIR case's
    (name ``""``), a graph's single scheduled function's; None when there is none."""
    return shrink_kind(case).probed_trace(case)


def one_function_cases(case: Case) -> list[Case]:
    """A graph whose schedule spans several functions, once per scheduled function with only
    that function's schedule kept; [] for a TIR case or a graph with fewer than two."""
    return shrink_kind(case).one_function_cases(case)


def probeable(case: Case) -> bool:
    """Whether :func:`culprit_step` has a trace to probe (or functions to pick one from)."""
    return probed_trace(case) is not None or bool(one_function_cases(case))


def with_trace(case: Case, name: str, trace: object) -> Case:
    """``case`` with the probed trace replaced (a graph keeps its function's fingerprint)."""
    if not name:
        return case.replace(schedule=dict(case.schedule, trace=trace))
    functions = case.schedule["functions"]
    return case.replace(schedule=dict(case.schedule, functions={name: dict(functions[name], trace=trace)}))


def prefixes(case: Case) -> list[tuple[str, Case]]:
    """(step primitive, the case with the trace cut after that step) for every schedule step
    but the last (the whole case is the last prefix), in trace order, after the unscheduled
    program (step ``""``: the prefix before the first step) — each prefix twice when
    the workload allows exact inputs: with the case's inputs and with small integers
    (:data:`PROBE_INPUTS`).  A minimized case keeps the simplest inputs that still show the
    *whole* schedule's failure, often all ones, on which an earlier step's fault may not
    show (the max of ones is one however many partitions reset it): the step is the first
    whose prefix fails on either."""
    probed = probed_trace(case)
    if probed is None:
        return []
    name, trace = probed
    steps = trace_edit.step_indices(trace)
    out = []
    for j in [-1, *steps[:-1]]:
        cut = trace_edit.prefix_through(trace, j)
        prims = primitive_sequence(cut)
        if j >= 0 and not prims:
            continue
        prefix = with_trace(case, name, cut)
        step = prims[-1] if j >= 0 else ""
        out.append((step, prefix))
        probe = _probe_inputs(prefix)
        if probe is not None:
            out.append((step, probe))
    return out


#: the inputs a prefix is also run with: small integers, judged exactly
PROBE_INPUTS = ("small_ints", 0, "exact")


def _probe_inputs(case: Case) -> Case | None:
    from fuzzharness.minimize.passes import exact_mode_allowed

    dist, seed, mode = PROBE_INPUTS
    if (case.inputs.get("distribution"), case.oracle.get("mode")) == (dist, mode) \
            or not exact_mode_allowed(case):
        return None
    return case.replace(inputs=dict(case.inputs, distribution=dist, seed=seed),
                        oracle=dict(case.oracle, mode=mode))


def first_failing(target: Signature, candidates: Sequence[tuple[str, Case]],
                  verdicts: Sequence[Verdict | None], whole: str
                  ) -> tuple[str, tuple[str, ...], Case | None]:
    """(the culprit step, the schedule facts of the prefix that ends with it, that prefix):
    the first candidate that fails with ``target``'s symptom class (and stage; any kernel
    stage for a memory crash), else ``whole`` (the last step) with ``target``'s facts and
    None (the whole case).  Facts may differ from the whole case's: a later step can hide
    the shape a bug leaves (a cache_write of one partition makes the inits write two
    buffers).

    For a memory crash that no prefix shows, while the prefix before the last step computes
    garbage on the case's inputs, the first step after which the output was garbage is the
    culprit: a kernel reading out of bounds shows garbage until a later step moves the access
    onto memory that faults (read_at's unclamped copy: nan, then SIGSEGV once cache_index
    follows).  When the prefix before the last step passed, the last step stays the culprit
    and an earlier garbage prefix is not blamed: it may be another bug (a merge's wrong
    output before pad_einsum's out-of-bounds stores).

    A step is the culprit only when the prefix before it (on the same inputs) *passed*:
    when that prefix could not run — an OpenCL kernel before its ``bind`` does not compile —
    the step is only the first one after which the program runs at all, which names no
    bug: ("", (), None)."""
    want = symptom_class(target)
    passed: dict[str, bool] = {}  # inputs → did the last prefix run on them pass
    garbage = None  # for a memory crash: the first step after which the output was garbage
    for (step, case), v in zip(candidates, verdicts, strict=True):
        key = _inputs_key(case)
        before = passed.get(key, True)  # the first step: the unscheduled program before it
        if v is not None and v.is_finding:
            sig = signature(case.to_dict(), v)
            if sig is not None and symptom_class(sig) == want and (
                    sig.stage == target.stage or want == MEMORY_CRASH):
                return (step, tuple(sig.facts), case) if before and step else ("", (), None)
            if sig is not None and garbage is None and before and step \
                    and want == MEMORY_CRASH and symptom_class(sig) == WRONG_OUTPUT:
                garbage = (step, tuple(sig.facts), case)
        passed[key] = v is not None and v.status is Status.PASS
    if candidates and not passed.get(_inputs_key(candidates[0][1]), True):
        # the prefix before the last step failed on the case's inputs: a memory fault that
        # showed as garbage first is that step's; otherwise it did not run, and names nothing
        return garbage or ("", (), None)
    return whole, tuple(target.facts), None


def _inputs_key(case: Case) -> str:
    return repr((sorted(case.inputs.items()), sorted(case.oracle.items())))


def culprit_step(case: Case, target: Signature, *, timeout: float = 20.0
                 ) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The first step after which ``case`` fails like ``target``, that prefix's facts and
    the site the step acted on (:func:`fuzzharness.minimize.step_site.site_facts`;
    ("", (), ()) without a probed trace).  The prefixes run in one worker process; the site is
    read here (a replay of steps the case already ran, no compilation)."""
    from fuzzharness.engine.pool import WorkerPool

    probed = probed_trace(case)
    if probed is None and one_function_cases(case):
        alone = the_failing_function(case, target, timeout=timeout)
        return culprit_step(alone, target, timeout=timeout) if alone else ("", (), ())
    prims = primitive_sequence(probed[1]) if probed else []
    if not prims:
        return "", (), ()
    cands = prefixes(case)
    verdicts: list[Verdict | None] = [None] * len(cands)
    if cands:
        with WorkerPool(1, timeout=timeout) as pool:
            for res in pool.run([{"task": i, "case": c.to_dict()} for i, (_, c) in enumerate(cands)]):
                verdicts[res.task["task"]] = res.verdict
    return conclude(case, target, cands, verdicts)


def conclude(case: Case, target: Signature, candidates: Sequence[tuple[str, Case]],
             verdicts: Sequence[Verdict | None]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What :func:`culprit_step` concludes from the verdicts of ``case``'s :func:`prefixes`
    (also for a caller that ran them in its own pool): the first failing step
    (:func:`first_failing`), or the step that made a located defect the whole case has when
    it comes no later — or when no step is named (:mod:`fuzzharness.minimize.located`) —,
    that prefix's facts and the site the step acted on."""
    trace = probed_trace(case)[1]
    step, facts, prefix = first_failing(target, candidates, verdicts, primitive_sequence(trace)[-1])
    # with no failing step named (a GPU kernel's prefixes before its bind do not run) the
    # located defect is the only evidence of the step, and it is in the failing program
    located = _located(case)
    at = _position(prefix, trace)
    if located and located[0] <= at:
        # the first failing prefix shows a defect an earlier (or the same) step made: that
        # step is the culprit (its prefix's facts are the defect's, plus the failing
        # prefix's own when they are one prefix)
        same = located[0] == at
        _, step, made, prefix = located
        facts = tuple(sorted({*made, *(facts if same else ())}))
    return step, facts, site_facts(prefix or case) if step else ()


def _located(case: Case) -> tuple[int, str, tuple[str, ...], Case | None] | None:
    """:func:`fuzzharness.minimize.located.located_step_isolated`, its trace as a prefix case."""
    from fuzzharness.minimize.located import located_step_isolated

    found = located_step_isolated(case)
    if found is None:
        return None
    position, step, made, cut = found
    return position, step, made, None if cut is None else with_trace(case, probed_trace(case)[0], cut)


def _position(case: Case | None, whole: object) -> int:
    """How many schedule steps (instructions that are not lookups or samplers, as
    :func:`fuzzharness.minimize.located.located_step` counts them) the probed trace of
    ``case`` has (of the ``whole`` trace for None).  Not the primitive sequence's length:
    one primitive can be several instructions (a software pipeline's two annotations)."""
    probed = probed_trace(case) if case is not None else None
    trace = probed[1] if probed else whole
    return len(trace_edit.step_indices(trace))


def the_failing_function(case: Case, target: Signature, *, timeout: float = 20.0) -> Case | None:
    """The graph with one function's schedule alone that fails like ``target`` (symptom class
    and stage; any kernel stage for a memory crash), when exactly one does; else None."""
    from fuzzharness.engine.pool import WorkerPool

    cands = one_function_cases(case)
    want, failing = symptom_class(target), []
    with WorkerPool(1, timeout=timeout) as pool:
        for res in pool.run([{"task": i, "case": c.to_dict()} for i, c in enumerate(cands)]):
            v, c = res.verdict, cands[res.task["task"]]
            sig = signature(c.to_dict(), v) if v is not None and v.is_finding else None
            if sig is not None and symptom_class(sig) == want and (
                    sig.stage == target.stage or want == MEMORY_CRASH):
                failing.append(c)
    return failing[0] if len(failing) == 1 else None
