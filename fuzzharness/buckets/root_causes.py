"""Root causes: what a bucket is once its first case has been minimized, and which findings
to minimize first.

A bucket key (:mod:`fuzzharness.buckets.signatures`) is computed from the *raw* failing case:
a wrong answer's key holds every primitive of its trace, bystanders included, so one bug
shows up as several buckets.  Once a bucket's case is minimized, its **root cause** says
which bug it is, from evidence that does not depend on the route that reached the bug.
Every root cause records its ``evidence``:

``error_text``  a failure with error text keeps its bucket key fields (symptom, kind, stage,
                normalised message, throw site): the message and the place TVM threw it
                name the bug, whatever schedule reached it;
``ir_shape``    a wrong output (or a crash of the generated code) whose minimized case has a
                **mechanism fact** (:data:`MECHANISM_FACTS`, computed from the program TVM
                lowers: e.g. ``alloc_in_vectorized_loop`` — TVM's allocation planning puts
                a buffer inside a vectorized loop, whichever of compute_at,
                reverse_compute_at, cache_read/write, read_at/write_at or rfactor brought its
                producer there): keyed by the symptom class and those facts alone; or a
                **located mechanism** (:data:`LOCATED_MECHANISMS`: a defect a schedule step
                leaves in the scheduled program, e.g. a block iterating outside its domain
                unguarded), keyed by the fact and the step that first made it (the
                step probe checks every prefix), with memory crashes and wrong output one
                class — the same out-of-domain stores corrupt the heap or a neighbour's
                element depending on where the buffer lies;
``step_site``   a failure without text or mechanism whose culprit schedule step is known
                (:mod:`fuzzharness.minimize.step_bisect`: the first step after which the
                minimized case fails): keyed by the symptom class, the stage, that step and
                the classes of the site it acted on (:mod:`fuzzharness.minimize.step_site`:
                a reduction block, a loop shared with another block, a nested block) — the
                steps before it are the route (a cache_write and a reverse_compute_at, a
                merge, a write_at all give a later ``reindex`` the sibling it mishandles);
``trigger``     otherwise the minimal trigger: the symptom class, the stage, the minimized
                trace's schedule primitives as a *set* (lookups and samplers left out; an
                annotation named by what it spells, e.g. ``unroll``; variants stay apart:
                ``reindex_cache_read`` has bugs ``cache_read`` has not), the options
                that survived minimization, the schedule facts; for a reference mismatch the
                workload and dtype (no schedule to blame); for a graph the per-function
                schedule primitives without the operators, when it has any (the operators
                are where the schedule landed, not the bug).

The ``culprit`` pass is recorded (and named in titles) only once a **fix test** confirmed it
— the repro, run with that pass disabled, says fixed (:func:`fuzzharness.repro.verify.fix_test`),
or the pass raised the error itself — and it is never part of the key: the pass probe names
different passes for repros of one bug (the first of several implicated passes), and an
unconfirmed name is a guess.

Invariants: :func:`root_cause` is a function of plain data (the minimized case's JSON, its
signature and the confirmed culprit); equal evidence gives equal keys; any difference in
symptom class, stage, primitive set, options, facts (or, for ``ir_shape``, mechanism facts)
gives different keys.  The key carries :data:`VERSION`; :meth:`RootCause.from_dict` reads
the fields of an older version and keys them the current way (databases, findings, corpus
entries written before are migrated by reading them).

The order in which buckets are minimized: :mod:`fuzzharness.buckets.priority`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from fuzzharness.buckets.signatures import Signature
from fuzzharness.core.kinds import bucket_kind

#: symptoms folded into one class for root causes
WRONG_OUTPUT = "wrong_output"
WRONG_STATUSES = ("wrong_result", "nan_inf")
#: the culprit when no single disabled pass fixes a wrong output: the scheduled TIR is wrong
SCHEDULE_CULPRIT = "schedule"
#: target keys that are the target itself, not an option
_TARGET_IDENTITY = ("kind", "device", "keys", "arch", "host")
#: a kernel that corrupts memory (guard zones, signals, glibc's heap checks: one class)
MEMORY_CRASH = "crash/memory"
MEMORY_KINDS = ("SIGSEGV", "SIGBUS", "SIGABRT", "heap_damage", "out_of_bounds")
#: stages in which a crash is the generated kernel's (glibc may notice heap damage later)
KERNEL_STAGES = ("run", "verify", "baseline")
#: the version of the root-cause identity (1: primitive sequence and culprit in the key;
#: 2: evidence types, no culprit; 3: step_site evidence, graphs keyed without operators;
#: 4: a placement step on a site whose dependence a wrapper hides is keyed by the wrapper;
#: 5: the variants of a primitive TVM builds with one function are keyed as one step;
#: 6: located mechanisms; 7: a padding step keeps ``site_padding_not_neutral``)
VERSION = 7
#: primitives that place a block (a copy, a moved producer or consumer) where the
#: dependences read from the blocks' *declared* regions allow
PLACEMENT_STEPS = frozenset({"cache_read", "cache_write", "reindex", "reindex_cache_read",
                             "reindex_cache_write", "compute_at", "reverse_compute_at"})
#: variants of one primitive that TVM builds with one function: keyed as one step
#: (``MakeReindexCacheStage<is_cache_read>`` in cache_read_write.cc makes both copy stages,
#: so a copy dropping a predicate is one bug whichever side asked for it — dedup_precision:
#: 1.29 → 1.25 root causes per bug on the tuning seed, no false merge)
STEP_FAMILY = {"reindex_cache_read": "reindex_cache", "reindex_cache_write": "reindex_cache"}
#: the step a root cause is keyed by when a wrapper hid the dependence a placement step needed
HIDDEN_DEPENDENCE_STEP = "placement_after_hiding_wrapper"
#: the site classes kept for it: where the wrapper is, not what the placed block looks like
_HIDING_SITE = ("site_dependence_hidden", "site_nested")
#: steps whose correctness depends on the reduction's combiner (folding a bias into an init
#: is right only for a sum): only their key keeps ``site_reduction_not_sum`` — elsewhere the
#: class split one bug by workload (benchmarks/dedup_precision.py: 1.29 → 1.36 root causes
#: per bug on the tuning seed when every step kept it)
COMBINER_STEPS = frozenset({"fuse_reduction_epilogue"})
#: steps that pad a reduction's inputs with 0: only their key keeps
#: ``site_padding_not_neutral`` — padding a max or a variance's ``(x - mean)²`` with 0 is one
#: bug, padding an iterator a transformed output no longer uses another (dedup_precision's
#: held-out seed merged them as (pad_einsum, site_reduction))
PADDING_STEPS = frozenset({"pad_einsum"})
#: schedule facts that name a bug's mechanism in the program TVM lowers
#: (fuzzharness.execution.facts): a wrong output with one of them is that bug, whatever route
#: reached it.  Only facts of *one* faulty place qualify: ``reduction_init_missing`` and
#: ``reduction_init_repeated`` are shapes several bugs leave (blockize dropping an init,
#: write_at leaving it on the old buffer; loop_partition re-running it, or a compute_at after
#: it), so they stay facts of the trigger.  benchmarks/mechanism_facts.py measures a
#: candidate (how often it holds on passing cases); benchmarks/dedup_precision.py its merges.
#: ``read_region_incomplete`` (a frontend fact: FuseTIR's fused function, before any schedule
#: step, declares fewer reads than it loads) keeps held-out seed 11's concat graph apart from
#: the read_at bug its schedule also has (dedup_precision: the one held-out false merge)
MECHANISM_FACTS = frozenset({"alloc_in_vectorized_loop", "read_region_incomplete"})
#: facts of a defect a schedule step leaves in the scheduled program
#: (:func:`fuzzharness.execution.facts.located_facts`), found on the prefix that first has it
#: (:func:`fuzzharness.minimize.located.located_step`), keyed with that step's family: one
#: defect made by different primitives is different bugs (pad_einsum enlarging a shared loop;
#: a reindex_cache copy or rfactor dropping a predicate — benchmarks/dedup_precision.py).  The
#: step may precede the first *failing* prefix (transform_layout moves pad_einsum's stores).
LOCATED_MECHANISMS = {"binding_outside_domain": "leaves a block running outside its domain",
                      "init_without_reduction_iterator": "makes a reduction iterator spatial "
                      "and keeps the block's T.init()",  # pad_einsum, an inlined epilogue: routes
                      "read_undeclared_buffer": "leaves a block reading buffers its regions omit"}
MEMORY_OR_GARBAGE = "crash/memory or wrong_output"
#: facts of shapes that bugs other than a mechanism's leave: a raw case with one of them
#: beside a mechanism fact may hold a second bug, so it is not attached unminimized (seed 11:
#: 4 of 7 raw cases that still failed with vectorization off had one)
SHAPE_FACTS = frozenset({"reduction_init_missing", "reduction_init_repeated",
                         "loop_mixes_spatial_and_reduction"})
#: evidence types: how a root cause was decided (see the module docstring)
EVIDENCE = ("error_text", "ir_shape", "step_site", "trigger")

def symptom_class(sig: Signature) -> str:
    """The symptom as one bug shows it: ``wrong_output`` for wrong values and nan alike;
    :data:`MEMORY_CRASH` for a kernel that corrupts memory, whichever check noticed it first
    (a guard zone, the MMU, glibc's heap checks); else the status with the crash kind."""
    if sig.symptom in WRONG_STATUSES:
        return WRONG_OUTPUT
    if sig.symptom == "crash" and sig.kind in MEMORY_KINDS and sig.stage in KERNEL_STAGES:
        return MEMORY_CRASH
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
    primitives: tuple[str, ...] = ()  # sorted, unique
    options: tuple[str, ...] = ()
    facts: tuple[str, ...] = ()
    culprit: str = ""  # a pass confirmed by a fix test (or SCHEDULE_CULPRIT); not in the key
    detail: str = ""  # failures with error text: the normalised message ...
    site: str = ""  # ... and where TVM threw it
    workload: str = ""  # reference mismatches only
    dtype: str = ""
    evidence: str = ""  # one of EVIDENCE (derived when empty)
    version: int = VERSION
    step: str = ""  # the first schedule step after which it fails (step_bisect); not keyed
    step_facts: tuple[str, ...] = ()  # the facts of the prefix that ends with that step
    step_site: tuple[str, ...] = ()  # the site classes of that step (step_site evidence)

    def __post_init__(self) -> None:
        object.__setattr__(self, "primitives", tuple(sorted(set(self.primitives))))
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "facts", tuple(self.facts))
        object.__setattr__(self, "step_facts", tuple(self.step_facts))
        object.__setattr__(self, "step_site", tuple(sorted(set(self.step_site))))
        if not self.evidence:
            object.__setattr__(self, "evidence", "error_text" if self.has_text else
                               "ir_shape" if self.mechanism and self.symptom in _MECHANISM_SYMPTOMS
                               else "step_site" if self.step and self.symptom != "reference_mismatch"
                               else "trigger")

    @property
    def has_text(self) -> bool:
        return bool(self.detail or self.site)

    @property
    def mechanism(self) -> tuple[str, ...]:
        """The route-free mechanism facts of the case, else the located ones of its culprit
        step (a failure explained by a route-free mechanism is that bug, wherever a block
        went outside its domain on the way)."""
        return tuple(f for f in self.facts if f in MECHANISM_FACTS) or self.located

    @property
    def located(self) -> tuple[str, ...]:
        """The :data:`LOCATED_MECHANISMS` the culprit step made (none without a step)."""
        return located_mechanisms(self.step, self.step_facts, self.facts)

    def identity(self) -> dict[str, Any]:
        """What the key is a hash of: the evidence the module docstring lists, per type."""
        if self.evidence == "error_text":
            what = {"stage": self.stage, "detail": self.detail, "site": self.site}
        elif self.evidence == "ir_shape" and self.located:
            return {"version": VERSION, "evidence": self.evidence, "symptom": MEMORY_OR_GARBAGE,
                    "mechanism": list(self.located), "step": STEP_FAMILY.get(self.step, self.step)}
        elif self.evidence == "ir_shape":
            what = {"mechanism": list(self.mechanism)}
        elif self.evidence == "step_site":
            step, site = self.keyed_step()
            what = {"stage": self.stage, "step": step, "site": list(site)}
        else:
            what = {"stage": self.stage, "primitives": list(self.primitives),
                    "options": list(self.options), "facts": list(self.facts),
                    "workload": self.workload, "dtype": self.dtype}
        return {"version": VERSION, "evidence": self.evidence, "symptom": self.symptom, **what}

    @property
    def key(self) -> str:
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def keyed_step(self) -> tuple[str, tuple[str, ...]]:
        """The step and site classes a ``step_site`` root cause is keyed by (see the module
        docstring: a placement step misled by a wrapper that hides a dependence is keyed by
        the wrapper; a :data:`STEP_FAMILY` variant by its family; whether a reduction is a sum
        counts only for :data:`COMBINER_STEPS`, whether padding with 0 is neutral only for
        :data:`PADDING_STEPS`)."""
        if "site_dependence_hidden" in self.step_site and self.step in PLACEMENT_STEPS:
            return HIDDEN_DEPENDENCE_STEP, tuple(f for f in self.step_site if f in _HIDING_SITE)
        step = STEP_FAMILY.get(self.step, self.step)
        dropped = {"site_reduction_not_sum"} if self.step not in COMBINER_STEPS else set()
        if self.step not in PADDING_STEPS:
            dropped.add("site_padding_not_neutral")
        return step, tuple(f for f in self.step_site if f not in dropped)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for f in ("primitives", "options", "facts", "step_facts", "step_site"):
            d[f] = list(d[f])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RootCause:
        """Fields of any version, keyed the current way: a version-1 record (no ``version``)
        kept an unconfirmed culprit, which is dropped, and its evidence is derived again; a
        record from before ``step_site`` (version < 3) did not read the site of its step, so
        it stays a ``trigger`` (a step without its site would merge different bugs)."""
        known = {f.name for f in dataclasses.fields(cls)}
        had_site = "step_site" in d
        d = {k: v for k, v in d.items() if k in known}
        for f in ("primitives", "options", "facts", "step_facts", "step_site"):
            d[f] = tuple(d.get(f) or ())
        if int(d.get("version") or 1) < VERSION:
            if d.get("culprit") != SCHEDULE_CULPRIT:
                d["culprit"] = ""
            if d.get("step") in PADDING_STEPS and "site_reduction_not_sum" in d["step_site"]:
                # before version 7: a combiner that is not a sum is a padding that is not neutral
                d["step_site"] = tuple(sorted({*d["step_site"], "site_padding_not_neutral"}))
            d["evidence"], d["version"] = "", VERSION
            rc = cls(**d)
            if rc.evidence == "step_site" and not had_site:
                return dataclasses.replace(rc, evidence="trigger")
            return rc
        return cls(**d)

    def trigger(self) -> str:
        """The minimal trigger in words: ``sch.a, sch.b`` (+ options)."""
        what = ", ".join(self.primitives) if self.primitives else "no schedule"
        return what + (f" with {', '.join(self.options)}" if self.options else "")

    def title(self) -> str:
        """One line: what goes wrong, in which (confirmed) pass, after which calls."""
        where = ""
        if self.culprit == SCHEDULE_CULPRIT:
            where = " (the scheduled program is already wrong)"
        elif self.culprit:
            where = f" in {self.culprit}"
        if self.has_text:
            return f"{self.symptom}@{self.stage}: {self.detail or self.site}"[:160]
        what = {WRONG_OUTPUT: "wrong output", "reference_mismatch": "reference mismatch"}.get(
            self.symptom, self.symptom)
        if self.evidence == "ir_shape" and self.located:
            return (f"{what}{where}: {defect_phrase(self.step, self.located)} "
                    f"({', '.join(self.located)}; after {self.trigger()}, one route)")
        if self.evidence == "ir_shape":
            return f"{what}{where}: {', '.join(self.mechanism)} (after {self.trigger()}, one route)"
        if self.evidence == "step_site" and self.keyed_step()[0] == HIDDEN_DEPENDENCE_STEP:
            return (f"{what}{where}: a wrapper block's regions hide a dependence from "
                    f"sch.{self.step} (after {self.trigger()}, one route)")
        if self.evidence == "step_site":
            site = f" on a {', '.join(f.removeprefix('site_') for f in self.step_site)} site" \
                if self.step_site else ""
            return f"{what}{where} at sch.{self.step}{site} (after {self.trigger()}, one route)"
        head = f"{what}{where} after {self.trigger()}"
        if self.workload:
            head += f" [{self.workload} {self.dtype}]"
        return head + (f" ({', '.join(self.facts)})" if self.facts else "")


