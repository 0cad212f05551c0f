"""The queries behind :mod:`fuzzharness.store` (see its docstring for the contract)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from fuzzharness.store.schema import (
    CONFIRMATION_FIELDS,
    JSON_REPRO_FIELDS,
    REPRO_FIELDS,
    RESULT_FIELDS,
)

#: the coverage table (fuzzharness.campaign.coverage computes its rows)
COVERAGE_TABLE = """
CREATE TABLE IF NOT EXISTS coverage(
    axis TEXT NOT NULL,
    value TEXT NOT NULL,
    drawn INTEGER NOT NULL,
    proposed INTEGER NOT NULL,
    accepted INTEGER NOT NULL,
    compiled INTEGER NOT NULL,
    verdict INTEGER NOT NULL,
    PRIMARY KEY (axis, value)
)
"""
COVERAGE_COLUMNS = ("drawn", "proposed", "accepted", "compiled", "verdict")
#: columns of ``results`` a reader may ask for (never interpolated from anything else)
RESULT_COLUMNS = frozenset(RESULT_FIELDS)


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    if table not in tables(conn):
        return []
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables(conn) else {}


def campaign_row(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """The campaign's seed, settings, versions and creation time (JSON decoded), or None."""
    if "campaign" not in tables(conn):
        return None
    row = conn.execute("SELECT seed, settings, versions, created FROM campaign").fetchone()
    if row is None:
        return None
    seed, settings, versions, created = row
    return {"seed": seed, "settings": json.loads(settings or "{}"),
            "versions": json.loads(versions or "{}"), "created": created}


def session_rows(conn: sqlite3.Connection) -> list[tuple[int, float, float | None, int]]:
    """(id, started, ended, cases) per session, oldest first."""
    if "sessions" not in tables(conn):
        return []
    return [tuple(r) for r in conn.execute(
        "SELECT id, started, ended, cases FROM sessions ORDER BY id")]


def last_session_argv(conn: sqlite3.Connection) -> list[str]:
    if "sessions" not in tables(conn):
        return []
    row = conn.execute("SELECT argv FROM sessions ORDER BY id DESC LIMIT 1").fetchone()
    return [str(a) for a in (json.loads(row[0]) if row and row[0] else [])]


def last_finished(conn: sqlite3.Connection) -> float | None:
    return conn.execute("SELECT MAX(finished) FROM results").fetchone()[0]


def count_results(conn: sqlite3.Connection, *, status: str | None = None,
                  finished_since: float | None = None, below: int | None = None) -> int:
    """Stored results (of that status, finished since, with an index below: when given)."""
    where: list[str] = []
    params: list[Any] = []
    if below is not None:
        where.append("idx < ?")
        params.append(below)
    if status is not None:
        where.append("status = ?")
        params.append(status)
    if finished_since is not None:
        where.append("finished >= ?")
        params.append(finished_since)
    sql = "SELECT COUNT(*) FROM results" + (" WHERE " + " AND ".join(where) if where else "")
    return conn.execute(sql, params).fetchone()[0]


def result_rows(conn: sqlite3.Connection, cols: Sequence[str]) -> Iterator[tuple]:
    """The rows of ``results`` in index order, the named columns only."""
    unknown = set(cols) - RESULT_COLUMNS
    if unknown:
        raise ValueError(f"not a column of results: {sorted(unknown)}")
    return conn.execute(f"SELECT {', '.join(cols)} FROM results ORDER BY idx")


def bucket_rows(conn: sqlite3.Connection, *, most_frequent_first: bool = False) -> list[dict[str, Any]]:
    """Every bucket: key, symptom, stage, title, signature (decoded), first_seen, last_seen,
    count, example_idx, example_case_id (in table order, or most frequent first)."""
    if "buckets" not in tables(conn):
        return []
    case_id = "example_case_id" if "example_case_id" in columns(conn, "buckets") else "NULL"
    order = " ORDER BY count DESC, first_seen" if most_frequent_first else ""
    out = []
    for key, symptom, stage, title, sig, first, last, n, example, example_id in conn.execute(
            "SELECT key, symptom, stage, title, signature, first_seen, last_seen, count, "
            f"example_idx, {case_id} FROM buckets{order}"):
        out.append({"key": key, "symptom": symptom, "stage": stage, "title": title,
                    "signature": json.loads(sig) if sig else {}, "first_seen": first,
                    "last_seen": last, "count": n, "example_idx": example,
                    "example_case_id": example_id})
    return out


