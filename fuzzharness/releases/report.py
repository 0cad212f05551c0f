"""Where the releases' verdicts are written: issue.md, corpus meta.json, corpus/RELEASES.md.

* ``issue.md`` (a repro directory or corpus entry) gets one bullet in its "Environment"
  section — ``- Releases (…): present in 0.25.0.post1 / 0.26.0 / 0.27.0.post1 → introduced in
  0.25.0.post1 or earlier`` — replaced, not repeated, when run again;
* a corpus entry's ``meta.json`` gets ``"releases": {version: "reproduces" | "fixed" |
  "other", ...}`` (the state of :func:`fuzzharness.releases.check.introduced`);
* ``corpus/RELEASES.md`` is the table of every entry × release, regenerated from the
  ``meta.json`` files (so running one entry again keeps the others' columns).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from pathlib import Path

from fuzzharness.releases.check import Outcome, state_of, summarize

BULLET = "- Releases ("
TABLE = "RELEASES.md"


def issue_line(outcomes: Sequence[Outcome]) -> str:
    today = datetime.date.today().isoformat()
    return f"{BULLET}`fuzzharness releases`, {today}): {summarize(outcomes)}"


def update_issue(path: Path, outcomes: Sequence[Outcome]) -> bool:
    """Put the releases bullet into ``path``'s Environment section; False when the file has
    no such section (it is left alone)."""
    lines = path.read_text().splitlines()
    lines = [ln for ln in lines if not ln.startswith(BULLET)]
    try:
        start = lines.index("### Environment")
    except ValueError:
        return False
    end = start + 1
    while end < len(lines) and not lines[end].startswith("### "):
        end += 1
    last = max((i for i in range(start + 1, end) if lines[i].startswith("- ")), default=start)
    lines.insert(last + 1, issue_line(outcomes))
    path.write_text("\n".join(lines) + "\n")
    return True


def update_meta(path: Path, outcomes: Sequence[Outcome]) -> None:
    meta = json.loads(path.read_text())
    meta["releases"] = {o.release: state_of(o) for o in outcomes}
    if any(o.digest for o in outcomes):  # the case's output bits through the harness
        meta["release_digests"] = {o.release: o.digest for o in outcomes}
    path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")


def write_table(corpus: Path, releases: Sequence[str]) -> Path:
    """``corpus/RELEASES.md`` from every entry's ``meta.json`` (see the module docstring)."""
    from fuzzharness.repro import corpus as corpus_mod

    today = datetime.date.today().isoformat()
    rows = []
    for e in corpus_mod.entries(corpus):
        states = e.meta.get("releases") or {}
        rows.append([f"`{e.name}`", *(states.get(r, "—") for r in releases),
                     _bits(e.meta.get("release_digests") or {}, releases),
                     e.meta.get("expected", "")])
    header = ["entry", *releases, "output bits", "expected"]
    out = [
        "# Corpus entries on each TVM release",
        "",
        f"Written by `fuzzharness releases --corpus` ({today}): each entry's `repro.py` run "
        "with `python -I` in an environment of that release (`fuzzharness/releases/check.py`).",
        "`reproduces`: exit 1; `fixed`: exit 0 (a correct result, or the schedule refused "
        "with a `ScheduleError`); `other`: exit 2 or no exit (the release cannot run the "
        "script: e.g. a primitive it lacks); `—`: not run.  *Output bits*: the entry's "
        "case run through the harness on each release — the same on all, or which differ "
        "(no output: it fails before it runs).",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]
    path = corpus / TABLE
    path.write_text("\n".join(out))
    return path


def _bits(digests: dict[str, str | None], releases: Sequence[str]) -> str:
    ran = {r: digests[r] for r in releases if digests.get(r)}
    if not ran:
        return "—"
    if len(set(ran.values())) == 1:
        return "same" if len(ran) == len(releases) else "same where it ran"
    groups: dict[str, list[str]] = {}
    for r, d in ran.items():
        groups.setdefault(d, []).append(r)
    return "differ: " + " vs ".join("/".join(g) for g in groups.values())
