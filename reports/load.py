"""Read campaign databases into pandas frames — read-only, one or many (nightly history).

Every campaign directory holds ``results.sqlite`` (:mod:`fuzzharness.campaign.db`).  It is
opened with SQLite's ``mode=ro``: a report never writes, migrates or locks a database, so it
can run while the campaign is still going.  Older and newer schemas are read defensively:
missing tables or columns (``buckets`` before schema 2, ``coverage``, the minimizer's repro
records) leave their frames empty instead of failing.

Frames (each with a ``campaign`` column naming the directory it came from):

``results``    one row per case: idx, case_id, workload, dtype, target, status, stage,
               ratio, worst_error, elapsed, finished, worker, session, bucket, source
               (schedule source), primitives (tuple: the schedule primitives the case applied)
``buckets``    one row per (campaign, bucket): key, symptom, stage, title, count, first_seen,
               last_seen, example_idx, example_case_id, signature (dict)
``sessions``   one row per run/resume: id, started, ended, cases
``campaigns``  one row per directory: campaign, path, seed, created, versions, settings
``repros``     one row per written repro: campaign, bucket, path (``DIR/repros/<bucket>/``),
               reproduced (True/False/None when nothing recorded it)
``findings``   one row per TVM finding bucket of each campaign, most severe first:
               :class:`fuzzharness.buckets.findings.Finding` fields (severity, known bug,
               repro path relative to the campaign directory, repro status and why) — the
               same query ``fuzzharness status`` and ``run --json`` use
``coverage``   the stored coverage table (:mod:`fuzzharness.campaign.coverage`): axis, value,
               drawn, proposed, accepted, compiled, verdict

Databases are opened with :func:`fuzzharness.core.storage.connect_readonly`: a campaign in a
read-only directory (WAL files that cannot be created) is read all the same.
``census``     the feature census (coverage table, :mod:`fuzzharness.campaign.census_table`): target,
               feature, cases (feature ``""``: the target's lowered cases)
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd

from fuzzharness import store
from fuzzharness.buckets.findings import Finding, campaign_findings
from fuzzharness.buckets.known_bugs import KnownBugs
from fuzzharness.core.errors import UsageError
from fuzzharness.core.storage import connect_readonly
from fuzzharness.core.traces import trace_primitives

APPLICATION = "tvm-fuzzharness"
DB_NAME = "results.sqlite"


@dataclasses.dataclass
class Campaigns:
    results: pd.DataFrame
    buckets: pd.DataFrame
    sessions: pd.DataFrame
    campaigns: pd.DataFrame
    repros: pd.DataFrame
    findings: pd.DataFrame
    coverage: pd.DataFrame
    census: pd.DataFrame  # fuzzharness/campaign/census_table.py: per target, cases lowered / with a feature


def database_path(d: str | Path) -> Path:
    """The database of campaign directory ``d`` (or ``d`` itself when it is the file);
    :class:`UsageError` (one line) when there is none or it is not a fuzzharness database."""
    p = Path(d)
    db = p / DB_NAME if p.is_dir() else p
    if not p.exists():
        raise UsageError(f"{d}: no such directory")
    if not db.is_file():
        raise UsageError(f"{d}: not a campaign directory (no {DB_NAME})")
    try:
        with open(db, "rb") as f:
            if f.read(16) != b"SQLite format 3\x00":
                raise UsageError(f"{db}: not a SQLite database")
    except OSError as e:
        raise UsageError(f"{db}: cannot read ({e.strerror})") from None
    return db


def _connect(db: Path) -> sqlite3.Connection:
    try:
        conn = connect_readonly(db)
    except sqlite3.DatabaseError as e:
        raise UsageError(f"{db}: unreadable database ({e})") from None
    try:
        tables = store.tables(conn)
        if "meta" not in tables or "results" not in tables:
            raise UsageError(f"{db}: not a fuzzharness campaign database")
        if store.meta(conn).get("application") != APPLICATION:
            raise UsageError(f"{db}: not a fuzzharness campaign database")
    except sqlite3.DatabaseError as e:
        conn.close()
        raise UsageError(f"{db}: unreadable database ({e})") from None
    except UsageError:
        conn.close()
        raise
    return conn


def load_campaigns(dirs: list[str | Path], known_bugs: KnownBugs | None = None) -> Campaigns:
    """Load every directory (order kept); :class:`UsageError` names the first bad one.
    ``known_bugs``: what the findings are matched against (default: the packaged file)."""
    if not dirs:
        raise UsageError("no campaign directory given")
    known = known_bugs if known_bugs is not None else KnownBugs.load()
    labels = _labels([Path(d) for d in dirs])
    parts: dict[str, list[pd.DataFrame]] = {k: [] for k in _EMPTY}
    for d, label in zip(dirs, labels, strict=True):
        db = database_path(d)
        conn = _connect(db)
        try:
            one = _load_one(conn, label, db.parent)
            one["findings"] = _findings(conn, known, label, db.parent)
            one["coverage"] = _coverage(conn, label)
        except sqlite3.DatabaseError as e:
            raise UsageError(f"{db}: unreadable database ({e})") from None
        finally:
            conn.close()
        for k, frame in one.items():
            parts[k].append(frame)
    return Campaigns(**{k: _concat(v, _EMPTY[k]) for k, v in parts.items()})


_EMPTY = {
    "results": ["campaign", "idx", "case_id", "workload", "dtype", "target", "status", "stage",
                "ratio", "worst_error", "elapsed", "finished", "worker", "session", "bucket",
                "source", "primitives"],
    "buckets": ["campaign", "key", "symptom", "stage", "title", "count", "first_seen",
                "last_seen", "example_idx", "example_case_id", "signature"],
    "sessions": ["campaign", "id", "started", "ended", "cases"],
    "campaigns": ["campaign", "path", "seed", "created", "versions", "settings", "cases"],
    "repros": ["campaign", "bucket", "path", "reproduced", "root_cause", "issue_title"],
    "findings": ["campaign", "root", *(f.name for f in dataclasses.fields(Finding)), "new", "bug"],
    "coverage": ["campaign", "axis", "value", "drawn", "proposed", "accepted", "compiled",
                 "verdict"],
    "census": ["campaign", "target", "feature", "cases"],
}


def _findings(conn: sqlite3.Connection, known: KnownBugs, label: str, root: Path) -> pd.DataFrame:
    rows = [{"campaign": label, "root": str(root), **f.to_dict()}
            for f in campaign_findings(conn, known, root)]
    return pd.DataFrame(rows, columns=_EMPTY["findings"])


def _coverage(conn: sqlite3.Connection, label: str) -> pd.DataFrame:
    rows = store.coverage_rows(conn)
    if not rows:
        return pd.DataFrame(columns=_EMPTY["coverage"])
    frame = pd.DataFrame(rows, columns=_EMPTY["coverage"][1:])
    frame.insert(0, "campaign", label)
    return frame


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    return pd.concat(frames, ignore_index=True)


def _labels(paths: list[Path]) -> list[str]:
    """Short unique names: the directory names, disambiguated by their parents if needed."""
    names = [p.resolve().name if p.is_dir() else p.resolve().parent.name for p in paths]
    if len(set(names)) == len(names):
        return names
    return [str(p) for p in paths]


def _load_one(conn: sqlite3.Connection, label: str, root: Path) -> dict[str, pd.DataFrame]:

    cols = set(store.columns(conn, "results"))
    want = [c for c in _EMPTY["results"][1:] if c in cols and c not in ("source", "primitives")]
    rows = store.result_rows(conn, [*want, "case_json"]).fetchall()
    records = []
    for row in rows:
        rec = dict(zip(want, row[:-1], strict=True))
        case = json.loads(row[-1]) if row[-1] else {}
        rec["source"] = (case.get("schedule") or {}).get("source")
        # a case that failed while its schedule was drawn is not stored: no primitives known
        rec["primitives"] = case_primitives(case, trace_primitives) if case else ()
        records.append(rec)
    results = pd.DataFrame.from_records(records, columns=[c for c in _EMPTY["results"][1:]
                                                          if c in want or c in ("source", "primitives")])
    for c in _EMPTY["results"][1:]:
        if c not in results:
            results[c] = None
    results.insert(0, "campaign", label)

    buckets = pd.DataFrame(columns=_EMPTY["buckets"])
    if rows_b := store.bucket_rows(conn):
        buckets = pd.DataFrame(rows_b, columns=_EMPTY["buckets"][1:])
        buckets.insert(0, "campaign", label)

    sessions = pd.DataFrame(columns=_EMPTY["sessions"])
    if rows_s := store.session_rows(conn):
        sessions = pd.DataFrame(rows_s, columns=_EMPTY["sessions"][1:])
        sessions.insert(0, "campaign", label)

    info: dict[str, Any] = {"campaign": label, "path": str(root), "seed": None, "created": None,
                            "versions": {}, "settings": {}, "cases": len(results)}
    if (row := store.campaign_row(conn)) is not None:
        info.update(row)
    campaigns = pd.DataFrame([info])
    return {"results": results, "buckets": buckets, "sessions": sessions,
            "campaigns": campaigns, "repros": _repros(conn, label, root),
            "census": _census(conn, label)}


def _census(conn: sqlite3.Connection, label: str) -> pd.DataFrame:
    """The feature census from the coverage table: one row per (target, feature) with the
    cases that had it, and one per target with feature ``""`` and its lowered cases."""
    rows = []
    for axis, value, drawn, _, accepted, _, _ in store.coverage_rows(conn):
        if axis == "census":
            rows.append({"campaign": label, "target": value, "feature": "", "cases": accepted})
        elif axis == "feature":
            target, _, feature = value.partition(" ")
            rows.append({"campaign": label, "target": target, "feature": feature,
                         "cases": drawn})
    return pd.DataFrame(rows, columns=_EMPTY["census"])


def case_primitives(case: dict[str, Any], trace_primitives) -> tuple[str, ...]:
    """The schedule primitives a case applied: the generator's accepted steps (the names
    of :mod:`fuzzharness.generators.schedules`), else — GPU styles, no steps — the trace's instructions."""
    steps = (case.get("origin") or {}).get("steps") or []
    names = {s.get("primitive") for s in steps if s.get("outcome") == "accepted"}
    names.discard(None)
    if not names and not steps:
        names = set(trace_primitives((case.get("schedule") or {}).get("trace")))
    return tuple(sorted(names))


