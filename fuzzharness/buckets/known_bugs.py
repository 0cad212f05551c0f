"""Known bugs: a TOML file of ``[[bug]]`` entries matched against bucket signatures.

**Known bugs** (:class:`KnownBugs`): a TOML file of ``[[bug]]`` entries, each with an upstream
link (or "not yet reported") and a ``[bug.match]`` table of patterns over signature fields;
a bucket whose signature matches an entry is *known*, anything else is *new*.  The packaged
file is ``fuzzharness/known_bugs.toml``; its header documents the format.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from fuzzharness.buckets.signatures import BUCKETED, Signature
from fuzzharness.core.verdict import Stage


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