#: symptom classes a mechanism fact identifies (wrong values, a kernel's memory crash)
_MECHANISM_SYMPTOMS = (WRONG_OUTPUT, MEMORY_CRASH)


def root_cause(case: dict[str, Any] | None, sig: Signature, culprit: str | None = "",
               step: str = "", step_facts: tuple[str, ...] = (),
               step_site: tuple[str, ...] = ()) -> RootCause:
    """The root cause of a *minimized* failure (see the module docstring); ``culprit``: a
    pass confirmed by a fix test, or :data:`SCHEDULE_CULPRIT`, or ""; ``step``/``step_facts``/
    ``step_site``: the culprit schedule step (:mod:`fuzzharness.minimize.step_bisect`), the
    facts of the prefix ending with it, the site it acted on."""
    if sig.has_text:
        return RootCause(symptom_class(sig), sig.stage, detail=sig.detail, site=sig.site,
                         culprit=culprit or "")
    if sig.symptom == "reference_mismatch":
        return RootCause(sig.symptom, sig.stage, options=options_of(case), culprit=culprit or "",
                         workload=sig.workload, dtype=sig.dtype)
    prims = bucket_kind(case).root_cause_primitives(case, sig)
    symptom = symptom_class(sig)
    stage = "run" if symptom == MEMORY_CRASH else sig.stage  # whichever stage noticed it
    return RootCause(symptom, stage, prims, options_of(case), tuple(sig.facts), culprit or "",
                     step=step, step_facts=tuple(step_facts), step_site=tuple(step_site))


