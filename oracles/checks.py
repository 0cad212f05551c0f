"""Checks: the references a run's outputs are judged by, registered like primitives.

A compiled kernel runs on one or two input sets (:mod:`fuzzharness.execution.second_run`);
every registered :class:`Check` judges every run, and :func:`combine` makes the case's one
judgement of their results.  Adding an oracle is one module with one class::

    from fuzzharness.oracles.checks import CheckBase, CheckResult, register_check

    @register_check
    class MyCheck(CheckBase):
        name = "my_check"

        def judge(self, data):            # -> CheckResult, or a str: why it does not apply
            ...

Built in, by ``precedence`` (lower first: the order of the results and, among failures,
which one decides, see :func:`combine`; a check without one comes after these):

``bound``      the float64 reference with its error bound (:mod:`fuzzharness.oracles.bounds`)
               — here;
``emulation``  the program's own arithmetic in its own dtypes
               (:mod:`fuzzharness.oracles.emulation_check`, over the interpreter of
               :mod:`fuzzharness.oracles.emulate`; registered by name, imported on first use).

Besides checks, two more registries here compose a verdict: **input sets**
(:class:`InputSet`, :func:`register_input_set`; built in ``second``,
:mod:`fuzzharness.generators.input_sets`) — each one more run of the compiled kernel, judged
by every check under its name — and **program checks** (:class:`ProgramCheck`,
:func:`register_program_check`; built in ``baseline``, the unscheduled program of
:mod:`fuzzharness.oracles.metamorphic`) — a comparison with another build, planned after
the runs are judged because it costs a compile, each concluding on the status the previous
one left.

Invariants: a check never raises for a program it cannot judge — it says why (the reasons
land in the verdict's details as ``<name>_skipped``); a check whose claim a legal lowering
may break (a same-order claim) sets ``strict``: its failure alone is a note
(``order_preserving_divergence``), never a failure; the order of checks is
``(precedence, name)``, never import order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from fuzzharness.core.registry import Registry
from fuzzharness.core.verdict import Status
from fuzzharness.oracles.compare import Judgement, judge

FAILED = frozenset({Status.WRONG_RESULT, Status.NAN_INF})


@dataclasses.dataclass
class CheckResult:
    run: str  # "first", or the name of an input set ("second")
    reference: str  # the check's name: "bound", "emulation", a plugin's
    judgement: Judgement
    complete: bool  # every element judged (bound: none unbounded; emulation: all determined)
    note: str = ""  # what the check covered, for the verdict's details
    #: a claim that a legal lowering may break (same order): its failure is a note, not a failure
    strict: bool = False
    ordered: bool = True  # emulation: same order (True) or order-independent elements (False)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)  # more for the details

    def to_dict(self) -> dict[str, Any]:
        j = self.judgement
        return {"run": self.run, "reference": self.reference, "status": j.status.value,
                "ratio": j.ratio, "complete": self.complete, "note": self.note, **self.extra}


@dataclasses.dataclass(frozen=True)
class RunData:
    """One run of a compiled kernel, as every check sees it."""

    run: str  # "first", or the name of an input set ("second")
    case: Any  # fuzzharness.core.case.Case
    func: Any  # the unscheduled PrimFunc
    order: Any  # fuzzharness.oracles.order's analysis of the schedule
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    expected: Any  # fuzzharness.oracles.bounds.Expected: the float64 reference and its bounds
    exact_inputs: bool  # the inputs are exact (exact mode, or the exact second run)


class Check(Protocol):
    name: str
    precedence: int  # lower: judged, listed and (among failures) deciding first

    def judge(self, data: RunData) -> CheckResult | str:
        """The result of this check on one run, or why it does not apply."""

    def judge_baseline(self, data: RunData, result: CheckResult | None,
                       baseline: dict[str, np.ndarray]) -> Judgement:
        """Judge the unscheduled program's ``baseline`` outputs on ``data``'s inputs the way
        ``result`` (this check's, which decided the case; None: no check failed) judged."""


class CheckBase:
    """Defaults: the baseline is judged by judging it as the run's outputs."""

    name = ""
    precedence = 100

    def judge(self, data: RunData) -> CheckResult | str:  # pragma: no cover - abstract
        raise NotImplementedError

    def judge_baseline(self, data: RunData, result: CheckResult | None,
                       baseline: dict[str, np.ndarray]) -> Judgement:
        again = self.judge(dataclasses.replace(data, outputs=baseline))
        if isinstance(again, str):
            return Judgement(Status.INCONCLUSIVE, 0.0, 0.0, None, None, again, again)
        return again.judgement


def _registrar(registry: Registry) -> Callable[[type], type]:
    def register(cls: type) -> type:
        """Class decorator: register one instance of ``cls`` under its ``name``."""
        registry.add(cls.name, cls())
        return cls

    return register


def _by_precedence(registry: Registry) -> list[Any]:
    """The entries of ``registry`` by ``(precedence, name)``, never import order."""
    return sorted((e for _, e in registry.items()), key=lambda e: (e.precedence, e.name))


checks: Registry[Check] = Registry("check")
register_check = _registrar(checks)


@register_check
class BoundCheck(CheckBase):
    """The float64 reference with its error bound: sound for every schedule and every legal
    lowering (any summation order, any wider accumulator)."""

    name = "bound"
    precedence = 0

    def judge(self, data: RunData) -> CheckResult:
        j = judge(data.expected, data.outputs)
        return CheckResult(data.run, self.name, j, j.status is not Status.INCONCLUSIVE
                           and j.inconclusive is None)

    def judge_baseline(self, data, result, baseline):
        return judge(data.expected, baseline)


checks.add_lazy("emulation", "fuzzharness.oracles.emulation_check:EMULATION")


# -- input sets: the runs besides the first ---------------------------------------------------


class InputSet(Protocol):
    """Another set of inputs the compiled kernel runs on (running and judging cost ~1 % of
    compiling): every check judges that run too, under the input set's ``name``."""

    name: str  # the run's label in the verdict's checks ("second")
    precedence: int  # lower: run, judged and (among failures of one check) deciding first

    def inputs(self, case: Any, workload: Any, specs: Any) -> tuple[str, dict[str, np.ndarray]] | None:
        """(what the inputs are, e.g. ``exact``; the arrays, by input name, each of its
        spec's shape and numpy dtype — as ``make_inputs`` gives them — else the case is a
        ``harness_error``), or None: this input set does not apply to the case.  Must depend
        on the case alone (a replay runs the same inputs)."""

    def details(self, case: Any, label: str) -> dict[str, Any]:
        """What the verdict's details say of this run (``<name>_run``)."""


input_sets: Registry[InputSet] = Registry("input set")
register_input_set = _registrar(input_sets)


#: the built-in second run (exact inputs, or another float distribution): it draws inputs
#: with the generators' input makers, a layer above this one
input_sets.add_lazy("second", "fuzzharness.generators.input_sets:SECOND")


def ordered_input_sets() -> list[InputSet]:
    return _by_precedence(input_sets)


def run_order() -> list[str]:
    """The runs of a case in order: the first (the case's own inputs), then the input sets."""
    return ["first", *(s.name for s in ordered_input_sets())]


# -- program checks: against another build of the case's program ------------------------------


@dataclasses.dataclass
class Conclusion:
    """What a program check makes of the case's judgement."""

    status: Status
    message: str | None  # replaces the judgement's message when set
    details: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Judged:
    """A judged case, as a program check sees it."""

    case: Any  # fuzzharness.core.case.Case
    func: Any  # the unscheduled PrimFunc
    order: Any  # fuzzharness.oracles.order's analysis of the schedule
    expected: Any  # the first run's references
    outputs: dict[str, np.ndarray]  # the first run's outputs
    judgement: Judgement  # of every run by every check (combine); a program check may amend it
    same_program: bool  # the scheduled module equals the unscheduled one (an empty schedule)
    exact: bool  # the first run's reference is bitwise (exact mode, or all-zero bounds)
    emulated: bool  # the same-order emulation judged every element of the first run bitwise
    policy: str  # the run's baseline policy (fuzzharness.oracles.metamorphic.POLICIES)
    base_judge: Callable[[dict[str, np.ndarray]], Judgement]  # by the check that decided


class ProgramCheck(Protocol):
    """A check that compares the kernel with *another build* of the case's program — the
    unscheduled program (:mod:`fuzzharness.oracles.metamorphic`), or e.g. another pass
    configuration.  Decided after the runs are judged, because it costs a compile."""

    name: str
    precedence: int

    def plan(self, judged: Judged) -> str:
        """``self`` (the kernel is that program: compare with its own outputs), ``build``
        or ``skip``; must depend on the case and its judgement alone (a replay decides the
        same)."""

    def program(self, judged: Judged) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """(PrimFunc, target, pass configuration) to build when :meth:`plan` says ``build``."""

    def conclude(self, judged: Judged, outputs: dict[str, np.ndarray] | None, how: str) -> Conclusion:
        """The case's status given the other build's ``outputs`` (None: not built)."""


program_checks: Registry[ProgramCheck] = Registry("program check")
register_program_check = _registrar(program_checks)


program_checks.add_lazy("baseline", "fuzzharness.oracles.metamorphic:BASELINE")


def ordered_program_checks() -> list[ProgramCheck]:
    return _by_precedence(program_checks)


# -- one judgement of all checks ----------------------------------------------------------------


def ordered_checks() -> list[Check]:
    """The registered checks by ``(precedence, name)``."""
    return _by_precedence(checks)


def rank(result: CheckResult) -> tuple[int, str, int]:
    """Precedence among failures: the check's, then the order of the runs (:func:`run_order`)."""
    runs = run_order()
    at = runs.index(result.run) if result.run in runs else len(runs)
    return checks[result.reference].precedence, result.reference, at


def combine(results: list[CheckResult]) -> tuple[Judgement, CheckResult | None]:
    """The case's judgement and the check result that decided it.

    A failing non-strict check fails the case (the highest-ranked: a bound failure is
    reported before a bitwise one, its ratio says more); otherwise a failing strict check
    makes the case ``order_preserving_divergence``, a note.  A case passes when one of its
    runs had every element judged by a passing check, and is ``inconclusive`` otherwise.
    """
    failed = sorted((c for c in results if c.judgement.status in FAILED),
                    key=lambda c: (c.strict, rank(c)))
    first = next(c for c in results if c.run == "first" and c.reference == "bound")
    if failed and not failed[0].strict:
        return failed[0].judgement, failed[0]
    if failed:
        bound = next(c for c in results if c.run == failed[0].run and c.reference == "bound")
        return _divergence(failed[0], bound, results), failed[0]
    judged_runs = {c.run for c in results if c.complete}
    if judged_runs:
        j = dataclasses.replace(first.judgement, status=Status.PASS)
        if not first.complete:  # say what the bound could not judge, and what judged it instead
            deciding = next(c for c in results if c.complete)
            j.message = (f"{first.judgement.inconclusive or 'the bound cannot judge every element'}"
                         f"; judged bitwise instead ({deciding.run} run: {deciding.note})")
        return j, None
    return first.judgement, None


def _divergence(strict: CheckResult, bound: CheckResult, results: list[CheckResult]) -> Judgement:
    """The note of a strict (same-order) check that failed while nothing else did."""
    if bound.judgement.status is Status.PASS and bound.complete:
        within = f"within the error bound (error/bound {bound.judgement.ratio:.3g})"
    else:
        within = "the bound cannot judge every element"
    independent = [c for c in results if c.reference == "emulation" and not c.ordered]
    if independent:
        exact = (f"the exact-input run agrees bit for bit on its order-independent elements "
                 f"({independent[0].note})")
    else:
        exact = "no exact-input run could check order-independent elements"
    # the bound's numbers (the emulation's ratio is inf for any difference), the emulation's words
    j = dataclasses.replace(bound.judgement, status=Status.ORDER_PRESERVING_DIVERGENCE)
    j.message = (f"{strict.judgement.message}; but the output is {within} and {exact}: a legal "
                 "summation order or wider accumulator in TVM's lowering would give this too "
                 "— a note, failing the campaign only with --strict-order")
    return j


def judge_all(runs: dict[str, RunData]) -> tuple[list[CheckResult], dict[str, dict[str, str]]]:
    """Every registered check on every run: the results (check by check, run by run) and,
    per check, why it did not apply to a run."""
    results: list[CheckResult] = []
    skipped: dict[str, dict[str, str]] = {}
    for check in ordered_checks():
        for label, data in runs.items():
            r = check.judge(data)
            if isinstance(r, str):
                skipped.setdefault(check.name, {})[label] = r
            else:
                results.append(r)
    return results, skipped


def baseline_judge(runs: dict[str, RunData], deciding: CheckResult | None
                   ) -> Callable[[dict[str, np.ndarray]], Judgement]:
    """Baseline outputs -> Judgement, by the check that decided the case (the bound of the
    first run when none did)."""
    data = runs[deciding.run if deciding is not None else "first"]
    check = checks[deciding.reference if deciding is not None else "bound"]
    return lambda baseline: check.judge_baseline(data, deciding, baseline)
