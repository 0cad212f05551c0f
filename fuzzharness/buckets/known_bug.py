"""One known-bugs entry (:class:`KnownBug`): its patterns, its trigger, how it matches a
failure, and how it is read from the file (:func:`parse_bug`).  The collection, the file and
the corpus are :mod:`fuzzharness.buckets.known_bugs` (the format is documented there)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from fuzzharness.buckets.root_causes import WRONG_OUTPUT, WRONG_STATUSES, RootCause
from fuzzharness.buckets.signatures import BUCKETED, Signature
from fuzzharness.core.verdict import Stage


class KnownBugsError(ValueError):
    """A known-bugs file that cannot be used (user-facing, one line)."""


MATCH_KEYS = {"symptom", "also_symptoms", "kind", "stage", "detail", "site", "workloads",
               "dtypes", "primitives", "facts", "tvm"}
BUG_KEYS = {"id", "title", "link", "status", "notes", "match", "trigger", "witness", "routes"}
TRIGGER_KEYS = {"primitives", "culprit", "options", "step_site"}
#: primitives that only add a copy block next to the program's blocks
#: (a cache of an *input*: a cache of the output moves where results go, its own bugs)
SIBLING_MAKERS = frozenset({"cache_read", "reindex_cache_read"})
#: loop steps a GPU kernel needs around its ``bind`` (the thread loop is made by them): a
#: minimized GPU case cannot drop them, so an entry whose trigger has ``bind`` allows them
BIND_SCAFFOLD = frozenset({"fuse", "split", "reorder"})
WRONG_ANSWERS = frozenset(WRONG_STATUSES)  # one bug shows as either


@dataclasses.dataclass(frozen=True)
class KnownBug:
    id: str
    title: str
    link: str
    status: str
    match: dict[str, Any]
    notes: str = ""
    trigger: dict[str, Any] | None = None  # the minimal trigger ([bug.trigger]); None: not given
    source: str = ""  # where the entry comes from: a known-bugs file or a corpus entry
    #: the bug's executable witness: a minimized case (JSON) that fails with it, its path
    #: relative to the known-bugs file (``witness = "known_witnesses/<id>.json"``);
    #: ``fuzzharness known check`` runs it: it must fail and be recognized as this entry
    witness: str = ""
    #: more witnesses: the bug reached by other routes (``routes = ["known_witnesses/…"]``)
    routes: tuple[str, ...] = ()
    #: the root-cause keys recorded in the witnesses (known_identities.py)
    identities: frozenset[str] = frozenset()

    @property
    def witnesses(self) -> tuple[str, ...]:
        return tuple(w for w in (self.witness, *self.routes) if w)

    def pinned_release_holds(self, tvm_version: str | None) -> bool:
        m = self.match
        return "tvm" not in m or tvm_version is None or tvm_version.startswith(m["tvm"])

    @property
    def symptoms(self) -> set[str]:
        """The entry's symptom and the other symptoms it lists for its bug (``also_symptoms``);
        a wrong answer and its nan twin (garbage read as nan) are one."""
        out = {self.match["symptom"], *self.match.get("also_symptoms", ())}
        return out | WRONG_ANSWERS if out & WRONG_ANSWERS else out

    def _pins_hold(self, sig: Signature) -> bool:
        """``stage`` and ``kind`` pin the entry's own symptom (and its twin); another symptom
        it lists shows where and how that symptom shows (garbage is noticed at verify, a
        crash at run)."""
        m = self.match
        own = {m["symptom"]} | (WRONG_ANSWERS if m["symptom"] in WRONG_ANSWERS else set())
        if sig.symptom not in own:
            return True
        return all(m[k] == getattr(sig, k) for k in ("stage", "kind") if k in m)

    def matches(self, sig: Signature, tvm_version: str | None = None) -> bool:
        """The raw match: every ``[bug.match]`` pattern holds for ``sig``."""
        m = self.match
        if sig.symptom not in self.symptoms:
            # a wrong answer and its nan twin (garbage read as nan) are one bug; an entry
            # lists other symptoms of its bug (memory damage: a crash or a runaway loop)
            return False
        if not self._pins_hold(sig):
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

    def confirms_raw(self, sig: Signature) -> bool:
        """A raw match is certain: the failure has error text, or its bucket key holds no
        schedule (nothing a bystander could add)."""
        return sig.has_text or not sig.primitives

    def matches_minimized(self, sig: Signature, rc: RootCause,
                          tvm_version: str | None = None) -> bool:
        """The minimized failure (signature ``sig``, root cause ``rc``) is this bug: see the
        module docstring."""
        m = self.match
        if sig.has_text or rc.has_text:
            return self.matches(sig, tvm_version)
        if m["symptom"] in ("wrong_result", "nan_inf"):  # the symptom class: nan twins too
            if rc.symptom != WRONG_OUTPUT:
                return False
        elif sig.symptom not in self.symptoms:
            return False
        if not self._pins_hold(sig):
            return False
        if not self._on_its_site(rc):
            return False
        if "tvm" in m and tvm_version is not None and not tvm_version.startswith(m["tvm"]):
            return False
        if "workloads" in m and sig.workload not in m["workloads"]:
            return False
        mine = set(m.get("primitives", ()))
        # the step TVM went wrong at is the entry's one primitive, with the entry's facts in
        # that prefix: a longer route into the same bug (step_bisect)
        by_step = bool(rc.step) and mine == {rc.step} and set(m.get("facts", ())) <= set(rc.step_facts)
        if "facts" in m and not set(m["facts"]) <= set(sig.facts) and not by_step:
            return False
        if sig.symptom == "reference_mismatch" and "dtypes" in m and sig.dtype not in m["dtypes"]:
            return False
        trigger = self.trigger or {}
        if rc.evidence == "ir_shape" and set(rc.mechanism) & set(m.get("facts", ())):
            pass  # the entry names the mechanism: whatever route reached it is this bug
        elif by_step and "primitives" not in trigger:
            pass
        elif "primitives" in trigger:
            if set(trigger["primitives"]) != set(rc.primitives):
                return False
        elif "facts" in m and m["facts"]:
            # the entry names the IR shape its bug leaves (checked above): its primitives
            # must be there, and besides them only steps that add a copy block (a cache_read
            # giving blockize the sibling block it needs) — any other step the minimized
            # case could not drop may be another bug
            theirs = set(rc.primitives)
            if not mine <= theirs or not theirs - mine <= SIBLING_MAKERS:
                return False
        elif mine != set(rc.primitives) and (
                "primitives" in m or sig.primitives) and not (
                "bind" in mine and mine <= set(rc.primitives)
                and set(rc.primitives) - mine <= BIND_SCAFFOLD):
            return False
        if trigger.get("culprit") and rc.culprit and trigger["culprit"] != rc.culprit:
            return False  # an unconfirmed culprit (none recorded) refutes nothing
        if "options" in trigger and sorted(trigger["options"]) != sorted(rc.options):
            return False
        return True

    def _on_its_site(self, rc: RootCause) -> bool:
        """The site classes the entry's trigger requires (``[bug.trigger] step_site``) are
        among those of ``rc``'s culprit step, when ``rc`` has one: a second loop_partition
        of a spatial loop is not the re-run init of a partitioned *reduction* loop, though
        both leave repeated inits.  A route may add classes, never remove a required one."""
        need = set((self.trigger or {}).get("step_site", ()))
        return not need or rc.evidence != "step_site" or need <= set(rc.step_site)

    def label(self) -> str:
        return f"{self.id} ({self.link or self.status})"


@dataclasses.dataclass(frozen=True)
class Match:
    """A known bug a failure matched, and how sure that is (see the module docstring)."""

    bug: KnownBug
    confirmed: bool  # False: "probably known" — minimization must confirm it

    @property
    def label(self) -> str:
        return "known" if self.confirmed else "probably known"


def parse_bug(entry: Any, where: str, seen: set[str]) -> KnownBug:
    if not isinstance(entry, dict):
        raise KnownBugsError(f"{where}: not a table")
    unknown = set(entry) - BUG_KEYS
    if unknown:
        raise KnownBugsError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(BUG_KEYS))})")
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
    unknown = set(match) - MATCH_KEYS
    if unknown:
        raise KnownBugsError(f"{where}: unknown match key(s) {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(MATCH_KEYS))})")
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
    for key in ("workloads", "dtypes", "primitives", "facts", "also_symptoms"):
        if key in match and not (isinstance(match[key], list)
                                 and all(isinstance(x, str) for x in match[key])):
            raise KnownBugsError(f"{where}: match.{key} must be a list of strings")
    if not set(match.get("also_symptoms", ())) <= {s.value for s in BUCKETED}:
        raise KnownBugsError(f"{where}: match.also_symptoms must be among "
                             f"{', '.join(sorted(s.value for s in BUCKETED))}")
    for key in ("kind", "tvm"):
        if key in match and not isinstance(match[key], str):
            raise KnownBugsError(f"{where}: match.{key} must be a string")
    trigger = entry.get("trigger")
    if trigger is not None:
        if not isinstance(trigger, dict) or set(trigger) - TRIGGER_KEYS:
            raise KnownBugsError(f"{where}: [bug.trigger] takes {', '.join(sorted(TRIGGER_KEYS))}")
        for key in ("primitives", "options", "step_site"):
            if key in trigger and not (isinstance(trigger[key], list)
                                       and all(isinstance(x, str) for x in trigger[key])):
                raise KnownBugsError(f"{where}: trigger.{key} must be a list of strings")
        if "culprit" in trigger and not isinstance(trigger["culprit"], str):
            raise KnownBugsError(f"{where}: trigger.culprit must be a string")
        if not all(str(c).startswith("site_") for c in trigger.get("step_site", ())):
            raise KnownBugsError(f"{where}: trigger.step_site names site classes (site_reduction, …)")
    witness, routes = entry.get("witness", ""), entry.get("routes", [])
    if not isinstance(witness, str):
        raise KnownBugsError(f"{where}: 'witness' must be a path (relative to the file)")
    if not (isinstance(routes, list) and all(isinstance(r, str) and r for r in routes)):
        raise KnownBugsError(f"{where}: 'routes' must be a list of paths (relative to the file)")
    return KnownBug(bid, entry["title"], link, str(status), dict(match), str(entry.get("notes", "")),
                    trigger=dict(trigger) if trigger is not None else None, source=where,
                    witness=witness, routes=tuple(routes))
