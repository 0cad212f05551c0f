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
                :func:`fuzzharness.triage.throw_site`)
``workload``    the workload name; ``dtype`` its dtype label
``primitives``  the schedule primitives the stored trace applies (sorted, from TVM's own
                trace instruction kinds, so a shrunk case gets its own, smaller set)
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

**Known bugs** (:class:`KnownBugs`): a TOML file of ``[[bug]]`` entries, each with an upstream
link (or "not yet reported") and a ``[bug.match]`` table of patterns over signature fields;
a bucket whose signature matches an entry is *known*, anything else is *new*.  The packaged
file is ``fuzzharness/known_bugs.toml``; its header documents the format.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from fuzzharness.verdict import FINDINGS, NOTES, Stage, Status, Verdict

#: statuses that get a bucket: TVM findings, and harness errors (reported apart, never as TVM's)
BUCKETED = frozenset(FINDINGS | NOTES | {Status.HARNESS_ERROR})


# -- normalisation -------------------------------------------------------------------------
_SUBSTITUTIONS: list[tuple[re.Pattern[str], str]] = [
    # /project/src/tirx/transform/vectorize_loop.cc:1058 → vectorize_loop.cc
    (re.compile(r"(?:[\w.+-]*/)+([\w.+-]+\.(?:cc|h|cpp|hpp|py|pxi))(?::\d+)?"), r"\1"),
    (re.compile(r"0x[0-9a-fA-F]+"), "0xADDR"),
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
    for rx, repl in _SUBSTITUTIONS:
        text = rx.sub(repl, text)
    return text.strip().rstrip(":").strip()[:MAX_DETAIL]


# -- primitives from a trace ----------------------------------------------------------------
#: trace instructions that only look things up or sample (their effect is in later steps)
_QUERY_PREFIXES = ("Get", "Sample")
_QUERY_KINDS = frozenset({"EnterPostproc"})
#: annotations that are how a primitive is spelled in the trace
ANNOTATION_PRIMITIVES = {
    "pragma_auto_unroll_max_step": "unroll",
    "pragma_unroll_explicit": "unroll",
    "software_pipeline_stage": "software_pipeline",
    "software_pipeline_order": "software_pipeline",
    "double_buffer_scope": "double_buffer",
}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
# instruction kinds whose snake_case is not the Schedule method's name
_KIND_METHODS = {"RFactor": "rfactor", "ReIndex": "reindex", "UnsafeSetDType": "unsafe_set_dtype"}


def trace_primitives(trace: Any) -> tuple[str, ...]:
    """Sorted primitive names applied by a stored trace (TVM ``Trace.as_json()`` data)."""
    if not trace or not isinstance(trace, list | tuple) or not trace[0]:
        return ()
    names: set[str] = set()
    for inst in trace[0]:
        if not isinstance(inst, list | tuple) or not inst or not isinstance(inst[0], str):
            continue
        kind = inst[0]
        if kind.startswith(_QUERY_PREFIXES) or kind in _QUERY_KINDS:
            continue
        if kind == "Annotate":
            attrs = inst[2] if len(inst) > 2 and isinstance(inst[2], list | tuple) else []
            names.add(ANNOTATION_PRIMITIVES.get(str(attrs[0]) if attrs else "", "annotate"))
        else:
            names.add(_KIND_METHODS.get(kind) or _CAMEL.sub("_", kind).lower())
    return tuple(sorted(names))


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
    primitives = _primitives(case)
    if verdict.status is Status.REFERENCE_MISMATCH and workload.get("name") != "graph":
        # TVM's build of the *unscheduled* program disagrees with the reference: the
        # schedule the case also carried has nothing to do with it
        primitives = ()
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


def _primitives(case: dict[str, Any]) -> tuple[str, ...]:
    """The trace's primitives; for a graph case its operators and per-function schedules
    (:func:`generators.graphs.spec.graph_primitives`)."""
    if (case.get("workload") or {}).get("name") == "graph":
        from generators.graphs.spec import graph_primitives

        return graph_primitives(case)
    return trace_primitives((case.get("schedule") or {}).get("trace"))


# -- known bugs -----------------------------------------------------------------------------
class KnownBugsError(ValueError):
    """A known-bugs file that cannot be used (user-facing, one line)."""


_MATCH_KEYS = {"symptom", "kind", "stage", "detail", "site", "workloads", "dtypes",
               "primitives", "facts", "tvm"}
_BUG_KEYS = {"id", "title", "link", "status", "notes", "match"}


@dataclasses.dataclass(frozen=True)
class KnownBug:
    id: str
    title: str
    link: str
    status: str
    match: dict[str, Any]
    notes: str = ""

    def matches(self, sig: Signature, tvm_version: str | None = None) -> bool:
        m = self.match
        if m["symptom"] != sig.symptom:
            return False
        for key in ("kind", "stage"):
            if key in m and m[key] != getattr(sig, key):
                return False
        for key in ("detail", "site"):
            if key in m and not re.search(m[key], getattr(sig, key)):
                return False
        if "workloads" in m and sig.workload not in m["workloads"]:
            return False
        if "dtypes" in m and sig.dtype not in m["dtypes"]:
            return False
        if "primitives" in m and not set(m["primitives"]) <= set(sig.primitives):
            return False
        if "facts" in m and not set(m["facts"]) <= set(sig.facts):
            return False
        if "tvm" in m and tvm_version is not None and not tvm_version.startswith(m["tvm"]):
            return False
        return True

    def label(self) -> str:
        return f"{self.id} ({self.link or self.status})"


def default_known_bugs_path() -> Path:
    return Path(str(resources.files("fuzzharness") / "known_bugs.toml"))


@dataclasses.dataclass
class KnownBugs:
    bugs: list[KnownBug]
    source: str = ""

    @classmethod
    def load(cls, path: str | Path | None = None) -> KnownBugs:
        """Read and validate a known-bugs file (None: the packaged one)."""
        p = Path(path) if path is not None else default_known_bugs_path()
        try:
            with open(p, "rb") as f:
                doc = tomllib.load(f)
        except OSError as e:
            raise KnownBugsError(f"cannot read known-bugs file {p}: {e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise KnownBugsError(f"malformed TOML in known-bugs file {p}: {e}") from None
        return cls.from_doc(doc, str(p))

    @classmethod
    def from_doc(cls, doc: dict[str, Any], source: str = "") -> KnownBugs:
        where = source or "known bugs"
        unknown = set(doc) - {"bug", "format"}
        if unknown:
            raise KnownBugsError(f"{where}: unknown top-level key(s) {', '.join(sorted(unknown))}")
        bugs: list[KnownBug] = []
        seen: set[str] = set()
        entries = doc.get("bug", [])
        if not isinstance(entries, list):
            raise KnownBugsError(f"{where}: 'bug' must be an array of tables ([[bug]])")
        for n, entry in enumerate(entries, 1):
            bugs.append(_parse_bug(entry, f"{where}: bug #{n}", seen))
        return cls(bugs, source)

    def match(self, sig: Signature, tvm_version: str | None = None) -> KnownBug | None:
        for bug in self.bugs:
            if bug.matches(sig, tvm_version):
                return bug
        return None

    def __len__(self) -> int:
        return len(self.bugs)


def _parse_bug(entry: Any, where: str, seen: set[str]) -> KnownBug:
    if not isinstance(entry, dict):
        raise KnownBugsError(f"{where}: not a table")
    unknown = set(entry) - _BUG_KEYS
    if unknown:
        raise KnownBugsError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(_BUG_KEYS))})")
    for key in ("id", "title"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise KnownBugsError(f"{where}: '{key}' must be a non-empty string")
    bid = entry["id"]
    where = f"{where} ({bid})"
    if bid in seen:
        raise KnownBugsError(f"{where}: duplicate id")
    seen.add(bid)
    link = entry.get("link", "")
    if not isinstance(link, str) or (link and not link.startswith(("http://", "https://"))):
        raise KnownBugsError(f"{where}: 'link' must be a URL or \"\"")
    status = entry.get("status", "reported" if link else "not yet reported")
    match = entry.get("match")
    if not isinstance(match, dict) or not match:
        raise KnownBugsError(f"{where}: needs a [bug.match] table")
    unknown = set(match) - _MATCH_KEYS
    if unknown:
        raise KnownBugsError(f"{where}: unknown match key(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(_MATCH_KEYS))})")
    if match.get("symptom") not in {s.value for s in BUCKETED}:
        raise KnownBugsError(f"{where}: match.symptom must be one of "
                             f"{', '.join(sorted(s.value for s in BUCKETED))}")
    if "stage" in match and match["stage"] not in {s.value for s in Stage}:
        raise KnownBugsError(f"{where}: unknown stage {match['stage']!r}")
    for key in ("detail", "site"):
        if key in match:
            try:
                re.compile(match[key])
            except (re.error, TypeError) as e:
                raise KnownBugsError(f"{where}: match.{key} is not a regular expression ({e})") from None
    for key in ("workloads", "dtypes", "primitives", "facts"):
        if key in match and not (isinstance(match[key], list)
                                 and all(isinstance(x, str) for x in match[key])):
            raise KnownBugsError(f"{where}: match.{key} must be a list of strings")
    for key in ("kind", "tvm"):
        if key in match and not isinstance(match[key], str):
            raise KnownBugsError(f"{where}: match.{key} must be a string")
    return KnownBug(bid, entry["title"], link, str(status), dict(match), str(entry.get("notes", "")))
