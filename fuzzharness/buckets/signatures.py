"""Dedup of failures: one bucket signature per failure, so that one bug is one report.

A :class:`Signature` is computed from a case (plain JSON) and its verdict — in the campaign
driver, by the minimizer on a shrunk case, by anyone — without TVM:

``symptom``     the status (``compile_error``, ``wrong_result``, ``crash``, ``timeout``, ...)
``kind``        for a crash: the signal (``SIGSEGV``), ``out_of_memory``, ``exception``, or
                ``exit``; empty otherwise
``stage``       where it happened (``lower``, ``codegen``, ``run``, ``verify``, ...)
``detail``      the error text, normalised (:func:`normalize_message`); empty for wrong
                answers and bare hangs/signals, which say nothing
``site``        where in TVM the exception was thrown (C++ file:function, see
                :func:`fuzzharness.execution.facts.throw_site`)
``workload``    the workload name; ``dtype`` its dtype label
``primitives``  the schedule primitives the case applies, as its kind lists them
                (:meth:`fuzzharness.core.kinds.CaseKind.bucket_primitives`: a TIR case's
                trace instruction kinds, sorted, so a shrunk case gets its own, smaller set —
                none for a reference mismatch, where the schedule is not to blame; a Relax
                case's operators and per-function primitives)
``facts``       facts about the scheduled loop nest of a wrong answer (e.g.
                ``loop_mixes_spatial_and_reduction``)

**The bucket key** is a projection of the signature, chosen so that instances of one bug
land in one bucket:

* a failure with error text (``detail`` or ``site``) is keyed by symptom, kind, stage,
  detail and site — the same internal check failing in the same TVM function is one bug,
  whichever workload, dtype or extra schedule steps happened to reach it (those are kept as
  "seen with" statistics, see :meth:`ResultsDB.bucket_stats`);
* a failure without text (wrong answer, hang, bare signal) has nothing else to go by: it is
  keyed by symptom, kind, stage, workload, dtype, primitives and facts.  Until a case is
  shrunk its primitive set includes bystanders, so one such bug can still show as a few
  buckets; the known-bugs file (patterns, not keys) groups them again.

Normalisation strips what varies between instances of one bug: numbers, hex addresses,
file paths and line numbers, dtype widths, quoted names and generated loop/buffer names
(``i_j_fused_0``, ``ax0``, ``A_shared``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any

from fuzzharness.core.kinds import bucket_kind
from fuzzharness.core.verdict import FINDINGS, NOTES, Status, Verdict

#: statuses that get a bucket: TVM findings, and harness errors (reported apart, never as TVM's)
BUCKETED = frozenset(FINDINGS | NOTES | {Status.HARNESS_ERROR})


# -- normalisation -------------------------------------------------------------------------
_SUBSTITUTIONS: list[tuple[re.Pattern[str], str]] = [
    # /project/src/tirx/transform/vectorize_loop.cc:1058 → vectorize_loop.cc
    (re.compile(r"(?:[\w.+-]*/)+([\w.+-]+\.(?:cc|h|cpp|hpp|py|pxi))(?::\d+)?"), r"\1"),
    (re.compile(r"0x[0-9a-fA-F]+"), "0xADDR"),
    # a temporary file's random name (PoCL's kernel cache: .../kcache/tempfile_FQpgsn.cl)
    (re.compile(r"\b(tempfile|tmp)_?\w{4,}(?=\.\w+\b)"), r"\1_ID"),
    # the names in "variables (b, i, j) are used, but are not passed in as API arguments"
    (re.compile(r"\bvariables \([^)]*\) are used"), "variables (ID) are used"),
    # "Load/Store of buffer A_pad (0x55..)": the buffer's name
    (re.compile(r"\bbuffer [A-Za-z_]\w* \(0xADDR\)"), "buffer ID (0xADDR)"),
    # "Trying to update var 'v' with a different value: original=<IR>, new=<IR>"
    (re.compile(r"(with a different value):.*"), r"\1"),
    # an IR expression quoted after a failed pattern match (compute_at's region analysis):
    # one bug, whatever index expression met it
    (re.compile(r"(pattern match failed:).*"), r"\1 EXPR"),
    # float16 / int32x4 / bfloat16 → floatN / intN
    (re.compile(r"\b(b?float|u?int)\d+(?:x\d+)?\b"), r"\1N"),
    # generated names: i_j_fused_0, k_outer, A_shared, vi_init, C_rf
    (re.compile(r"\b\w+_(?:fused|outer|inner|init|rf|shared|local|global|reindex)\w*\b"), "ID"),
    # identifiers with digits: i0, ax1, l13, b4, v_k_1
    (re.compile(r"\b[A-Za-z_]\w*\d\w*\b"), "ID"),
    (re.compile(r"'[A-Za-z_][\w.]*'"), "'ID'"),
    (re.compile(r'"[A-Za-z_][\w.]*"'), '"ID"'),
    (re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])"), "N"),
    (re.compile(r"\s+"), " "),
]
#: an operator's repr, ``ir.Op(span=None, ty=ir.Type(span=None), name="tirx.texture2d_load",
#: ...)``: its name tells two errors apart (LLVM's "unknown intrinsic" of a texture load left
#: in host code is not that of another intrinsic), so it is kept whole, as ``Op(name)``
_OP_REPR = re.compile(r'\bir\.Op\((?:[^()]|\([^()]*\))*?\bname="([\w.]+)"(?:[^()]|\([^()]*\))*\)')
_EXC_PREFIX = re.compile(r"^([A-Z]\w*(?:Error|Exception|Fault|Interrupt)): ")
MAX_DETAIL = 200


def salient_line(message: str) -> str:
    """The line of an error message that identifies the error.

    TVM messages can carry IR dumps and backtraces; the identifying part is the
    ``Check failed: ...`` line, else a ``Error message: ...`` line (ScheduleError and
    friends), else the first line.  The exception type of the first line is kept.
    """
    lines = [ln.strip() for ln in (message or "").splitlines() if ln.strip()]
    if not lines:
        return ""
    m = _EXC_PREFIX.match(lines[0])
    etype = m.group(1) if m else ""
    for ln in lines:
        if "Check failed" in ln:
            line = ln[ln.index("Check failed"):]
            break
    else:
        for ln in lines:
            if ln.startswith("Error message:"):
                line = ln[len("Error message:"):].strip()
                break
        else:
            return lines[0]
    return f"{etype}: {line}" if etype else line


def normalize_message(message: str) -> str:
    """The identifying line of ``message`` with instance-specific parts replaced."""
    text = salient_line(message)
    ops: list[str] = []

    def keep(m: re.Match[str]) -> str:  # a placeholder no substitution touches
        if len(ops) == 26:
            return m.group(0)
        ops.append(m.group(1))
        return f"QQOP{chr(65 + len(ops) - 1)}QQ"

    text = _OP_REPR.sub(keep, text)
    for rx, repl in _SUBSTITUTIONS:
        text = rx.sub(repl, text)
    for i, name in enumerate(ops):
        text = text.replace(f"QQOP{chr(65 + i)}QQ", f"Op({name})")
    return text.strip().rstrip(":").strip()[:MAX_DETAIL]


# -- signatures -----------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Signature:
    symptom: str
    stage: str
    kind: str = ""
    detail: str = ""
    site: str = ""
    workload: str = ""
    dtype: str = ""
    primitives: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()

    @property
    def has_text(self) -> bool:
        return bool(self.detail or self.site)

    @property
    def is_finding(self) -> bool:
        return Status(self.symptom).is_finding

    @property
    def is_note(self) -> bool:
        return Status(self.symptom).is_note

    def key_fields(self) -> dict[str, Any]:
        """The fields that make the bucket key (see the module docstring)."""
        d: dict[str, Any] = {"symptom": self.symptom, "kind": self.kind, "stage": self.stage}
        if self.has_text:
            d.update(detail=self.detail, site=self.site)
        else:
            d.update(workload=self.workload, dtype=self.dtype,
                     primitives=list(self.primitives), facts=list(self.facts))
        return d

    @property
    def key(self) -> str:
        text = json.dumps(self.key_fields(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def title(self) -> str:
        head = self.symptom + (f"/{self.kind}" if self.kind else "") + f"@{self.stage}"
        if self.has_text:
            site = self.site.split(":", 1)[0].rsplit("/", 1)[-1] if self.site else ""
            return f"{head}: {self.detail or '(no message)'}" + (f"  [{site}]" if site else "")
        what = "+".join(self.primitives) or "no schedule"
        facts = f" ({', '.join(self.facts)})" if self.facts else ""
        return f"{head} [{self.workload} {self.dtype}] {what}{facts}"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["primitives"], d["facts"] = list(self.primitives), list(self.facts)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Signature:
        known = {f.name for f in dataclasses.fields(cls)}
        d = {k: v for k, v in d.items() if k in known}
        d["primitives"] = tuple(d.get("primitives") or ())
        d["facts"] = tuple(d.get("facts") or ())
        return cls(**d)


def _crash_kind(verdict: Verdict) -> str:
    kind = verdict.details.get("kind", "")
    if kind == "signal":
        return verdict.details.get("signal", "signal")
    if kind == "exit":
        return f"exit {verdict.details.get('returncode')}"
    return kind


def signature(case: dict[str, Any] | None, verdict: Verdict) -> Signature | None:
    """The bucket signature of one failure; None for statuses that are not failures."""
    if verdict.status not in BUCKETED:
        return None
    case = case or {}
    workload = case.get("workload") or {}
    params = workload.get("params") or {}
    dtype = (case.get("origin") or {}).get("dtype") or params.get("dtype") or ""
    d = verdict.details or {}
    kind = ""
    if verdict.status is Status.CRASH:
        kind = _crash_kind(verdict)
    elif verdict.status is Status.HARNESS_ERROR and d.get("kind") == "out_of_memory":
        kind = "out_of_memory"
    detail = ""
    if verdict.status in (Status.COMPILE_ERROR, Status.HARNESS_ERROR) or kind == "exception":
        detail = normalize_message(verdict.message)
    elif verdict.status is Status.CRASH and kind != "out_of_memory" and d.get("fatal"):
        detail = normalize_message(d["fatal"])
    if kind == "out_of_memory" and verdict.status is Status.HARNESS_ERROR:
        detail = ""  # which harness allocation failed is noise; the stage says enough
    primitives = bucket_kind(case).bucket_primitives(case, verdict.status.value)
    return Signature(
        symptom=verdict.status.value,
        stage=verdict.stage.value,
        kind=kind,
        detail=detail,
        site=str(d.get("site") or ""),
        workload=str(workload.get("name") or ""),
        dtype=str(dtype),
        primitives=primitives,
        facts=tuple(sorted(d.get("facts") or ())),
    )
