"""Writing known-bugs entries: one ``[[bug]]`` table from a verified, minimized repro.

The entry is appended to the file as text (the file's comments and layout stay as they are),
then the whole file is read back with :meth:`KnownBugs.load`; if that fails, or the entry
does not classify its own repro as *known*, the file is restored and nothing is added.

What goes in (from the repro directory's ``finding.json``, written by
:func:`fuzzharness.repro.package.write_repro`):

``[bug.match]``    the raw patterns: symptom, stage, crash kind; for an error its normalised
                   message and throw site (anchored, escaped); for a wrong answer the
                   *minimized* primitive set and facts — a raw bucket that contains them is
                   only probably this bug until minimized; the TVM version (major.minor)
``[bug.trigger]``  the minimal trigger of a wrong answer, crash or hang: the primitive
                   sequence, the culprit pass, the options it needs
``witness``        the repro's minimized case (``case.json``), written beside the file as
                   ``known_witnesses/<id>.json`` with the root cause the campaign computed
                   for it: ``fuzzharness known check`` can run it at once, and a minimized
                   failure with that root-cause key is this bug whatever the patterns say
                   (none for a failure raised while a schedule was drawn: its case cannot
                   tell a fix)
"""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any

from fuzzharness.buckets import known_identities
from fuzzharness.buckets.known_bugs import KnownBug, KnownBugs
from fuzzharness.buckets.root_causes import RootCause
from fuzzharness.buckets.signatures import Signature

FINDING = "finding.json"
WITNESSES = "known_witnesses"  # beside the known-bugs file
_ID = re.compile(r"[a-z0-9][a-z0-9-]*\Z")


class EntryError(ValueError):
    """A repro that cannot become an entry (user-facing, one line)."""


def _toml(v: Any) -> str:
    """A TOML value for a string or a list of strings (JSON's string escapes are TOML's)."""
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return json.dumps(str(v), ensure_ascii=False)


def slug(title: str) -> str:
    """An id from an issue title: ``[Bug] [TIR][Schedule] sch.loop_partition is accepted …``
    → ``schedule-loop-partition-is-accepted-and-the``."""
    text = re.sub(r"\[Bug\]|\[TIR\]|\[Relax\]", " ", title)
    text = re.sub(r"\bsch\.", "", text).lower()
    words = re.findall(r"[a-z0-9]+", text)
    return "-".join(words[:7]) or "bug"


def witness_doc(case: dict[str, Any], finding: dict[str, Any], *, bug_id: str,
                source: str) -> dict[str, Any] | None:
    """The repro's minimized case as the entry's executable witness (its root cause recorded,
    :mod:`fuzzharness.buckets.known_identities`); None for a failure raised while a schedule
    was drawn — its case only replays the steps before the failing call, so running it could
    never tell that the bug is fixed."""
    origin = dict(case.get("origin") or {})
    if origin.get("failing_verdict"):
        return None
    origin.update(witness_of=bug_id, found=f"{source} (bucket {finding.get('bucket')})")
    doc = {k: v for k, v in case.items() if k != "id"} | {"origin": origin}
    if finding.get("root_cause_fields"):
        doc[known_identities.FIELD] = finding["root_cause_fields"]
    return doc


