"""Case kinds: the one seam between the generic pipeline and what differs per kind of program.

A case is either a **TIR** case (one PrimFunc of a registered workload, scheduled by one
trace) or a **Relax** case (a whole Relax graph, ``workload["name"] == "graph"``, compiled
through TVM's Relax pipeline, each fused PrimFunc with its own trace).  Everything that
differs between the two lives behind one small protocol per layer — :class:`RunKind`
(execution), :class:`BucketKind` (buckets, root causes), :class:`ShrinkKind` (the minimizer
and its lanes), :class:`ReproKind` (the script), :class:`IssueKind` (the issue text) — which
each kind implements together as a :class:`CaseKind` (:mod:`fuzzharness.kinds.tir`,
:mod:`fuzzharness.kinds.relax`).  A layer asks for its own protocol (:func:`run_kind`,
:func:`bucket_kind`, :func:`shrink_kind`, :func:`repro_kind`, :func:`issue_kind`) and never
imports a kind's modules or branches on the workload itself (``tests/test_layers.py``).

Kinds are registered by dotted name (:data:`kinds`) and imported on first use: this module
sits in the bottom layer and names implementations that live in the top one (they use the
minimizer and the repro kit), without importing them.  A plugin adds a kind with
``kinds.add_lazy(name, "module:attr")`` and ``WORKLOAD_KINDS[workload] = name``.

Invariants:

* the kind of a case is a function of its workload name alone (plain data, no TVM): the
  case model is unchanged and a case's kind never changes while it is minimized;
* every method takes plain data or :class:`~fuzzharness.core.case.Case` objects and returns
  plain data, except :meth:`CaseKind.run`, which runs the stages of one execution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fuzzharness.core.registry import Registry

if TYPE_CHECKING:  # annotations only: these modules sit above this one
    from fuzzharness.core.case import Case
    from fuzzharness.core.verdict import Verdict

#: the workload name of a whole Relax graph case
RELAX_WORKLOAD = "graph"
#: workload name → kind name; any other workload is a TIR case
WORKLOAD_KINDS: dict[str, str] = {RELAX_WORKLOAD: "relax"}
DEFAULT_KIND = "tir"

Propose = Callable[["Case"], list["Case"]]
FirstInteresting = Callable[[list["Case"]], "Case | None"]


class RunKind:
    """Execution: how a case of this kind runs (:mod:`fuzzharness.execution`)."""

    name: str = ""

    def run(self, execution, result) -> None:
        """Run the case's stages through ``execution.stage``; set ``result.verdict`` last."""
        raise NotImplementedError

    def check_case(self, case: Case) -> str | None:
        """Why ``case`` (given by a user: a case file) is not a valid case of this kind —
        parameters that build no program, a schedule that is not a trace — or None.  Run
        before the case does, so that garbage is a usage error and never a TVM finding."""
        return None


class BucketKind:
    """Buckets and root causes (:mod:`fuzzharness.buckets`): which primitives a key lists."""

    def bucket_primitives(self, case: dict[str, Any], status: str) -> tuple[str, ...]:
        raise NotImplementedError

    def root_cause_primitives(self, case: dict[str, Any] | None, sig: Any) -> tuple[str, ...]:
        """The schedule primitives a root cause of a wrong answer lists (``sig``: its
        :class:`~fuzzharness.buckets.signatures.Signature`)."""
        raise NotImplementedError


class ShrinkKind:
    """The minimizer (:mod:`fuzzharness.minimize`) and its lanes."""

    size_unit: str = ""

    def size(self, case: Case) -> int:
        raise NotImplementedError

    def minimize_schedule(self, case: Case, first: FirstInteresting, stop: Callable[[], bool],
                          stage: str) -> Case:
        raise NotImplementedError

    def simplifications(self) -> list[tuple[str, Propose]]:
        raise NotImplementedError

    def probed_trace(self, case: Case) -> tuple[str, Any] | None:
        """(the scheduled function's name, its trace) that the step probe cuts, or None."""
        raise NotImplementedError

    def one_function_cases(self, case: Case) -> list[Case]:
        """The case once per scheduled function, only that function's schedule kept, when
        it has several ([] otherwise)."""
        return []

    def program_and_trace(self, case: Case) -> tuple[Any, Any]:
        """The unscheduled PrimFunc the probed trace applies to, and that trace ((None,
        None) when there is none)."""
        raise NotImplementedError

    def generation_failure_case(self, choices: list[Any], generation: Any,
                                origin: dict[str, Any], verdict: Verdict | None
                                ) -> tuple[Case, str]:
        """A failure while a case was drawn (no case was stored): the case before the failing
        schedule call, and that call as a line; raises ``NotReproducible`` when it cannot
        be captured.  Asked of :func:`kind_of` (None): the kind that draws schedules."""
        raise NotImplementedError


