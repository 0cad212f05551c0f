"""The regression corpus: verified repros of confirmed TVM bugs, replayed by the test suite.

Layout (one directory per entry; this format is read by the pytest plugin — keep it)::

    corpus/<name>/case.json    the (minimized) case, plain JSON (fuzzharness.core.case)
    corpus/<name>/repro.py     the standalone script (tvm + numpy only)
    corpus/<name>/issue.md     the issue text
    corpus/<name>/meta.json    {"format": 1, "name", "title", "bucket", "signature",
                                "expected": "reproduces" | "fixed", "upstream": URL or "",
                                "known_bug": id or null, "date": "YYYY-MM-DD",
                                "tvm", "tvm_ffi", "harness"
                                [, "culprit": the root cause's culprit pass or "schedule"]
                                [, "found_as": the campaign bucket it was minimized from]}
    corpus/<name>/snippet.py   (optional) the issue's short compile-run-assert snippet
    corpus/<name>/finding.json (optional) the repro's metadata as written by the minimizer

Every entry is a known bug to the campaigns (:func:`fuzzharness.buckets.known_bugs.corpus_bugs`),
and issue.md, repro.py and meta.json name the same bucket and title (:func:`inconsistencies`;
``corpus refresh`` aligns them).

A case written for a failure raised while a schedule was *drawn* holds the trace before the
failing call; its ``origin`` has ``failing_call`` (the ``sch.<primitive>(...)`` line) and
``failing_verdict`` — replaying such a case.json through the harness does not fail; its
repro.py does (replay corpus entries through repro.py's exit status).

``expected`` is ``"reproduces"`` while the upstream bug is open: the script must exit 1
(a test replaying it is an xfail(strict) — it starts to XPASS the day TVM fixes the bug,
which is the signal to set ``"fixed"``, where the script must exit 0).  ``bucket`` is the
key of the minimized case's signature, ``signature`` the signature itself
(:meth:`fuzzharness.buckets.signatures.Signature.to_dict`).

Names are lowercase words joined by ``-`` (``[a-z0-9][a-z0-9-]*``).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
import shutil
from pathlib import Path
from typing import Any

from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.core.case import Case, CaseFormatError
from fuzzharness.core.errors import UsageError
from fuzzharness.core.tvm_support import versions
from fuzzharness.core.verdict import Verdict
from fuzzharness.engine.isolated import run_isolated
from fuzzharness.repro.verify import run_script

FORMAT = 1
FILES = ("case.json", "repro.py", "issue.md", "meta.json")
OPTIONAL_FILES = ("snippet.py", "finding.json")  # the issue's snippet, the repro's metadata
EXPECTED = {"reproduces": 1, "fixed": 0}  # expected status → the script's exit status
NAME = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
META_KEYS = {"format", "name", "title", "bucket", "signature", "expected", "upstream",
             "known_bug", "date", "tvm", "tvm_ffi", "harness"}


class CorpusError(ValueError):
    """A corpus entry that cannot be added or read (user-facing, one line)."""


@dataclasses.dataclass
class Entry:
    dir: Path
    meta: dict[str, Any]
    case: dict[str, Any] | None = None  # case.json as plain data
    problem: str | None = None  # why the entry cannot be used (see :func:`read`)

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def expected_exit(self) -> int:
        return EXPECTED[self.meta["expected"]]

    @property
    def script(self) -> Path:
        return self.dir / "repro.py"


def read_entry(d: Path) -> Entry:
    """One entry as any corpus may hold it (raise CorpusError): ``case.json`` a case, and
    ``meta.json`` an object whose ``expected`` is ``"reproduces"`` or ``"fixed"``; a
    ``repro.py``, if there is one, must agree with the case.  This is all ``pytest -m
    differential`` needs of a project's own corpus."""
    for f in ("case.json", "meta.json"):
        if not (d / f).is_file():
            raise CorpusError(f"{d}: missing {f}")
    try:
        meta = json.loads((d / "meta.json").read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CorpusError(f"{d}/meta.json: not valid JSON ({e})") from None
    if not isinstance(meta, dict):
        raise CorpusError(f"{d}/meta.json: not a JSON object")
    if meta.get("expected") not in EXPECTED:
        raise CorpusError(f"{d}/meta.json: expected must be one of {', '.join(EXPECTED)}, "
                          f"not {meta.get('expected')!r}")
    try:
        case = Case.from_json((d / "case.json").read_text())
    except (CaseFormatError, UnicodeDecodeError) as e:
        raise CorpusError(f"{d}/case.json: {e}") from None
    return Entry(d, meta, case.to_dict())


def validate(d: Path) -> Entry:
    """One entry of a curated corpus (this repository's ``corpus/``): :func:`read_entry`,
    plus every file and ``meta.json`` key of :data:`FILES` / :data:`META_KEYS`, and a bucket
    key that is its signature's.  Raise CorpusError."""
    entry = read_entry(d)
    meta = entry.meta
    missing = [f for f in FILES if not (d / f).is_file()]
    if missing:
        raise CorpusError(f"{d}: missing {', '.join(missing)}")
    if meta.get("format") != FORMAT:
        raise CorpusError(f"{d}/meta.json: not a format-{FORMAT} corpus entry")
    absent = META_KEYS - set(meta)
    if absent:
        raise CorpusError(f"{d}/meta.json: lacks {', '.join(sorted(absent))}")
    if meta["name"] != d.name or not NAME.match(meta["name"]):
        raise CorpusError(f"{d}/meta.json: name {meta['name']!r} must be the directory name "
                          "(lowercase letters, digits, '-')")
    sig = Signature.from_dict(meta["signature"])
    if sig.key != meta["bucket"]:
        raise CorpusError(f"{d}/meta.json: bucket {meta['bucket']} is not the key of its "
                          f"signature ({sig.key})")
    return entry


def _entry_dirs(corpus: str | Path) -> list[Path]:
    root = Path(corpus)
    if not root.is_dir():
        return []
    return [d for d in sorted(root.iterdir()) if d.is_dir() and not d.name.startswith(".")]


def entries(corpus: str | Path) -> list[Entry]:
    """Every entry, validated; the first invalid one raises :class:`CorpusError`."""
    return [validate(d) for d in _entry_dirs(corpus)]


def named(corpus: str | Path, names: list[str] | None) -> list[Entry]:
    """The entries called ``names`` (all when none are given), validated; a name that is no
    entry is a :class:`~fuzzharness.core.errors.UsageError`."""
    found = entries(corpus)
    if not names:
        return found
    unknown = sorted(set(names) - {e.name for e in found})
    if unknown:
        raise UsageError(f"no corpus entry {unknown[0]!r} in {corpus}")
    return [e for e in found if e.name in names]


def read(corpus: str | Path) -> list[Entry]:
    """Every entry (:func:`read_entry`: a project's corpus may hold only case.json and
    meta.json); an unreadable one is returned with its ``problem`` (a test fails with it)."""
    out = []
    for d in _entry_dirs(corpus):
        if not ((d / "meta.json").exists() or (d / "case.json").exists()):
            continue  # not an entry (a folder of notes, say)
        try:
            out.append(read_entry(d))
        except (CorpusError, OSError) as e:
            out.append(Entry(d, {}, None, str(e)))
    return out


def add(repro_dir: str | Path, corpus: str | Path, name: str, *, upstream: str = "",
        known_bug: str | None = None, expected: str = "reproduces",
        title: str | None = None) -> Entry:
    """Copy a verified repro directory into the corpus as entry ``name``."""

    src = Path(repro_dir)
    if not NAME.match(name):
        raise CorpusError(f"corpus name {name!r}: use lowercase letters, digits and '-'")
    if expected not in EXPECTED:
        raise CorpusError(f"expected must be one of {', '.join(EXPECTED)}")
    if upstream and not upstream.startswith(("http://", "https://")):
        raise CorpusError("--upstream must be a URL")
    for f in ("case.json", "repro.py", "issue.md"):
        if not (src / f).is_file():
            why = " (only verified repros have an issue.md)" if f == "issue.md" else ""
            raise CorpusError(f"{src}: no {f}{why}")
    case = Case.from_json((src / "case.json").read_text())
    sig = _signature_of(src, case)
    dest = Path(corpus) / name
    if dest.exists():
        raise CorpusError(f"{dest} already exists")
    dest.mkdir(parents=True)
    for f in ("case.json", "repro.py", "issue.md", *OPTIONAL_FILES):
        if (src / f).is_file():
            shutil.copyfile(src / f, dest / f)
    v = versions()
    meta = {
        "format": FORMAT, "name": name,
        "title": title or _issue_title(src / "issue.md"),
        "bucket": sig.key, "signature": sig.to_dict(), "expected": expected,
        "upstream": upstream, "known_bug": known_bug,
        "date": datetime.date.today().isoformat(),
        "tvm": v["tvm"], "tvm_ffi": v["tvm_ffi"], "harness": v["harness"],
    }
    finding = _finding(src)
    if finding.get("culprit"):  # the trigger's culprit pass, for known-bug matching
        meta["culprit"] = finding["culprit"]
    if finding.get("found_as") and finding["found_as"] != sig.key:
        meta["found_as"] = finding["found_as"]
    (dest / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    entry = validate(dest)
    align_headers(entry)
    return entry


def _finding(src: Path) -> dict[str, Any]:
    try:
        return json.loads((src / "finding.json").read_text())
    except (OSError, ValueError):
        return {}


def current_signature(entry: Entry) -> Any:
    """The entry's bucket signature as this harness computes it today (its case is run again,
    in a worker process).  It differs from ``meta.json`` when the normalisation of messages
    or the schedule facts changed since the entry was added; :func:`refresh` rewrites it."""

    return _signature_of(entry.dir, Case.from_json((entry.dir / "case.json").read_text()))


def refresh(entry: Entry) -> tuple[str, str]:
    """Rewrite the entry's signature and bucket key with today's, and make issue.md and
    repro.py name them (:func:`inconsistencies`); ``(old key, new key)``."""
    sig = current_signature(entry)
    old = entry.meta["bucket"]
    if sig.key != old:
        meta = dict(entry.meta, bucket=sig.key, signature=sig.to_dict())
        (entry.dir / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        entry = Entry(entry.dir, meta, entry.case)
    align_headers(entry)
    return old, sig.key


_BUCKET_NOTE = re.compile(r"bucket ([0-9a-f]{16})(?:, found as bucket [0-9a-f]{16})?")


def inconsistencies(entry: Entry) -> list[str]:
    """Where issue.md or repro.py disagree with meta.json: the bucket named in issue.md's
    first line, the title of issue.md and the first line of repro.py's docstring."""
    out = []
    meta = entry.meta
    issue = (entry.dir / "issue.md").read_text().splitlines()
    script = (entry.dir / "repro.py").read_text().splitlines()
    m = _BUCKET_NOTE.search(issue[0]) if issue else None
    if m is None or m.group(1) != meta["bucket"]:
        out.append(f"issue.md names bucket {m.group(1) if m else None}, meta.json {meta['bucket']}")
    heading = next((ln[2:].strip() for ln in issue if ln.startswith("# ")), "")
    if heading != meta["title"]:
        out.append(f"issue.md is titled {heading!r}, meta.json {meta['title']!r}")
    doc = next((ln[3:].strip() for ln in script if ln.startswith('"""')), "")
    if doc != meta["title"]:
        out.append(f"repro.py is titled {doc!r}, meta.json {meta['title']!r}")
    named = next((ln.split()[1].rstrip(",") for ln in script if ln.startswith("Bucket ")), None)
    if named is not None and named != meta["bucket"]:
        out.append(f"repro.py names bucket {named}, meta.json {meta['bucket']}")
    return out


def align_headers(entry: Entry) -> None:
    """Make issue.md's first line name meta.json's bucket (and the bucket it was found as,
    when they differ), and repro.py's docstring carry meta.json's title.  The script's
    behaviour is untouched (its first docstring line changes at most)."""
    meta = entry.meta
    issue_path, script_path = entry.dir / "issue.md", entry.dir / "repro.py"
    issue = issue_path.read_text().split("\n")
    if issue and (m := _BUCKET_NOTE.search(issue[0])) and m.group(1) != meta["bucket"]:
        issue[0] = issue[0][:m.start()] + f"bucket {meta['bucket']}, found as bucket {m.group(1)}" \
            + issue[0][m.end():]
        issue_path.write_text("\n".join(issue))
    script = script_path.read_text().split("\n")
    before = list(script)
    i = next((i for i, ln in enumerate(script) if ln.startswith('"""')), None)
    if i is not None and script[i][3:].strip() != meta["title"]:
        script[i] = '"""' + meta["title"]
    j = next((j for j, ln in enumerate(script) if ln.startswith("Bucket ")), None)
    if j is not None and (named := script[j].split()[1].rstrip(",")) != meta["bucket"]:
        script[j] = f"Bucket  {meta['bucket']}, found as bucket {named}"
    if script != before:
        script_path.write_text("\n".join(script))


def _signature_of(src: Path, case) -> Any:
    """The case's bucket signature, from running it again (in a worker process) — or, for a
    failure while a schedule was drawn, from its recorded verdict after its script
    reproduced it."""

    if case.origin.get("failing_call") and case.origin.get("failing_verdict"):
        run = run_script(src / "repro.py")
        if not run.reproduced:
            raise CorpusError(f"{src}/repro.py exited {run.status}: it does not reproduce")
        return signature(None, Verdict.from_dict(case.origin["failing_verdict"]))
    verdict = run_isolated(case, 300.0)
    sig = signature(case.to_dict(), verdict)
    if sig is None or not sig.is_finding:
        raise CorpusError(f"{src}/case.json no longer fails ({verdict.line()}): not added")
    return sig


def _issue_title(path: Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""