def _repros(conn: sqlite3.Connection, label: str, root: Path) -> pd.DataFrame:
    """Repros written under ``DIR/repros/<bucket>/`` (or where the repro record's ``path``
    says) and, where it is recorded, whether each one reproduced in a fresh process."""
    recorded = {str(k): {"reproduced": _truthy(r.get("reproduced")), "path": r.get("path"),
                         "root_cause": r.get("root_cause"), "issue_title": r.get("title")}
                for k, r in store.repro_rows(conn).items()}
    rows = []
    repro_root = root / "repros"
    found = {d.name: d for d in sorted(repro_root.iterdir()) if d.is_dir()} if repro_root.is_dir() else {}
    for key in sorted(set(found) | set(recorded)):
        rec = recorded.get(key, {})
        path = found.get(key)
        if path is None and rec.get("path") and Path(rec["path"]).is_dir():
            path = Path(rec["path"])
        rows.append({"campaign": label, "bucket": key, "path": str(path) if path else None,
                     "reproduced": rec.get("reproduced"), "root_cause": rec.get("root_cause"),
                     "issue_title": rec.get("issue_title")})
    return pd.DataFrame(rows, columns=_EMPTY["repros"])


def _truthy(v: Any) -> bool | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "reproduces", "reproduced", "confirmed")
    return bool(v)
