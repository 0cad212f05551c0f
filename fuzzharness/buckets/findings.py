"""A campaign's findings, most severe first: the one query every consumer renders.

The terminal summary (``--json``), ``fuzzharness status`` and the report's first section all
read :func:`campaign_findings` — one row per TVM finding bucket of a campaign database, with
its severity, whether the known-bugs file knows it, and where its repro is (or why there is
none).  Keeping this in one place is what lets later grouping — buckets merged into *root
causes* after minimization — reach every view by changing this function alone.

Severity (the order in which a maintainer should look, and in which buckets are worth
minimizing first):

=========  ======  ==============================================================================
``high``   1       a silent wrong answer: ``wrong_result``, ``nan_inf``, a ``crash`` while the
                   kernel ran (an out-of-bounds access, a heap corruption)
``medium`` 2       ``timeout``; a ``crash`` while compiling
``low``    3       ``compile_error`` (TVM refuses loudly)
``triage`` 4       ``reference_mismatch``: TVM's unscheduled build disagrees with the
                   reference — TVM's default lowering or this harness's reference is wrong
=========  ======  ==============================================================================

An ``order_preserving_divergence`` is a *note*, not a finding (:data:`fuzzharness.core.verdict.NOTES`):
it is not listed here.  Within a severity: new before known, then by count.  The repro path is relative to the
campaign directory (``repros/<bucket>``), so it stays valid when the directory moves.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

from fuzzharness import store
from fuzzharness.buckets.known_bugs import KnownBugs, Match
from fuzzharness.buckets.root_causes import RootCause
from fuzzharness.buckets.signatures import Signature
from fuzzharness.core.verdict import Status

REPROS_DIR = "repros"
SEVERITIES = ("high", "medium", "low", "triage")


def severity(symptom: str, stage: str) -> str:
    """The severity label of a finding (see the module docstring)."""
    if symptom in (Status.WRONG_RESULT.value, Status.NAN_INF.value):
        return "high"
    if symptom == Status.CRASH.value:
        return "high" if stage == "run" else "medium"
    if symptom == Status.TIMEOUT.value:
        return "medium"
    if symptom == Status.REFERENCE_MISMATCH.value:
        return "triage"
    return "low"


@dataclasses.dataclass
class Finding:
    key: str
    title: str
    symptom: str
    stage: str
    severity: str
    count: int
    first_seen: float
    last_seen: float
    example_idx: int
    known_id: str = ""  # the known-bugs entry that matches ("": a new finding)
    known_link: str = ""  # its upstream link, or its status ("not yet reported")
    repro: str = ""  # the repro directory, relative to the campaign directory ("": none)
    repro_status: str = ""  # reproduced | attached | not reproduced | not minimized
    repro_note: str = ""  # why not, in a few words
    known_sure: bool = True  # False: a raw match the minimized case did not confirm ("probably")
    root_cause: str = ""  # the verified repro's root-cause key (buckets.root_causes)
    baseline: str = ""  # run --baseline: regression | pre-existing | not comparable ("": not run)

    @property
    def bug(self) -> str:
        """The bug this bucket is, as nights are compared: its known-bugs entry, else its
        root cause, else the bucket itself."""
        return f"known:{self.known_id}" if self.known_id else self.root_cause or self.key

    @property
    def is_new(self) -> bool:
        return not self.known_id

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"new": self.is_new, "bug": self.bug}


def campaign_findings(conn: sqlite3.Connection, known: KnownBugs, root: str | Path,
                      *, tvm_version: str | None = None) -> list[Finding]:
    """The findings of the campaign database behind ``conn`` (read-only is enough), sorted:
    severity, new first, count.  ``root``: the campaign directory (repro paths are read
    there and given relative to it)."""
    root = Path(root)
    buckets = store.bucket_rows(conn)
    if not buckets:
        return []
    if tvm_version is None:
        tvm_version = ((store.campaign_row(conn) or {}).get("versions") or {}).get("tvm")
    repros = store.repro_rows(conn)
    # a bucket attached to a root cause unminimized is what that root cause's repro is
    via = store.attachment_sources(conn)
    minimize_off = _minimization_off(store.last_session_argv(conn))
    base = store.baseline_outcomes(conn)
    out = []
    for b in buckets:
        key, symptom, stage, title = b["key"], b["symptom"], b["stage"], b["title"]
        first, last, n, example = b["first_seen"], b["last_seen"], b["count"], b["example_idx"]
        if not Status(symptom).is_finding:
            continue
        sig = Signature.from_dict(b["signature"])
        m, rc_key, _ = known_of_bucket(known, sig, repro_for(key, repros, via), tvm_version)
        bug = m.bug if m is not None else None
        f = Finding(key, title, symptom, stage, severity(symptom, stage), int(n), float(first),
                    float(last), int(example), known_id=bug.id if bug else "",
                    known_link=(bug.link or bug.status) if bug else "",
                    known_sure=m is None or m.confirmed, root_cause=rc_key,
                    baseline=base.get(key, ""))
        _repro_of(f, repros.get(key), root, minimize_off)
        if key in via and f.repro_status == "not minimized" and via[key] in repros:
            f.repro, f.repro_status = f"{REPROS_DIR}/{via[key]}", "attached"
            f.repro_note = (f"not minimized: its raw case has the mechanism of bucket "
                            f"{via[key]}'s verified repro (one root cause)")
        out.append(f)
    # regressions against a baseline first: what a change did
    out.sort(key=lambda f: (f.baseline != "regression", SEVERITIES.index(f.severity),
                            not f.is_new, -f.count, f.example_idx))
    return out


def repro_for(key: str, repros: dict[str, dict[str, Any]], via: dict[str, str]
              ) -> dict[str, Any] | None:
    """The repro that speaks for bucket ``key``: its own verified one, else — a bucket
    attached unminimized (``via``: bucket → the bucket whose repro it was attached to) —
    that root cause's."""
    rec = repros.get(key)
    if key in via and not (rec and rec.get("reproduced")):
        rec = repros.get(via[key])
    return rec