def graph_schedule_primitives(case: dict[str, Any] | None, sig: Signature) -> tuple[str, ...]:
    """A graph's schedule primitives without its operators (a merge on a softmax and one on
    a gelu are one bug: measured, 3 fewer root causes on the held-out seed, no merges),
    or the operators when no schedule primitive is left (the default pipeline on them)."""
    nodes = (((case or {}).get("workload") or {}).get("params") or {}).get("nodes") or []
    ops = {str(n.get("op")) for n in nodes}
    return tuple(p for p in sig.primitives if p not in ops) or tuple(sig.primitives)


def mechanism_key(sig: Signature) -> str | None:
    """The root-cause key a failure would have by its mechanism facts alone (``ir_shape``
    evidence), from a *raw* signature: cheap evidence that a new bucket is a root cause
    already found, before anything is minimized; None when it has no mechanism fact (or a
    symptom the mechanism does not explain)."""
    if sig.has_text or sig.symptom == "reference_mismatch":
        return None
    if set(sig.facts) & SHAPE_FACTS:
        return None  # the raw case also has a shape another bug leaves: minimize it
    rc = RootCause(symptom_class(sig), sig.stage, facts=tuple(sig.facts))
    return rc.key if rc.evidence == "ir_shape" else None


def located_mechanisms(step: str, step_facts, facts) -> tuple[str, ...]:
    """The :data:`LOCATED_MECHANISMS` among the facts of the prefix ending with the culprit
    ``step`` — none without a step, or when the case's own ``facts`` hold a route-free
    mechanism (that bug explains the failure, wherever a block went out of its domain)."""
    if not step or any(f in MECHANISM_FACTS for f in facts):
        return ()
    return tuple(f for f in step_facts if f in LOCATED_MECHANISMS)


