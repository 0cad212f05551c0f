"""Every statement that changes a campaign database (its readers are in ``readers.py``).

The functions take an open connection and plain values (JSON already encoded where a column
holds JSON) and do not commit: the caller — :class:`fuzzharness.campaign.db.ResultsDB`, which
knows what a verdict, a bucket signature or a root cause is — groups them into one
transaction (``with conn:``), so that e.g. a result and its bucket's count change together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from fuzzharness.store.schema import REPRO_FIELDS, RESULT_FIELDS


def insert_campaign(conn: sqlite3.Connection, seed: int, settings: str, versions: str,
                    created: float) -> None:
    conn.execute("INSERT INTO campaign VALUES (1, ?, ?, ?, ?)", (seed, settings, versions, created))


def insert_session(conn: sqlite3.Connection, started: float, argv: str) -> int:
    cur = conn.execute("INSERT INTO sessions(started, argv) VALUES (?, ?)", (started, argv))
    return int(cur.lastrowid)


def end_session(conn: sqlite3.Connection, session: int, ended: float, cases: int) -> None:
    conn.execute("UPDATE sessions SET ended = ?, cases = ? WHERE id = ?", (ended, cases, session))


def insert_result(conn: sqlite3.Connection, row: Mapping[str, Any]) -> bool:
    """Store one ``results`` row (``row`` has :data:`RESULT_FIELDS`); False when its index
    is already stored (never overwritten)."""
    cur = conn.execute(f"INSERT OR IGNORE INTO results VALUES ({','.join('?' * len(RESULT_FIELDS))})",
                       [row[f] for f in RESULT_FIELDS])
    return cur.rowcount == 1


def settle_result(conn: sqlite3.Connection, idx: int, *, status: str, stage: str,
                  ratio: float | None, worst_error: float | None, digest: str | None,
                  verdict_json: str, bucket: str | None, confirmation: str) -> None:
    """A stored result's verdict, bucket and confirmation after it was re-run alone."""
    conn.execute("UPDATE results SET status = ?, stage = ?, ratio = ?, worst_error = ?, "
                 "digest = ?, verdict_json = ?, bucket = ?, confirmation = ? WHERE idx = ?",
                 (status, stage, ratio, worst_error, digest, verdict_json, bucket, confirmation,
                  idx))


def set_result_bucket(conn: sqlite3.Connection, idx: int, bucket: str | None) -> None:
    conn.execute("UPDATE results SET bucket = ? WHERE idx = ?", (bucket, idx))


def count_in_bucket(conn: sqlite3.Connection, key: str, *, symptom: str, stage: str, title: str,
                    signature: str, idx: int, case_id: str | None, when: float) -> None:
    """One more result in bucket ``key`` (created on its first result); its example is the
    lowest index in it, its first/last seen the extremes of ``when``."""
    conn.execute(
        "INSERT INTO buckets VALUES (?,?,?,?,?,?,?,1,?,?) ON CONFLICT(key) DO UPDATE SET "
        "count = count + 1, last_seen = MAX(last_seen, excluded.last_seen), "
        "first_seen = MIN(first_seen, excluded.first_seen), "
        "example_idx = CASE WHEN excluded.example_idx < example_idx "
        "THEN excluded.example_idx ELSE example_idx END, "
        "example_case_id = CASE WHEN excluded.example_idx < example_idx "
        "THEN excluded.example_case_id ELSE example_case_id END",
        (key, symptom, stage, title, signature, when, when, idx, case_id))


def uncount_in_bucket(conn: sqlite3.Connection, key: str) -> None:
    """One result fewer in bucket ``key`` (gone when empty; its example re-chosen from the
    results that still name it)."""
    conn.execute("UPDATE buckets SET count = count - 1 WHERE key = ?", (key,))
    conn.execute("DELETE FROM buckets WHERE key = ? AND count <= 0", (key,))
    conn.execute(
        "UPDATE buckets SET example_idx = (SELECT MIN(idx) FROM results WHERE bucket = ?), "
        "example_case_id = (SELECT case_id FROM results WHERE bucket = ? ORDER BY idx "
        "LIMIT 1) WHERE key = ?", (key, key, key))


def forget_buckets(conn: sqlite3.Connection) -> None:
    """No bucket, no result in one (before they are recomputed from the verdicts)."""
    conn.execute("DELETE FROM buckets")
    conn.execute("UPDATE results SET bucket = NULL")


def put_confirmation(conn: sqlite3.Connection, values: Sequence[Any]) -> None:
    """Insert or replace one ``confirmations`` row (:data:`CONFIRMATION_FIELDS` order)."""
    conn.execute("INSERT OR REPLACE INTO confirmations VALUES (?,?,?,?,?,?,?,?)", tuple(values))


def set_search(conn: sqlite3.Connection, idx: int, culprit: int | None, search: str) -> None:
    conn.execute("UPDATE confirmations SET culprit = ?, search = ? WHERE idx = ?",
                 (culprit, search, idx))


def put_repro(conn: sqlite3.Connection, row: Mapping[str, Any]) -> None:
    """Insert or replace the repro of ``row["bucket"]`` (:data:`REPRO_FIELDS`; absent: NULL)."""
    conn.execute(f"INSERT OR REPLACE INTO repros({', '.join(REPRO_FIELDS)}) "
                 f"VALUES ({','.join('?' * len(REPRO_FIELDS))})", [row.get(f) for f in REPRO_FIELDS])


def set_root_cause(conn: sqlite3.Connection, bucket: str, key: str, fields: str) -> None:
    conn.execute("UPDATE repros SET root_cause = ?, root_cause_fields = ? WHERE bucket = ?",
                 (key, fields, bucket))


def put_attachment(conn: sqlite3.Connection, bucket: str, root_cause: str, evidence: str,
                   via: str, created: float) -> None:
    conn.execute("INSERT OR REPLACE INTO attachments VALUES (?, ?, ?, ?, ?)",
                 (bucket, root_cause, evidence, via, created))


def move_attachments(conn: sqlite3.Connection, moved: Mapping[str, str]) -> None:
    """Each attachment to root cause ``old`` now names ``moved[old]`` (re-keyed root causes;
    one step: a new key that is also some old key is not moved again)."""
    for bucket, old in conn.execute("SELECT bucket, root_cause FROM attachments").fetchall():
        if old in moved:
            conn.execute("UPDATE attachments SET root_cause = ? WHERE bucket = ?",
                         (moved[old], bucket))


def put_baseline(conn: sqlite3.Connection, bucket: str, baseline: str, outcome: str, status: str,
                 line: str, created: float) -> None:
    conn.execute("INSERT OR REPLACE INTO baseline VALUES (?, ?, ?, ?, ?, ?)",
                 (bucket, baseline, outcome, status, line, created))
