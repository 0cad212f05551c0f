"""Case kinds: the one seam between the generic pipeline and what differs per kind of program.

A case is either a **TIR** case (one PrimFunc of a registered workload, scheduled by one
trace) or a **Relax** case (a whole Relax graph, ``workload["name"] == "graph"``, compiled
through TVM's Relax pipeline, each fused PrimFunc with its own trace).  Everything that
differs between the two lives behind :class:`CaseKind`, one implementation per kind
(:mod:`fuzzharness.kinds.tir`, :mod:`fuzzharness.kinds.relax`); the execution stages, the
bucket signatures, the minimizer, the repro writer and the issue text ask
:func:`kind_of` and never branch on the workload themselves.

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


class CaseKind:
    """What one kind of case provides to every layer (see the module docstring).

    Execution
        :meth:`run` — the stages of one :class:`~fuzzharness.execution.stages.Execution`;
        :meth:`check_case` — is a user's case file a valid case of this kind.
    Buckets
        :meth:`bucket_primitives` — what a wrong answer's bucket key lists.
    Minimizer
        :attr:`size_unit`, :meth:`size`, :meth:`minimize_schedule` (ddmin over the
        schedule), :meth:`simplifications` (the kind's own passes, run before the generic
        ``params`` / ``inputs`` / ``options`` ones).
    Repro and issue text
        :meth:`write_script`, :meth:`bisect_passes`, :attr:`tag`, :meth:`describe`,
        :meth:`issue_primitives`, :meth:`error_title`, :meth:`expected_behaviour`,
        :meth:`program_excerpt`, :meth:`hints`.
    """

    name: str = ""
    tag: str = ""  # in issue titles: "[TIR]", "[Relax]"
    size_unit: str = ""
    no_schedule: str = ""  # what an issue title says when no primitive is involved

    # -- execution ------------------------------------------------------------------------------
    def run(self, execution, result) -> None:
        """Run the case's stages through ``execution.stage``; set ``result.verdict`` last."""
        raise NotImplementedError

    def check_case(self, case: Case) -> str | None:
        """Why ``case`` (given by a user: a case file) is not a valid case of this kind —
        parameters that build no program, a schedule that is not a trace — or None.  Run
        before the case does, so that garbage is a usage error and never a TVM finding."""
        return None

    # -- buckets --------------------------------------------------------------------------------
    def bucket_primitives(self, case: dict[str, Any], status: str) -> tuple[str, ...]:
        raise NotImplementedError

    # -- minimizer ------------------------------------------------------------------------------
    def size(self, case: Case) -> int:
        raise NotImplementedError

    def minimize_schedule(self, case: Case, first: FirstInteresting, stop: Callable[[], bool],
                          stage: str) -> Case:
        raise NotImplementedError

    def simplifications(self) -> list[tuple[str, Propose]]:
        raise NotImplementedError

    # -- repro and issue text -------------------------------------------------------------------
    def write_script(self, case: Case, verdict: Verdict, **kwargs: Any) -> Any:
        raise NotImplementedError

    def bisect_passes(self, case: Case, verdict: Verdict, pattern: str | None, workdir) -> Any:
        """Which lowering pass makes the difference (None: this kind is not probed)."""
        return None

    def describe(self, case: Case) -> str:
        raise NotImplementedError

    def issue_primitives(self, case: Case) -> list[str]:
        raise NotImplementedError

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


kinds: Registry[CaseKind] = Registry("case kind")
kinds.add_lazy("tir", "fuzzharness.kinds.tir:KIND")
kinds.add_lazy("relax", "fuzzharness.kinds.relax:KIND")


def kind_name(case: Case | dict[str, Any] | None) -> str:
    """The kind of a case, or of its plain JSON (None: a TIR case of no workload)."""
    if case is None:
        return DEFAULT_KIND
    workload = case.workload if hasattr(case, "workload") else (case.get("workload") or {})
    return WORKLOAD_KINDS.get(str((workload or {}).get("name") or ""), DEFAULT_KIND)


def kind_of(case: Case | dict[str, Any] | None) -> CaseKind:
    return kinds[kind_name(case)]
