"""The queries behind :mod:`fuzzharness.store` (see its docstring for the contract)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

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
RESULT_COLUMNS = frozenset({"idx", "case_id", "workload", "dtype", "target", "status", "stage",
                            "ratio", "worst_error", "digest", "elapsed", "finished", "worker",
                            "session", "case_json", "verdict_json", "bucket", "process",
                            "confirmation"})


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
                  finished_since: float | None = None) -> int:
    where, params = [], []
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


def bucket_rows(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every bucket: key, symptom, stage, title, signature (decoded), first_seen, last_seen,
    count, example_idx, example_case_id."""
    if "buckets" not in tables(conn):
        return []
    case_id = "example_case_id" if "example_case_id" in columns(conn, "buckets") else "NULL"
    out = []
    for key, symptom, stage, title, sig, first, last, n, example, example_id in conn.execute(
            "SELECT key, symptom, stage, title, signature, first_seen, last_seen, count, "
            f"example_idx, {case_id} FROM buckets"):
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
    if "attachments" not in tables(conn):
        return {}
    return dict(conn.execute("SELECT bucket, via FROM attachments"))


def baseline_outcomes(conn: sqlite3.Connection) -> dict[str, str]:
    """bucket → its outcome against a baseline TVM (``regression``, ``pre-existing``, ...)."""
    if "baseline" not in tables(conn):
        return {}
    return dict(conn.execute("SELECT bucket, outcome FROM baseline"))


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