def entry_text(finding: dict[str, Any], *, bug_id: str, link: str, source: str,
               witness: str = "") -> str:
    sig = Signature.from_dict(finding["signature"])
    rc = RootCause.from_dict(finding["root_cause_fields"]) if finding.get("root_cause_fields") else None
    title = re.sub(r"^\[Bug\]\s*", "", finding["title"]).strip()
    tvm = ".".join(str(finding.get("tvm") or "").split(".")[:2])
    lines = ["", "[[bug]]", f"id = {_toml(bug_id)}", f"title = {_toml(title)}",
             f"link = {_toml(link)}"]
    if not link:
        lines.append('status = "not yet reported"')
    if witness:
        lines.append(f"witness = {_toml(witness)}  # `fuzzharness known check` runs it")
    lines.append("notes = " + _toml(
        f"Added by `fuzzharness known add` from {source} on {datetime.date.today().isoformat()} "
        f"(case {finding.get('case_id')}, bucket {finding.get('bucket')}, root cause "
        f"{finding.get('root_cause')}); the repro there reproduces it."))
    lines += ["[bug.match]", f"symptom = {_toml(sig.symptom)}", f"stage = {_toml(sig.stage)}"]
    if sig.kind:
        lines.append(f"kind = {_toml(sig.kind)}")
    if sig.has_text:
        if sig.detail:
            lines.append(f"detail = {_toml('^' + re.escape(sig.detail) + '$')}")
        if sig.site:
            lines.append(f"site = {_toml('^' + re.escape(sig.site) + '$')}")
    else:
        if sig.primitives:
            lines.append(f"primitives = {_toml(sorted(sig.primitives))}")
        if sig.facts:
            lines.append(f"facts = {_toml(list(sig.facts))}")
        if sig.symptom == "reference_mismatch":
            lines += [f"workloads = {_toml([sig.workload])}", f"dtypes = {_toml([sig.dtype])}"]
    if tvm:
        lines.append(f"tvm = {_toml(tvm)}")
    if rc is not None and not rc.has_text and sig.symptom != "reference_mismatch":
        lines += ["[bug.trigger]", f"primitives = {_toml(list(rc.primitives))}",
                  f"options = {_toml(list(rc.options))}"]
        if rc.culprit:
            lines.append(f"culprit = {_toml(rc.culprit)}")
    return "\n".join(lines) + "\n"


def add(repro_dir: str | Path, path: str | Path, *, bug_id: str | None = None,
        link: str = "") -> KnownBug:
    """Append the entry of the verified repro in ``repro_dir`` to the known-bugs file ``path``."""
    src, path = Path(repro_dir), Path(path)
    if not (src / "issue.md").is_file() or not (src / FINDING).is_file():
        raise EntryError(f"{src}: not a verified repro (no issue.md and {FINDING}; "
                         "`fuzzharness minimize` writes them when the repro reproduces)")
    try:
        finding = json.loads((src / FINDING).read_text())
    except (OSError, ValueError) as e:
        raise EntryError(f"{src / FINDING}: unreadable ({e})") from None
    if not finding.get("signature"):
        raise EntryError(f"{src / FINDING}: no signature")
    if link and not link.startswith(("http://", "https://")):
        raise EntryError("--link must be a URL")
    bug_id = bug_id or slug(finding.get("title", ""))
    if not _ID.match(bug_id):
        raise EntryError(f"id {bug_id!r}: use lowercase letters, digits and '-'")
    before = path.read_text() if path.exists() else "format = 1\n"
    known = KnownBugs.load(path, corpus=False) if path.exists() else KnownBugs([])
    if any(b.id == bug_id for b in known.bugs):
        raise EntryError(f"{path} already has an entry {bug_id!r} (choose another with --id)")
    witness = _write_witness(src, path, finding, bug_id)
    path.write_text(before.rstrip("\n") + "\n" + entry_text(
        finding, bug_id=bug_id, link=link, source=str(src),
        witness=str(witness.relative_to(path.parent)) if witness else ""))
    try:
        known = KnownBugs.load(path, corpus=False)
        bug = next(b for b in known.bugs if b.id == bug_id)
        sig = Signature.from_dict(finding["signature"])
        rc = RootCause.from_dict(finding["root_cause_fields"]) if finding.get("root_cause_fields") else None
        tvm = finding.get("tvm")
        if not (bug.matches_minimized(sig, rc, tvm) if rc is not None else bug.matches(sig, tvm)):
            raise EntryError(f"the new entry does not match its own repro ({sig.title()})")
    except Exception:
        path.write_text(before)
        if witness:
            witness.unlink()
        raise
    return bug


def _write_witness(src: Path, path: Path, finding: dict[str, Any], bug_id: str) -> Path | None:
    """``known_witnesses/<id>.json`` beside the known-bugs file, from the repro's case.json."""
    try:
        case = json.loads((src / "case.json").read_text())
    except (OSError, ValueError):
        return None  # a repro without its case: an entry of patterns only
    doc = witness_doc(case, finding, bug_id=bug_id, source=str(src))
    if doc is None:
        return None
    out = path.parent / WITNESSES / f"{bug_id}.json"
    if out.exists():
        raise EntryError(f"{out} already exists (choose another id with --id)")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return out
