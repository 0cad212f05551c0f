"""Verdicts: what happened to one case, as plain data.

A verdict is Symptom × Stage (after NNSmith): ``status`` says what went wrong (or that nothing
did), ``stage`` says where.  Statuses are split into three families so that nobody has to
remember which strings are bugs:

* ``PASS`` and ``INCONCLUSIVE`` — no finding (inconclusive: the error model cannot judge,
  e.g. k·u ≥ 1; it is reported, never counted as a pass or a failure);
* findings about TVM (:data:`FINDINGS`) — wrong results (beyond the error bound, or not bit
  for bit what the program's own arithmetic gives where that is determined), nan/inf,
  compile errors, crashes, hangs; ``REFERENCE_MISMATCH`` is a finding of its own kind: TVM's
  build of the *unscheduled* program disagrees with the float64 reference (or with the
  emulation of the program's arithmetic), so either the reference or TVM's default lowering
  is wrong — the schedule is not to blame (triage before reporting upstream);
* notes (:data:`NOTES`) — ``ORDER_PRESERVING_DIVERGENCE``: an order-preserving schedule's
  output differs bitwise from the declared arithmetic in the declared order (the same-order
  emulation, on float inputs) or from TVM's unscheduled build, while the bound and the
  exact-input run accept it.  A compiler may legally sum in another order, keep a wider
  accumulator or round differently (``docs/error-model.md``), so it is recorded, bucketed
  and listed apart, but fails a campaign only with ``--strict-order``; the bitwise claim
  that fails a case is the emulation's on exact inputs (:mod:`fuzzharness.execution.second_run`);
* not about TVM — ``SCHEDULE_REJECTED`` (TVM legitimately refused a generated schedule) and
  ``HARNESS_ERROR`` (a bug in this harness; never reported as a TVM bug).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any


class Status(enum.StrEnum):
    PASS = "pass"
    INCONCLUSIVE = "inconclusive"
    WRONG_RESULT = "wrong_result"
    NAN_INF = "nan_inf"
    ORDER_PRESERVING_DIVERGENCE = "order_preserving_divergence"
    REFERENCE_MISMATCH = "reference_mismatch"
    COMPILE_ERROR = "compile_error"
    CRASH = "crash"
    TIMEOUT = "timeout"
    SCHEDULE_REJECTED = "schedule_rejected"
    HARNESS_ERROR = "harness_error"

    def __str__(self) -> str:
        return self.value

    @property
    def is_finding(self) -> bool:
        """True when this status is a (potential) TVM bug worth a report."""
        return self in FINDINGS

    @property
    def is_note(self) -> bool:
        """True for a recorded observation that is not a failure (see :data:`NOTES`)."""
        return self in NOTES


NOTES = frozenset({Status.ORDER_PRESERVING_DIVERGENCE})

FINDINGS = frozenset(
    {
        Status.WRONG_RESULT,
        Status.NAN_INF,
        Status.REFERENCE_MISMATCH,
        Status.COMPILE_ERROR,
        Status.CRASH,
        Status.TIMEOUT,
    }
)


class Stage(enum.StrEnum):
    """Pipeline stages in execution order."""

    GENERATE = "generate"  # build the PrimFunc and the inputs from the case
    SCHEDULE = "schedule"  # replay the schedule trace
    LOWER = "lower"  # TIR pass pipeline
    CODEGEN = "codegen"  # target.build.<kind>: TIR → LLVM IR / CUDA C / OpenCL C
    BUILD = "build"  # machine code: LLVM JIT, nvcc, OpenCL program build
    RUN = "run"
    VERIFY = "verify"  # oracle comparison
    BASELINE = "baseline"  # build and run the unscheduled program (the metamorphic reference)
    DONE = "done"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass
class Verdict:
    """The outcome of one case.

    ``ratio`` is the worst |actual − reference| / bound over all outputs (> 1 fails;
    0 for bitwise-equal); ``worst_index`` the element where it occurs, in ``worst_output``.
    ``digest`` is a hash of the output bytes, so that a replay can prove it reproduced the
    same bits.  ``timings`` maps stage name → seconds.  ``details`` holds status-specific plain
    data (exception type, signal name, inconclusive reason, ...).
    """

    status: Status
    stage: Stage
    message: str = ""
    worst_error: float | None = None
    ratio: float | None = None
    worst_index: list[int] | None = None
    worst_output: str | None = None
    digest: str | None = None
    timings: dict[str, float] = dataclasses.field(default_factory=dict)
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def is_finding(self) -> bool:
        return self.status.is_finding

    def to_dict(self) -> dict[str, Any]:
        """The verdict as plain data, a copy (what ``dataclasses.asdict`` gives, at a
        tenth of its cost: the driver converts every result, and asdict's deepcopy of each
        leaf of ``details`` was a third of its CPU per case)."""
        d = {f.name: _copy(getattr(self, f.name)) for f in _FIELDS}
        d["status"] = self.status.value
        d["stage"] = self.stage.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        d = dict(d)
        d["status"] = Status(d["status"])
        d["stage"] = Stage(d["stage"])
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def line(self) -> str:
        """One human-readable line."""
        parts = [f"{self.status.value:<14} stage={self.stage.value}"]
        if self.ratio is not None:
            parts.append(f"error/bound={self.ratio:.3g}")
        if self.worst_output is not None and self.worst_index is not None:
            parts.append(f"worst={self.worst_output}{self.worst_index}")
        if self.message:
            msg = self.message.strip().splitlines()[0] if self.message.strip() else ""
            parts.append(msg[:160])
        return "  ".join(parts)


_FIELDS = dataclasses.fields(Verdict)
_ATOMS = (str, int, float, bool, type(None))


def _copy(x: Any) -> Any:
    """``dataclasses.asdict``'s copy of a field: containers rebuilt, leaves of immutable
    types shared, anything else deep-copied."""
    if isinstance(x, _ATOMS):
        return x
    if isinstance(x, dict):
        return {k: _copy(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_copy(v) for v in x]
    if isinstance(x, tuple):
        items = [_copy(v) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    import copy

    return copy.deepcopy(x)