class ReproKind:
    """The repro writer (:mod:`fuzzharness.repro.package`): the script and its pass probe."""

    def write_script(self, case: Case, verdict: Verdict, **kwargs: Any) -> Any:
        raise NotImplementedError

    def bisect_passes(self, case: Case, verdict: Verdict, pattern: str | None, workdir) -> Any:
        """Which lowering pass makes the difference (None: this kind is not probed)."""
        return None


class IssueKind:
    """The issue text (:mod:`fuzzharness.repro.issue`)."""

    tag: str = ""  # in issue titles: "[TIR]", "[Relax]"
    no_schedule: str = ""  # what an issue title says when no primitive is involved

    def describe(self, case: Case) -> str:
        raise NotImplementedError

    def issue_primitives(self, case: Case) -> list[str]:
        raise NotImplementedError

    def culprit_calls(self, case: Case) -> list[str]:
        """The schedule calls an issue names as the likely culprits ([]: none)."""
        return []

    def error_title(self, verdict: Verdict, prims: str, where: str, msg: str,
                    raised_in: str | None) -> str:
        """The issue title of a failure with an error message (compile errors)."""
        raise NotImplementedError

    def expected_behaviour(self, case: Case, verdict: Verdict, exact: bool) -> str | None:
        """The issue's "Expected behavior" where this kind words it (None: the generic one)."""
        return None

    def program_excerpt(self, script_text: str, schedule_lines: list[str],
                        failing_call: str | None) -> str:
        raise NotImplementedError

    def hints(self, case: Case, triage: Any) -> list[str]:
        raise NotImplementedError


class CaseKind(RunKind, BucketKind, ShrinkKind, ReproKind, IssueKind):
    """One kind of case: the small protocols of every layer, implemented together (see the
    module docstring).  A layer asks for its own protocol (:func:`run_kind`,
    :func:`bucket_kind`, :func:`shrink_kind`, :func:`repro_kind`, :func:`issue_kind`) and
    sees only its methods."""


kinds: Registry[CaseKind] = Registry("case kind")
kinds.add_lazy("tir", "fuzzharness.kinds.tir:KIND")
kinds.add_lazy("relax", "fuzzharness.kinds.relax:KIND")
#: the execution layer's part of each kind (a plugin kind adds its own, beside ``kinds``)
run_kinds: Registry[RunKind] = Registry("case kind (run)")
run_kinds.add_lazy("tir", "fuzzharness.execution.tir_run:RUN")
run_kinds.add_lazy("relax", "fuzzharness.execution.relax_run:RUN")


def kind_name(case: Case | dict[str, Any] | None) -> str:
    """The kind of a case, or of its plain JSON (None: a TIR case of no workload)."""
    if case is None:
        return DEFAULT_KIND
    workload = case.workload if hasattr(case, "workload") else (case.get("workload") or {})
    return WORKLOAD_KINDS.get(str((workload or {}).get("name") or ""), DEFAULT_KIND)


def kind_of(case: Case | dict[str, Any] | None) -> CaseKind:
    return kinds[kind_name(case)]


def run_kind(case: Case | dict[str, Any] | None) -> RunKind:
    """The execution layer's protocol of a case's kind: it lives in that layer
    (:mod:`fuzzharness.execution.tir_run`, ...), so a worker that only runs cases never
    imports a kind's minimizer or repro writer."""
    return run_kinds[kind_name(case)]


def bucket_kind(case: Case | dict[str, Any] | None) -> BucketKind:
    return kind_of(case)


def shrink_kind(case: Case | dict[str, Any] | None) -> ShrinkKind:
    return kind_of(case)


def repro_kind(case: Case | dict[str, Any] | None) -> ReproKind:
    return kind_of(case)


def issue_kind(case: Case | dict[str, Any] | None) -> IssueKind:
    return kind_of(case)
