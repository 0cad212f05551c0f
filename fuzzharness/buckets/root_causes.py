"""Root causes: what a bucket is once its first case has been minimized, and which findings
to minimize first.

A bucket key (:mod:`fuzzharness.buckets.signatures`) is computed from the *raw* failing case:
a wrong answer's key holds every primitive of its trace, bystanders included, so one bug
shows up as several buckets.  Once a bucket's case is minimized, its **root cause** is keyed
by the minimal trigger:

``symptom``     the symptom class — ``wrong_output`` for ``wrong_result`` and ``nan_inf`` alike
                (a nan is a wrong value that happens to be nan: an unwritten, nan-poisoned
                element or a bad read), else the status, with the crash kind
                (``crash/SIGSEGV``)
``stage``       where it was decided
``primitives``  the minimized trace's schedule primitives *in trace order* (lookups and
                samplers left out; an annotation named by what it spells, e.g. ``unroll``)
``options``     the compiler options that survived minimization (``mcpu=…``, ``mattr=…``,
                PassContext entries as ``key=value``): the ones the bug needs
``facts``       the schedule facts of the minimized failure (``reduction_init_repeated``, …)
``culprit``     the first lowering pass after which the program computes a different
                function (:mod:`fuzzharness.kinds.tir.pass_bisect`), the pass that raised, or
                ``schedule`` when disabling any single pass leaves the output wrong (the
                scheduled program itself is wrong); ``""`` when not probed
``workload``    only for a reference mismatch (no schedule to blame: the workload and dtype
                are the trigger) — ``dtype`` likewise

A failure with error text keeps its bucket key fields (symptom, kind, stage, normalised
message, throw site): the message already names the bug, whatever schedule reached it, so
such a bucket is its own root cause.

Invariants: :func:`root_cause` is a function of plain data (the minimized case's JSON, its
signature and the culprit); equal triggers give equal keys, and any difference in symptom
class, stage, primitive sequence, options, facts or culprit gives different keys.

Severity (:func:`severity`) orders the buckets a campaign minimizes: wrong results, nan/inf
and crashes of the generated code first (a silent miscompile is what a user cannot see),
then hangs and crashes of the compiler, then internal compile errors, then reference
mismatches and order-preserving divergences; within a class the most frequent first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from fuzzharness.buckets.signatures import Signature
from fuzzharness.core.kinds import kind_name
from fuzzharness.core.traces import primitive_sequence

#: symptoms folded into one class for root causes
WRONG_OUTPUT = "wrong_output"
_WRONG = ("wrong_result", "nan_inf")
#: the culprit when no single disabled pass fixes a wrong output: the scheduled TIR is wrong
SCHEDULE_CULPRIT = "schedule"
#: target keys that are the target itself, not an option
_TARGET_IDENTITY = ("kind", "device", "keys", "arch", "host")

SEVERITY_LABELS = ("wrong result / nan / crash of the generated code", "hang or compiler crash",
                   "internal compile error", "reference mismatch / order divergence")


def severity(sig: Signature) -> int:
    """0 (most severe) … 3; see the module docstring."""
    if sig.symptom in _WRONG or (sig.symptom == "crash" and sig.stage in ("run", "verify")):
        return 0
    if sig.symptom in ("timeout", "crash"):
        return 1
    if sig.symptom == "compile_error":
        return 2
    return 3


def minimize_order(buckets: list[dict[str, Any]], probably_known: set[str] = frozenset()
                   ) -> list[dict[str, Any]]:
    """Buckets (rows with ``key``, ``signature``, ``count``, ``example_idx``) in the order to
    minimize them: severity class, then new before *probably known* (a raw match that the
    minimized case must confirm), then most frequent, then the earliest seen."""
    return sorted(buckets, key=lambda b: (severity(b["signature"]), b["key"] in probably_known,
                                          -int(b["count"]), int(b["example_idx"])))


def symptom_class(sig: Signature) -> str:
    if sig.symptom in _WRONG:
        return WRONG_OUTPUT
    return sig.symptom + (f"/{sig.kind}" if sig.kind else "")


def options_of(case: dict[str, Any] | None) -> tuple[str, ...]:
    """The compiler options a case carries, as sorted ``key=value`` strings."""
    case = case or {}
    out = []
    for k, v in sorted((case.get("target") or {}).items()):
        if k not in _TARGET_IDENTITY:
            out.append(f"{k}={_value(v)}")
    for k, v in sorted((case.get("pass_config") or {}).items()):
        out.append(f"{k}={_value(v)}")
    return tuple(out)


def _value(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ",".join(_value(x) for x in v)
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    return str(v)


@dataclasses.dataclass(frozen=True)
class RootCause:
    symptom: str
    stage: str
    primitives: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()
    culprit: str = ""
    detail: str = ""  # failures with error text: the normalised message ...
    site: str = ""  # ... and where TVM threw it
    workload: str = ""  # reference mismatches only
    dtype: str = ""

    @property
    def has_text(self) -> bool:
        return bool(self.detail or self.site)

    @property
    def key(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for f in ("primitives", "options", "facts"):
            d[f] = list(d[f])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RootCause:
        known = {f.name for f in dataclasses.fields(cls)}
        d = {k: v for k, v in d.items() if k in known}
        for f in ("primitives", "options", "facts"):
            d[f] = tuple(d.get(f) or ())
        return cls(**d)

    def trigger(self) -> str:
        """The minimal trigger in words: ``sch.a → sch.b`` (+ options)."""
        what = " → ".join(self.primitives) if self.primitives else "no schedule"
        return what + (f" with {', '.join(self.options)}" if self.options else "")

    def title(self) -> str:
        """One line: what goes wrong, in which pass, after which calls."""
        where = ""
        if self.culprit == SCHEDULE_CULPRIT:
            where = " (the scheduled program is already wrong)"
        elif self.culprit:
            where = f" in {self.culprit}"
        if self.has_text:
            return f"{self.symptom}@{self.stage}: {self.detail or self.site}"[:160]
        what = {WRONG_OUTPUT: "wrong output", "reference_mismatch": "reference mismatch"}.get(
            self.symptom, self.symptom)
        head = f"{what}{where} after {self.trigger()}"
        if self.workload:
            head += f" [{self.workload} {self.dtype}]"
        return head + (f" ({', '.join(self.facts)})" if self.facts else "")


def root_cause(case: dict[str, Any] | None, sig: Signature, culprit: str | None = "") -> RootCause:
    """The root cause of a *minimized* failure (see the module docstring)."""
    if sig.has_text:
        return RootCause(symptom_class(sig), sig.stage, detail=sig.detail, site=sig.site)
    if sig.symptom == "reference_mismatch":
        return RootCause(sig.symptom, sig.stage, options=options_of(case), culprit=culprit or "",
                         workload=sig.workload, dtype=sig.dtype)
    if kind_name(case) == "tir":
        prims = primitive_sequence(((case or {}).get("schedule") or {}).get("trace"))
    else:  # a graph: its kind's primitives (operators and per-function primitives)
        prims = tuple(sig.primitives)
    return RootCause(symptom_class(sig), sig.stage, prims, options_of(case), tuple(sig.facts),
                     culprit or "")


def culprit_of(triage: Any, symptom: str) -> str:
    """The culprit a pass probe (:class:`fuzzharness.kinds.tir.pass_bisect.Triage`) names:
    the pass that raised, the first pass whose removal makes the output right, or
    :data:`SCHEDULE_CULPRIT` when a wrong output survives disabling each pass; ``""`` when
    nothing was probed or the probe could not tell."""
    if triage is None:
        return ""
    if getattr(triage, "raised_in", None):
        return str(triage.raised_in)
    implicated = getattr(triage, "implicated", None) or []
    if implicated:
        return str(implicated[0])
    if symptom in _WRONG and getattr(triage, "passes", None):
        return SCHEDULE_CULPRIT
    return ""