def defect_phrase(step: str, located) -> str:
    """A located defect in words: ``sch.pad_einsum leaves a block running outside its
    domain`` (its first mechanism)."""
    return f"sch.{step} {LOCATED_MECHANISMS[located[0]]}"


#: symptoms a located defect explains: its out-of-domain accesses give garbage or a crash
_LOCATED_SYMPTOMS = (*WRONG_STATUSES, "crash")


def culprit_of(triage: Any, symptom: str) -> str:
    """The culprit a pass probe (:class:`fuzzharness.kinds.tir.pass_bisect.Triage`) names:
    the pass that raised; :data:`SCHEDULE_CULPRIT` when the triage located a defect in the
    scheduled program (``triage.located``: a block left running outside its domain — the
    program is wrong before any pass runs, and disabling a pass only moves where its
    out-of-domain accesses land, so a pass the probe implicated is chance); the first pass
    whose removal makes the output right; :data:`SCHEDULE_CULPRIT` when a wrong output
    survives disabling each pass; ``""`` when nothing was probed or the probe could not tell."""
    if triage is None:
        return ""
    if getattr(triage, "raised_in", None):
        return str(triage.raised_in)
    if symptom in _LOCATED_SYMPTOMS and getattr(triage, "located", None):
        return SCHEDULE_CULPRIT
    implicated = getattr(triage, "implicated", None) or []
    if implicated:
        return str(implicated[0])
    if symptom in WRONG_STATUSES and getattr(triage, "passes", None):
        return SCHEDULE_CULPRIT
    return ""