def known_of_bucket(known: KnownBugs, sig: Signature, rec: dict[str, Any] | None,
                    tvm_version: str | None) -> tuple[Match | None, str, bool]:
    """(the known bug, the root-cause key, whether a minimized case decided) of a bucket: by
    its verified repro's root cause when it has one (certain either way), else by its raw
    signature (maybe only probably).  The one rule behind the summary, ``--json``,
    ``status`` and the report (``rec``'s JSON fields decoded or not)."""
    if rec and rec.get("reproduced") and rec.get("root_cause_fields") and rec.get("signature"):
        rc = RootCause.from_dict(_decoded(rec["root_cause_fields"]))
        msig = Signature.from_dict(_decoded(rec["signature"]))
        return known.classify(msig, tvm_version, rc), rec.get("root_cause") or "", True
    return known.classify(sig, tvm_version), "", False


def _decoded(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _minimization_off(argv: list[str]) -> bool:
    """Did the campaign's last session (its ``argv``) run with minimization switched off?"""
    budgets = [b for a, b in zip(argv, argv[1:] + [""], strict=True) if a == "--minimize-budget"]
    budgets += [a.split("=", 1)[1] for a in argv if a.startswith("--minimize-budget=")]
    return "--no-minimize" in argv or any(_is_zero(b) for b in budgets)


def _is_zero(text: str) -> bool:
    try:
        return float(text) == 0
    except ValueError:
        return False


def _repro_of(f: Finding, rec: dict[str, Any] | None, root: Path, minimize_off: bool) -> None:
    folder = root / REPROS_DIR / f.key
    if rec is not None:  # (an attempt that wrote no script has no folder to point at)
        f.repro = f"{REPROS_DIR}/{f.key}" if folder.is_dir() or rec.get("reproduced") else ""
        if rec.get("reproduced"):
            f.repro_status = "reproduced"
        else:
            f.repro_status = "not reproduced"
            lines = [ln for ln in str(rec.get("output") or "").splitlines() if ln.strip()]
            code = rec.get("exit_code")
            notes = _decoded(rec.get("notes")) or []
            if code is None and notes:  # no script ran: what the minimizer said
                f.repro_note = str(notes[0])[:160]
                return
            f.repro_note = (f"the script exited {code}" if code is not None else "no exit status")
            if lines:
                f.repro_note += f": {lines[-1].strip()[:120]}"
        return
    if folder.is_dir():
        f.repro, f.repro_status = f"{REPROS_DIR}/{f.key}", "not recorded"
        f.repro_note = "a repro folder without a record in the database"
        return
    f.repro_status = "not minimized"
    if not f.is_new:
        f.repro_note = "a known bug (minimize --all to write one)"
    elif minimize_off:
        f.repro_note = "minimization was off (--no-minimize, or a budget of 0)"
    else:
        f.repro_note = "not reached within the time cap, or interrupted"