def repro_rows(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """The repro record of each bucket that has one (the columns this database has)."""
    have = columns(conn, "repros")
    want = [c for c in ("bucket", "path", "reproduced", "exit_code", "output", "notes", "title",
                        "signature", "root_cause", "root_cause_fields", "case_json", "created")
            if c in have]
    if "bucket" not in want or "reproduced" not in want:
        return {}
    return {r[0]: dict(zip(want, r, strict=True))
            for r in conn.execute(f"SELECT {', '.join(want)} FROM repros")}


def confirmation_count(conn: sqlite3.Connection) -> int:
    """Failures re-run alone (``confirmations``)."""
    if "confirmations" not in tables(conn):
        return 0
    return conn.execute("SELECT COUNT(*) FROM confirmations").fetchone()[0]


def attachment_sources(conn: sqlite3.Connection) -> dict[str, str]:
    """bucket → the bucket whose verified repro it was attached to (unminimized)."""
    return {bucket: a["via"] for bucket, a in attachment_rows(conn).items()}


def baseline_outcomes(conn: sqlite3.Connection) -> dict[str, str]:
    """bucket → its outcome against a baseline TVM (``regression``, ``pre-existing``, ...)."""
    return {bucket: b["outcome"] for bucket, b in baseline_rows(conn).items()}


def coverage_rows(conn: sqlite3.Connection) -> list[tuple]:
    """(axis, value, drawn, proposed, accepted, compiled, verdict), sorted; [] before the
    coverage table existed."""
    if "coverage" not in tables(conn):
        return []
    return [tuple(r) for r in conn.execute(
        "SELECT axis, value, drawn, proposed, accepted, compiled, verdict FROM coverage "
        "ORDER BY axis, value")]


def write_coverage(conn: sqlite3.Connection, rows: Sequence[tuple]) -> None:
    """Replace the coverage table by ``rows`` (the one table a reader writes: it is derived
    from ``results`` and recomputed at the end of every session)."""
    with conn:
        conn.execute(COVERAGE_TABLE)
        conn.execute("DELETE FROM coverage")
        conn.executemany("INSERT INTO coverage VALUES (?, ?, ?, ?, ?, ?, ?)", rows)


# -- what the writer (fuzzharness.campaign.db.ResultsDB) reads back ------------------------------
def elapsed_before(conn: sqlite3.Connection) -> float:
    """Wall time of all sessions so far (a session that never ended: until its last result)."""
    row = conn.execute(
        "SELECT COALESCE(SUM(COALESCE(ended, (SELECT MAX(finished) FROM results "
        "WHERE session = sessions.id), started) - started), 0) FROM sessions").fetchone()
    return float(row[0] or 0.0)


def _case_rows(rows) -> list[dict[str, Any]]:
    return [{"idx": i, "case": json.loads(c) if c else None, "verdict": json.loads(v)}
            for i, c, v in rows]


def cases(conn: sqlite3.Connection, *, idx: int | None = None, case_id_prefix: str | None = None,
          first: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
    """Stored results as ``idx``, ``case``, ``verdict`` (decoded), by index: the one with
    index ``idx``, those whose case id starts with ``case_id_prefix``, or indices in
    [``first``, ``stop``)."""
    where: list[str] = []
    params: list[Any] = []
    for sql, value in (("idx = ?", idx), ("case_id LIKE ?", None if case_id_prefix is None
                                           else case_id_prefix + "%"),
                       ("idx >= ?", first), ("idx < ?", stop)):
        if value is not None:
            where.append(sql)
            params.append(value)
    sql = "SELECT idx, case_json, verdict_json FROM results"
    sql += (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY idx"
    return _case_rows(conn.execute(sql, params))


def result_indices(conn: sqlite3.Connection) -> set[int]:
    return {r[0] for r in conn.execute("SELECT idx FROM results")}


def status_counts(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT status, COUNT(*) FROM results GROUP BY status"))


def result_bucket(conn: sqlite3.Connection, idx: int) -> tuple[str | None, str | None] | None:
    """(bucket, case_id) of result ``idx``; None when there is no such result."""
    row = conn.execute("SELECT bucket, case_id FROM results WHERE idx = ?", (idx,)).fetchone()
    return None if row is None else (row[0], row[1])


def with_confirmation(conn: sqlite3.Connection, outcome: str) -> list[dict[str, Any]]:
    """Results (idx, case, verdict, process, session) whose confirmation is ``outcome``."""
    rows = conn.execute("SELECT idx, case_json, verdict_json, process, session FROM results "
                        "WHERE confirmation = ? ORDER BY idx", (outcome,)).fetchall()
    return [{"idx": i, "case": json.loads(c) if c else None, "verdict": json.loads(v),
             "process": p, "session": s} for i, c, v, p, s in rows]


def predecessors(conn: sqlite3.Connection, idx: int, limit: int) -> list[dict[str, Any]]:
    """The (at most ``limit``) results the worker process of ``idx`` ran just before it, in
    the same session, oldest first."""
    row = conn.execute("SELECT process, session, finished FROM results WHERE idx = ?",
                       (idx,)).fetchone()
    if row is None or row[0] is None:
        return []
    process, session, finished = row
    rows = conn.execute(
        "SELECT idx, case_json, verdict_json FROM results WHERE process = ? AND "
        "session IS ? AND (finished < ? OR (finished = ? AND idx < ?)) AND idx != ? "
        "ORDER BY finished DESC, idx DESC LIMIT ?",
        (process, session, finished, finished, idx, idx, limit)).fetchall()
    return _case_rows(reversed(rows))


def confirmation(conn: sqlite3.Connection, idx: int, *, decode: bool = True) -> dict[str, Any] | None:
    """The ``confirmations`` row of result ``idx`` (JSON fields decoded unless ``decode`` is
    false), or None (also before the table existed)."""
    try:
        row = conn.execute(f"SELECT {', '.join(CONFIRMATION_FIELDS)} FROM confirmations "
                           "WHERE idx = ?", (idx,)).fetchone()
    except sqlite3.OperationalError:  # a read-only database older than schema 5
        return None
    if row is None:
        return None
    d = dict(zip(CONFIRMATION_FIELDS, row, strict=True))
    for key in ("campaign_verdict", "alone_verdict", "outputs", "search"):
        if decode and d[key]:
            d[key] = json.loads(d[key])
    return d


def confirmed_indices(conn: sqlite3.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT idx FROM confirmations ORDER BY idx")]


def bucket_counts(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT key, count FROM buckets"))


def bucket_memberships(conn: sqlite3.Connection) -> list[tuple[str, str | None, str | None, int | None]]:
    """Distinct (bucket, workload, dtype, session) of the results in a bucket."""
    return conn.execute("SELECT DISTINCT bucket, workload, dtype, session FROM results "
                        "WHERE bucket IS NOT NULL").fetchall()


def repro_records(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every stored repro, whole (:data:`REPRO_FIELDS`), by bucket key; JSON fields decoded,
    ``reproduced`` a bool."""
    out = []
    for row in conn.execute(f"SELECT {', '.join(REPRO_FIELDS)} FROM repros ORDER BY bucket"):
        d = dict(zip(REPRO_FIELDS, row, strict=True))
        for key in JSON_REPRO_FIELDS:
            if d[key]:
                d[key] = json.loads(d[key])
        d["reproduced"] = bool(d["reproduced"])
        out.append(d)
    return out


def attachment_rows(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Bucket → ``root_cause``, ``evidence``, ``via`` of each attached bucket."""
    if "attachments" not in tables(conn):
        return {}  # a database older than schema 6, opened read-only
    return {b: {"root_cause": rc, "evidence": ev, "via": via} for b, rc, ev, via in
            conn.execute("SELECT bucket, root_cause, evidence, via FROM attachments")}


def baseline_rows(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Bucket → ``baseline``, ``outcome``, ``status``, ``line`` (run --baseline)."""
    if "baseline" not in tables(conn):
        return {}  # a database older than schema 7, opened read-only
    return {b: {"baseline": bl, "outcome": o, "status": st, "line": ln or ""}
            for b, bl, o, st, ln in conn.execute(
                "SELECT bucket, baseline, outcome, status, line FROM baseline")}
