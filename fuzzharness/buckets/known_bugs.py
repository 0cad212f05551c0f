"""Known bugs: a TOML file of ``[[bug]]`` entries, plus the regression corpus, matched against
bucket signatures and against the root causes of minimized buckets.

**Known bugs** (:class:`KnownBugs`): a TOML file of ``[[bug]]`` entries, each with an upstream
link (or "not yet reported"), a ``[bug.match]`` table of patterns over signature fields and,
optionally, a ``[bug.trigger]`` table — the bug's minimal trigger: the primitive *sequence*
of its minimized trace, its ``culprit`` pass, the ``options`` it needs.  The packaged file is
``fuzzharness/known_bugs.toml``; its header documents the format.  Every entry of the
regression corpus (``corpus/``, :func:`default_corpus_dir`) is a known bug too, with the
trigger read from its minimized ``case.json`` (:func:`corpus_bugs`).

How sure a match is (:meth:`KnownBugs.classify`):

* a failure **with error text** that matches an entry is *known*: the normalised message and
  throw site name the bug, whatever schedule reached it;
* so is a failure whose bucket key holds no schedule (a reference mismatch);
* a raw wrong answer (or bare crash or hang) whose primitive set merely *contains* an
  entry's primitives is only **probably known**: another miscompile whose trace happens to
  use ``merge`` would match ``primitives = ["merge"]`` too.  It is minimized like a new
  bucket, and becomes *known* only when its minimized case's root cause
  (:mod:`fuzzharness.buckets.root_causes`) is the entry's trigger — the same primitive set
  (``[bug.trigger] primitives``, else ``[bug.match] primitives``), or, when the root cause
  has a mechanism fact the entry's ``facts`` name, that mechanism whatever the primitives;
  an entry that names IR-shape ``facts`` (all present) needs its primitives among the
  trigger's, the rest of the trigger only copy-block steps (:data:`SIBLING_MAKERS`); an
  entry whose primitives include ``bind`` also allows the loop steps that make the thread
  loop (:data:`BIND_SCAFFOLD`: fuse, split, reorder — a GPU case cannot drop them);
  the same culprit pass when the entry names one and the root cause has a confirmed one;
  the same options when it lists them, the same symptom *class* (so a ``wrong_result``
  entry also covers its ``nan_inf`` twin) — otherwise it is *new*.  An entry whose trigger
  is *one* primitive also knows a longer route: when the first schedule step after which the
  minimized case fails (its culprit step, :mod:`fuzzharness.minimize.step_bisect`) is that
  primitive, with the entry's facts in that prefix;
* a raw bucket that matches nothing is new; its minimized case may still turn out to be a
  known bug (a bystander primitive removed, a fact restored), and then it is known.

**Identity from the witnesses** comes before every rule above: an entry's witnesses (its
``witness`` and the ``routes`` — minimized cases of the same bug reached another way) carry
the root cause ``fuzzharness known check --record`` computed for them; a minimized failure
whose root cause has one of those keys is that bug, whatever the rules say
(:mod:`fuzzharness.buckets.known_identities`).  ``[bug.trigger] step_site`` bounds the
rules by place: a failure whose culprit step's site lacks one of those classes
(:mod:`fuzzharness.minimize.step_site`) is another bug at the same primitive.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from fuzzharness.buckets.known_bug import KnownBug, KnownBugsError, Match, parse_bug
from fuzzharness.buckets.root_causes import RootCause, options_of, root_cause
from fuzzharness.buckets.signatures import Signature


def default_known_bugs_path() -> Path:
    return Path(str(resources.files("fuzzharness") / "known_bugs.toml"))


def default_corpus_dir() -> Path | None:
    """The repository's regression corpus (``corpus/`` beside the package), when there is one
    (a clone or an editable install; a wheel ships no corpus)."""
    d = Path(str(resources.files("fuzzharness"))).parent / "corpus"
    return d if d.is_dir() else None


def corpus_bugs(corpus: str | Path | None, file_bugs: Sequence[KnownBug] = ()) -> list[KnownBug]:
    """One known bug per corpus entry (``<name>/meta.json`` + ``case.json``) that still
    reproduces: matched by its minimized signature (text failures: the exact normalised
    message and site) on the TVM release it was found on, confirmed by its trigger — the root
    cause of its ``case.json`` with the culprit its meta.json records, and the site classes
    that the file entry it stands for (``known_bug`` in ``file_bugs``) requires.  Entries marked
    ``fixed`` are not known bugs (failing again is a regression); entries that cannot be
    read are skipped (the corpus tests report them)."""
    import json

    if corpus is None or not Path(corpus).is_dir():
        return []
    out = []
    for d in sorted(Path(corpus).iterdir()):
        try:
            meta = json.loads((d / "meta.json").read_text())
            case = json.loads((d / "case.json").read_text())
            sig = Signature.from_dict(meta["signature"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not sig.is_finding or meta.get("expected") == "fixed":
            continue  # a fixed bug that fails again is a regression: new
        match: dict[str, Any] = {"symptom": sig.symptom, "stage": sig.stage}
        if meta.get("tvm"):  # pinned to the TVM release it was found on, like the file's
            match["tvm"] = ".".join(str(meta["tvm"]).split(".")[:2])
        trigger = None
        if sig.kind:
            match["kind"] = sig.kind
        if sig.has_text:
            if sig.detail:
                match["detail"] = "^" + re.escape(sig.detail) + "$"
            if sig.site:
                match["site"] = "^" + re.escape(sig.site) + "$"
        else:
            if sig.primitives:
                match["primitives"] = list(sig.primitives)
            if sig.facts:
                match["facts"] = list(sig.facts)
            if sig.symptom == "reference_mismatch":
                match.update(workloads=[sig.workload], dtypes=[sig.dtype])
            rc = root_cause(case, sig, meta.get("culprit") or "")
            trigger = {"primitives": list(rc.primitives), "options": list(options_of(case))}
            if meta.get("culprit"):
                trigger["culprit"] = meta["culprit"]
            site = next(((b.trigger or {}).get("step_site") for b in file_bugs
                         if b.id == meta.get("known_bug")), None)
            if site:
                trigger["step_site"] = list(site)
        link = meta.get("upstream") or ""
        out.append(KnownBug(f"corpus:{d.name}", meta.get("title") or d.name, link,
                            "reported" if link else "not yet reported", match,
                            notes=f"regression corpus entry {d}"
                            + (f" (known bug {meta['known_bug']})" if meta.get("known_bug") else ""),
                            trigger=trigger, source=str(d)))
    return out


def _specificity(bug: KnownBug) -> tuple[bool, int]:
    """How much of a raw signature an entry pins down: with two raw matches (blockize +
    reduction_init_missing, and blockize + cache_write + the same fact) the narrower one is
    the bug.  The file's entries come before the corpus's stand-ins of them (a corpus entry
    is a witness of a file entry, named ``corpus:<id>``); ties keep the file's order (max
    returns the first)."""
    m = bug.match
    return (not bug.id.startswith("corpus:"),
            len(m.get("primitives", ())) + len(m.get("facts", ()))
            + sum(1 for k in ("detail", "site", "kind", "workloads", "dtypes") if k in m))


@dataclasses.dataclass
class KnownBugs:
    bugs: list[KnownBug]
    source: str = ""

    @classmethod
    def load(cls, path: str | Path | None = None, *, corpus: str | Path | None | bool = True
             ) -> KnownBugs:
        """Read and validate a known-bugs file (None: the packaged one), plus the entries of
        the regression corpus (``corpus``: a directory; True: :func:`default_corpus_dir`;
        False/None: none)."""
        p = Path(path) if path is not None else default_known_bugs_path()
        try:
            with open(p, "rb") as f:
                doc = tomllib.load(f)
        except OSError as e:
            raise KnownBugsError(f"cannot read known-bugs file {p}: {e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise KnownBugsError(f"malformed TOML in known-bugs file {p}: {e}") from None
        from fuzzharness.buckets.known_identities import identities

        known = cls.from_doc(doc, str(p))
        known.bugs = [dataclasses.replace(
            b, witness=str(p.parent / b.witness) if b.witness else "",
            routes=tuple(str(p.parent / r) for r in b.routes)) for b in known.bugs]
        known.bugs = [dataclasses.replace(b, identities=identities(b.witnesses)) if b.witnesses
                      else b for b in known.bugs]
        if corpus is True:
            corpus = default_corpus_dir()
        known.bugs += corpus_bugs(corpus or None, known.bugs)
        return known

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
            bugs.append(parse_bug(entry, f"{where}: bug #{n}", seen))
        return cls(bugs, source)

    def match(self, sig: Signature, tvm_version: str | None = None) -> KnownBug | None:
        """The most specific entry whose raw patterns match (certain or not; see
        :meth:`classify`)."""
        found = [bug for bug in self.bugs if bug.matches(sig, tvm_version)]
        return max(found, key=_specificity) if found else None

    def classify(self, sig: Signature, tvm_version: str | None = None,
                 rc: RootCause | None = None) -> Match | None:
        """Which known bug ``sig`` is, and how sure (see the module docstring).

        ``rc``: the root cause of the bucket's *minimized* case (then ``sig`` is the minimized
        case's signature); None for a raw bucket."""
        if rc is not None:
            for bug in self.bugs:  # the identity of a witness first, then the rules
                if rc.key in bug.identities and bug.pinned_release_holds(tvm_version):
                    return Match(bug, True)
            for bug in self.bugs:
                if bug.matches_minimized(sig, rc, tvm_version):
                    return Match(bug, True)
            return None
        found = [bug for bug in self.bugs if bug.matches(sig, tvm_version)]
        if not found:
            return None
        best = max(found, key=_specificity)
        return Match(best, best.confirms_raw(sig))

    def __len__(self) -> int:
        return len(self.bugs)

    def group_root_causes(self, rows: list[dict[str, Any]], tvm_version: str | None = None
                          ) -> list[dict[str, Any]]:
        """Distinct bugs from root-cause rows (:meth:`ResultsDB.root_causes`): rows whose
        representative repro is the same known bug are one bug — a known bug's repros may
        keep different routes (known-bug identity) — merged into the first row, ``known``
        naming the entry; the other rows as they are, in the order given."""
        out: list[dict[str, Any]] = []
        by_bug: dict[str, dict[str, Any]] = {}
        for row in rows:
            bug = None
            if row.get("fields") and row.get("signature"):
                m = self.classify(Signature.from_dict(row["signature"]), tvm_version,
                                  RootCause.from_dict(row["fields"]))
                bug = m.bug if m is not None else None
            if bug is None:
                out.append(dict(row, known=""))
            elif bug.id in by_bug:
                g = by_bug[bug.id]
                g["buckets"] = sorted([*g["buckets"], *row["buckets"]])
                g["attached"] = {**g.get("attached", {}), **row.get("attached", {})}
                g["cases"] += row["cases"]
                g["repros"] = int(g.get("repros", 0)) + int(row.get("repros", 0))
                g["root_causes"] = [*g["root_causes"], row["key"]]
            else:
                by_bug[bug.id] = dict(row, known=bug.id, root_causes=[row["key"]],
                                      title=f"known {bug.id}: {row['title']}")
                out.append(by_bug[bug.id])
        return out
