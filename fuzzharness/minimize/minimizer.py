"""Minimize one failing case while it stays the same bug: the orchestration of the passes.

Order (each phase stops at the deadline; the best case so far is always kept):

1. confirm — the original case is run again (in a worker, up to :data:`CONFIRM_TRIES` times)
   and must still be interesting; a failure that does not reproduce is reported as such,
   never minimized into a repro;
2. ``hypothesis`` — for a failure raised while its schedule was drawn (no case, only the
   generator's choice sequence; cases themselves skip it, see :data:`HYPOTHESIS_WITH_A_CASE`),
   when the generation settings regenerate it exactly, Hypothesis' shrinker shrinks the choices
   (:mod:`fuzzharness.minimize.hypothesis_shrink`; at most :data:`HYPOTHESIS_SHARE` of the
   budget, because it runs one candidate at a time);
3. the case passes (:func:`shrink_passes`, each a :class:`ShrinkPass` with its counters:
   calls, improvements, candidates run, seconds — printed with the result's phases) —
   compiler options, trace ddmin, decisions and factors, workload parameters, inputs —
   repeated until a whole round changes nothing (a GPU case is tried on llvm without its
   binds right after the options: a bug that is not the GPU's own gets a repro that runs
   anywhere).  Their candidates run in batches, one per worker.  The schedule pass and
   the first simplifications are the case kind's (:class:`fuzzharness.core.kinds.CaseKind`):
   for a TIR case ddmin over its trace and the sampling decisions; for a Relax graph case
   ddmin over each fused function's trace and the graph's own edits
   (:func:`fuzzharness.kinds.relax.minimize.propose`: drop outputs and nodes, plainer
   attributes, smaller shapes, a simpler mode).

The interestingness predicate is :class:`~fuzzharness.minimize.predicate.SameBug` on the
bucket signature of the original failure.  A failure raised while the schedule was being
*generated* (the campaign stored no case, only ``(seed, index)``) is minimized in phase 2
only: its result is a choice sequence, not a case with a trace.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from fuzzharness.buckets.signatures import Signature
from fuzzharness.core.case import Case
from fuzzharness.core.kinds import shrink_kind
from fuzzharness.core.verdict import Verdict
from fuzzharness.minimize import DEFAULT_BUDGET, passes
from fuzzharness.minimize import hypothesis_shrink as hs
from fuzzharness.minimize.evaluator import Evaluator
from fuzzharness.minimize.predicate import SameBug

HYPOTHESIS_SHARE = 0.5  # of the budget, at most
#: Shrink the choice sequence of a failure that has a stored case too?  Measured on four
#: class-0 buckets of a default campaign (2 workers, loaded 2-core machine): the phase took
#: its whole 30 s share each time, one candidate at a time, and left the case unchanged in
#: two of them; the trace ddmin (candidates in parallel) and the params pass then did the
#: shrinking.  So only a failure *without* a case (raised while its schedule was drawn) goes
#: through Hypothesis, where it is the only way to shrink it.
HYPOTHESIS_WITH_A_CASE = False
CONFIRM_TRIES = 3  # runs of the original before a failure counts as not reproducing
Say = Callable[[str], None]  # one progress line


@dataclasses.dataclass
class MinimizeResult:
    """What minimizing one failure produced (plain data in :meth:`to_dict`)."""

    target: Signature  # the bucket's signature
    original: Case | None
    original_verdict: Verdict | None
    case: Case | None  # the minimized case (None: only a choice sequence, see choices)
    verdict: Verdict | None
    signature: Signature | None  # of the minimized case
    reproduced: bool  # the original reproduced at the start
    seconds: float
    runs: int  # candidates executed
    phases: list[str] = dataclasses.field(default_factory=list)
    choices: list[Any] | None = None  # for failures raised while generating the schedule
    generation_error: BaseException | None = None
    note: str = ""
    passes: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # ShrinkPass counters

    @property
    def original_length(self) -> int:
        return passes.size(self.original) if self.original is not None else -1

    @property
    def length(self) -> int:
        return passes.size(self.case) if self.case is not None else -1

    @property
    def unit(self) -> str:
        return passes.size_unit(self.original or self.case)

    def to_dict(self) -> dict[str, Any]:
        return {
            "bucket": self.target.key,
            "target": self.target.to_dict(),
            "signature": self.signature.to_dict() if self.signature else None,
            "signature_key": self.signature.key if self.signature else None,
            "reproduced": self.reproduced,
            "original_case_id": self.original.id if self.original else None,
            "case_id": self.case.id if self.case else None,
            "original_length": self.original_length,
            "length": self.length,
            "unit": self.unit,
            "seconds": round(self.seconds, 2),
            "runs": self.runs,
            "phases": self.phases,
            "passes": self.passes,
            "note": self.note,
        }


def minimize(case: Case | None, verdict: Verdict | None, target: Signature, *,
             choices: Sequence[Any] | None = None, gen_settings=None,
             budget: float = DEFAULT_BUDGET, workers: int = 2, timeout: float = 20.0,
             memory_mb: int = 4096, progress: Say | None = None,
             strict: bool = False, pool=None) -> MinimizeResult:
    """Minimize ``case`` (or, when it is None, the choice sequence ``choices``) for ``target``.

    ``gen_settings`` (:class:`fuzzharness.generators.cases.GenSettings`) enables the Hypothesis phase.
    ``timeout`` is per candidate; a hang bucket needs the campaign's timeout here.
    ``pool``: where candidates run (an executor's ``run``; default: a private
    :class:`~fuzzharness.engine.pool.WorkerPool` of ``workers`` processes) — a minimization
    lane passes the campaign's shared workers (:class:`fuzzharness.campaign.minimizing.lane.RemotePool`).
    """
    start = time.monotonic()
    deadline = start + budget
    say = progress or (lambda msg: None)
    predicate = SameBug(target, strict=strict)
    result = MinimizeResult(target, case, verdict, case, verdict, None, False, 0.0, 0)
    with Evaluator(predicate, workers=workers, timeout=timeout, memory_mb=memory_mb,
                   deadline=deadline, pool=pool) as ev:
        if case is not None:
            say(f"confirming the original ({passes.size(case)} {passes.size_unit(case)})")
            tries = [ev.verdicts([case])[0]]
            while not ev.is_interesting(case, tries[-1]) and len(tries) < CONFIRM_TRIES:
                tries.append(ev.rerun(case))  # a flaky crash may need another go
            v = tries[-1]
            if not ev.is_interesting(case, v):
                result.note = (f"the original case did not reproduce its bucket in {len(tries)} "
                               "runs: " + (v.line() if v is not None else "out of time"))
                result.verdict = v
                return _finish(result, ev, start)
            if len(tries) > 1:
                result.phases.append(f"flaky: the original reproduced on run {len(tries)} of "
                                     f"{len(tries)}")
            result.reproduced, result.verdict = True, v
        seq = list(choices if choices is not None else (case.origin.get("choices") if case else None) or [])
        if case is not None and not HYPOTHESIS_WITH_A_CASE:
            seq = []  # the case passes do better (see HYPOTHESIS_WITH_A_CASE)
        if seq and gen_settings is not None:
            case = _hypothesis_phase(result, case, seq, gen_settings, ev, predicate,
                                     min(deadline, start + HYPOTHESIS_SHARE * budget), say)
        elif case is None:
            result.note = "no case and no choice sequence to minimize"
            return _finish(result, ev, start)
        if case is not None and result.reproduced:
            case = _case_passes(result, case, ev, say)
        result.case = case
        if case is not None:
            result.verdict = ev.cache.get(case.id, result.verdict)
    return _finish(result, ev, start)


def _finish(result: MinimizeResult, ev: Evaluator, start: float) -> MinimizeResult:
    result.seconds = time.monotonic() - start
    result.runs = ev.runs
    if result.verdict is not None and result.reproduced:
        result.signature = ev.predicate.signature_of(
            result.case.to_dict() if result.case else None, result.verdict)
    return result


def _hypothesis_phase(result, case, seq, gen_settings, ev, predicate, deadline, say):

    say(f"hypothesis: shrinking {len(seq)} choices")

    def evaluate(c: Case):
        (v,) = ev.verdicts([c])
        return v

    last = {"at": 0.0, "what": None}

    def on_improve(r) -> None:  # at most one line per 2 s, and only when something shrank
        n = passes.size(r.case) if r.case is not None else 0
        what = (len(r.choices), n)
        if what != last["what"] and time.monotonic() - last["at"] >= 2.0:
            say(f"hypothesis: {len(r.choices)} choices, size {n} ({r.calls} tried)")
            last.update(at=time.monotonic(), what=what)

    saved = ev.deadline
    ev.deadline = deadline
    try:
        shrunk = hs.shrink_choices(seq, gen_settings, evaluate=evaluate, interesting=predicate,
                                   deadline=deadline, on_improve=on_improve)
    finally:
        ev.deadline = saved
    if shrunk is None:
        result.phases.append("hypothesis: the choices do not regenerate this failure (skipped)")
        return case
    result.reproduced = True
    result.phases.append(f"hypothesis: {len(seq)} → {len(shrunk.choices)} choices "
                         f"in {shrunk.calls} calls")
    if shrunk.case is None:  # the failure happens while the schedule is drawn
        result.choices, result.generation_error = shrunk.choices, shrunk.error
        result.verdict = shrunk.verdict
        return None
    origin = dict(shrunk.case.origin)
    if case is not None:
        origin["minimized_from"] = case.origin.get("minimized_from") or case.id
    return shrunk.case.replace(origin=origin)


@dataclasses.dataclass
class ShrinkPass:
    """One named simplification of a case, as Hypothesis' shrinker has them: ``step(case)``
    returns the simplest interesting case it finds from ``case`` (or ``case`` itself); the
    minimizer runs every pass in order, round after round, until a round changes nothing,
    and each pass counts what it cost and what it won — the minimizer's report prints the
    counters (:meth:`summary`, ``MinimizeResult.passes``)."""

    name: str
    step: Callable[[Case], Case]
    calls: int = 0
    improved: int = 0  # calls that returned a simpler case
    runs: int = 0  # candidates executed during its calls
    seconds: float = 0.0

    def __call__(self, case: Case, ev: Evaluator) -> Case:
        runs, start = ev.runs, time.monotonic()
        new = self.step(case)
        self.calls += 1
        self.improved += new.id != case.id
        self.runs += ev.runs - runs
        self.seconds += time.monotonic() - start
        return new

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "calls": self.calls, "improved": self.improved,
                "runs": self.runs, "seconds": round(self.seconds, 2)}

    def summary(self) -> str:
        return f"{self.name} {self.improved}/{self.calls} ({self.runs} runs, {self.seconds:.1f} s)"


def shrink_passes(case: Case, ev: Evaluator, result: MinimizeResult) -> list[ShrinkPass]:
    """The case passes in the order they run: the compiler options first (one candidate
    drops them all, and a bucket whose time runs out in the trace ddmin must not keep options
    the bug does not need), a GPU case on the CPU target (before the trace ddmin, which then
    runs on llvm), the case kind's schedule pass, its own simplifications, then workload
    parameters and inputs."""

    def first(cands: list[Case]) -> Case | None:
        hit = ev.first_interesting(cands)
        return hit[1] if hit else None

    stop = ev.out_of_time
    seen: set[str] = set()  # shared: no candidate is proposed twice (passes.greedy)
    kind = shrink_kind(case)

    def greedy(propose):
        return lambda c: passes.greedy(c, propose, first, stop, seen)

    return ([ShrinkPass("options", greedy(passes.propose_options)),
             ShrinkPass("target", greedy(passes.propose_cpu_target)),
             ShrinkPass("trace", lambda c: kind.minimize_schedule(c, first, stop,
                                                                  result.target.stage))]
            + [ShrinkPass(name, greedy(propose)) for name, propose in kind.simplifications()]
            + [ShrinkPass("params", greedy(passes.propose_params)),
               ShrinkPass("inputs", greedy(passes.propose_inputs))])


def _case_passes(result: MinimizeResult, case: Case, ev: Evaluator, say: Say) -> Case:
    all_passes = shrink_passes(case, ev, result)
    rounds = 0
    while not ev.out_of_time():
        rounds += 1
        before = case.id
        for p in all_passes:
            n0 = passes.size(case)
            new = p(case, ev)
            if p.name == "trace":
                say(f"trace: {n0} → {passes.size(new)} {passes.size_unit(new)} "
                    f"({ev.runs} runs, {ev.time_left():.0f} s left)")
            elif new.id != case.id:
                say(f"{p.name}: simplified to {passes.size(new)} {passes.size_unit(new)} "
                    f"({ev.runs} runs, {ev.time_left():.0f} s left)")
            case = new
        if case.id == before:
            break
    result.passes = [p.to_dict() for p in all_passes]
    result.phases.append(f"passes: {rounds} rounds, {passes.size_unit(case)} "
                         f"{result.original_length} → {passes.size(case)}; "
                         + ", ".join(p.summary() for p in all_passes if p.calls))
    return case
