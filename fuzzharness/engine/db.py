"""The campaign database: one SQLite file per campaign directory, plain data only.

Durability: WAL journal, one transaction per finished case.  A driver killed with SIGKILL
loses at most the cases that were still running; ``--resume`` re-runs exactly those indices
(``results.idx`` is the primary key, so nothing is stored twice).

Safety: a file that is not a fuzzharness database (no ``meta.application`` row, or not SQLite
at all) is refused with :class:`DatabaseError` before anything is written to it.

Tables::

    meta(key, value)                  application marker and schema version
    campaign(id=1, seed, settings, versions, created)
    sessions(id, started, ended, cases, argv)   each run or resume of the campaign
    results(idx PRIMARY KEY, case_id, workload, dtype, target, status, stage, ratio,
            worst_error, digest, elapsed, finished, worker, session, case_json, verdict_json,
            bucket)                   bucket: key of the failure's bucket (NULL: no failure)
    buckets(key PRIMARY KEY, symptom, stage, title, signature, first_seen, last_seen, count,
            example_idx, example_case_id)
                                      one row per distinct failure (fuzzharness.buckets);
                                      example = the first case that fell into it
    repros(bucket PRIMARY KEY, case_id, case_json, signature, path, reproduced, runs,
           exit_code, output, original_length, length, minimize_seconds, minimize_runs,
           title, notes, created)     the minimized repro of a bucket (fuzzharness.repro):
                                      reproduced = 1 only when the written script exited 1
                                      in every verification run in a fresh process

A result and its bucket update are one transaction: ``count`` always equals the number of
results that name the bucket, even across a SIGKILL.

Schema history: 1 → 2 added ``results.bucket`` and ``buckets``; a version-1 database is
migrated (additively, buckets recomputed from the stored verdicts) when opened.  2 → 3 added
``repros`` (additive: an empty table).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fuzzharness.verdict import Verdict
from generators.targets import label

if TYPE_CHECKING:
    from fuzzharness.buckets import Signature

APPLICATION = "tvm-fuzzharness"
SCHEMA_VERSION = 3
DB_NAME = "results.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS campaign(
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seed INTEGER NOT NULL,
    settings TEXT NOT NULL,
    versions TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions(
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started REAL NOT NULL,
    ended REAL,
    cases INTEGER NOT NULL DEFAULT 0,
    argv TEXT
);
CREATE TABLE IF NOT EXISTS results(
    idx INTEGER PRIMARY KEY,
    case_id TEXT,
    workload TEXT,
    dtype TEXT,
    target TEXT,
    status TEXT NOT NULL,
    stage TEXT NOT NULL,
    ratio REAL,
    worst_error REAL,
    digest TEXT,
    elapsed REAL,
    finished REAL NOT NULL,
    worker INTEGER,
    session INTEGER,
    case_json TEXT,
    verdict_json TEXT NOT NULL,
    bucket TEXT
);
CREATE INDEX IF NOT EXISTS results_case_id ON results(case_id);
CREATE INDEX IF NOT EXISTS results_status ON results(status);
""" + """
CREATE TABLE IF NOT EXISTS buckets(
    key TEXT PRIMARY KEY,
    symptom TEXT NOT NULL,
    stage TEXT NOT NULL,
    title TEXT NOT NULL,
    signature TEXT NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    count INTEGER NOT NULL,
    example_idx INTEGER NOT NULL,
    example_case_id TEXT
);
CREATE INDEX IF NOT EXISTS results_bucket ON results(bucket);
""" + """
CREATE TABLE IF NOT EXISTS repros(
    bucket TEXT PRIMARY KEY,
    case_id TEXT,
    case_json TEXT,
    signature TEXT,
    path TEXT,
    reproduced INTEGER NOT NULL,
    runs INTEGER NOT NULL,
    exit_code INTEGER,
    output TEXT,
    original_length INTEGER,
    length INTEGER,
    minimize_seconds REAL,
    minimize_runs INTEGER,
    title TEXT,
    notes TEXT,
    created REAL NOT NULL
);
"""
REPRO_FIELDS = ("bucket", "case_id", "case_json", "signature", "path", "reproduced", "runs",
                "exit_code", "output", "original_length", "length", "minimize_seconds",
                "minimize_runs", "title", "notes", "created")


class DatabaseError(Exception):
    """A database file the harness refuses to use (user-facing, one line)."""


def _finite(x: float | None) -> float | None:
    if x is None:
        return None
    return x if x == x and abs(x) != float("inf") else (1e308 if x > 0 else None)


class ResultsDB:
    def __init__(self, path: str | Path, *, create: bool = False):
        self.path = Path(path)
        if self.path.is_dir():
            self.path = self.path / DB_NAME
        if not self.path.exists() and not create:
            raise DatabaseError(f"{self.path}: no campaign database here")
        self._check_file()
        try:
            if self.path.exists():  # look, read-only, before anything can touch the file
                ro = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
                try:
                    schema = self._check(ro)
                finally:
                    ro.close()
                if schema is None and not create:
                    raise DatabaseError(f"{self.path}: empty database, no campaign")
            self.conn = sqlite3.connect(self.path, timeout=30)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            schema = self._check(self.conn)
            if schema is None:
                self._init_schema()
            elif schema < SCHEMA_VERSION:
                self._migrate(schema)
        except sqlite3.DatabaseError as e:
            raise DatabaseError(f"{self.path}: not a usable SQLite database ({e})") from None
        self.session: int | None = None

    def _check_file(self) -> None:
        try:
            if self.path.exists() and self.path.stat().st_size > 0:
                with open(self.path, "rb") as f:
                    if f.read(16) != b"SQLite format 3\x00":
                        raise DatabaseError(f"{self.path}: not a SQLite database")
        except OSError as e:
            raise DatabaseError(f"{self.path}: cannot read ({e.strerror})") from None

    def _check(self, conn: sqlite3.Connection) -> int | None:
        """Raise DatabaseError unless ``conn`` is ours; its schema version, None when empty."""
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" in tables:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("application") != APPLICATION:
                raise DatabaseError(f"{self.path}: not a fuzzharness database")
            try:
                schema = int(meta.get("schema", 0))
            except ValueError:
                raise DatabaseError(f"{self.path}: unreadable schema version {meta['schema']!r}") from None
            if schema > SCHEMA_VERSION:
                raise DatabaseError(f"{self.path}: written by a newer harness (schema {schema})")
            return schema
        if tables:
            raise DatabaseError(
                f"{self.path}: a foreign SQLite database (tables: {', '.join(sorted(tables))})")
        return None

    def _init_schema(self) -> None:
        with self.conn:
            self.conn.executescript(SCHEMA)
            self.conn.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("application", APPLICATION), ("schema", str(SCHEMA_VERSION))],
            )

    def _migrate(self, schema: int) -> None:
        """Bring an older database up to :data:`SCHEMA_VERSION` (additive; idempotent)."""
        if schema < 2:
            columns = {r[1] for r in self.conn.execute("PRAGMA table_info(results)")}
            with self.conn:
                if "bucket" not in columns:
                    self.conn.execute("ALTER TABLE results ADD COLUMN bucket TEXT")
            self.conn.executescript(SCHEMA)  # creates what is missing (IF NOT EXISTS)
            with self.conn:
                self._rebuild_buckets()
        if schema < 3:
            self.conn.executescript(SCHEMA)  # the repros table (IF NOT EXISTS: additive)
        with self.conn:
            self.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'",
                              (str(SCHEMA_VERSION),))

    def _rebuild_buckets(self) -> None:
        """Recompute every result's bucket from its stored case and verdict (one transaction)."""
        from fuzzharness.buckets import signature

        self.conn.execute("DELETE FROM buckets")
        self.conn.execute("UPDATE results SET bucket = NULL")
        rows = self.conn.execute(
            "SELECT idx, case_json, verdict_json, finished FROM results ORDER BY idx").fetchall()
        for idx, case_json, verdict_json, finished in rows:
            case = json.loads(case_json) if case_json else None
            sig = signature(case, Verdict.from_dict(json.loads(verdict_json)))
            if sig is not None:
                self.conn.execute("UPDATE results SET bucket = ? WHERE idx = ?", (sig.key, idx))
                self._bump_bucket(sig, idx, (case or {}).get("id"), finished)

    # -- campaign ---------------------------------------------------------------------------
    def campaign(self) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT seed, settings, versions, created FROM campaign").fetchone()
        if row is None:
            return None
        return {"seed": row[0], "settings": json.loads(row[1]), "versions": json.loads(row[2]),
                "created": row[3]}

    def create_campaign(self, seed: int, settings: dict[str, Any], versions: dict[str, str]) -> None:
        with self.conn:
            self.conn.execute(
                "INSERT INTO campaign VALUES (1, ?, ?, ?, ?)",
                (seed, json.dumps(settings, sort_keys=True), json.dumps(versions), time.time()),
            )

    def start_session(self, argv: list[str]) -> int:
        with self.conn:
            cur = self.conn.execute("INSERT INTO sessions(started, argv) VALUES (?, ?)",
                                    (time.time(), json.dumps(argv)))
        self.session = int(cur.lastrowid)
        return self.session

    def end_session(self, cases: int) -> None:
        if self.session is None:
            return
        with self.conn:
            self.conn.execute("UPDATE sessions SET ended = ?, cases = ? WHERE id = ?",
                              (time.time(), cases, self.session))

    def elapsed_before(self) -> float:
        """Wall time spent by earlier sessions (a resumed time budget continues from here)."""
        row = self.conn.execute(
            "SELECT COALESCE(SUM(COALESCE(ended, (SELECT MAX(finished) FROM results "
            "WHERE session = sessions.id), started) - started), 0) FROM sessions"
        ).fetchone()
        return float(row[0] or 0.0)

    # -- results ----------------------------------------------------------------------------
    def add_result(self, idx: int, case: dict[str, Any] | None, verdict: Verdict, *,
                   elapsed: float, worker: int | str | None,
                   signature: Signature | None = None) -> bool:
        """Store one result and count it in its bucket, in one transaction.

        False when that index is already stored (never overwritten, bucket not counted).
        ``signature``: the failure's bucket signature (None for passes and rejections).
        """
        case = case or {}
        wl = case.get("workload") or {}
        now = time.time()
        with self.conn:
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    idx, case.get("id"), wl.get("name"), (case.get("origin") or {}).get("dtype"),
                    label(case["target"]) if case.get("target") else None,  # adreno, not opencl
                    verdict.status.value, verdict.stage.value, _finite(verdict.ratio),
                    _finite(verdict.worst_error), verdict.digest, elapsed, now, worker,
                    self.session, json.dumps(case, sort_keys=True) if case else None,
                    json.dumps(verdict.to_dict(), sort_keys=True, default=str),
                    signature.key if signature is not None else None,
                ),
            )
            stored = cur.rowcount == 1
            if stored and signature is not None:
                self._bump_bucket(signature, idx, case.get("id"), now)
        return stored

    def _bump_bucket(self, sig: Signature, idx: int, case_id: str | None, when: float) -> None:
        self.conn.execute(
            "INSERT INTO buckets VALUES (?,?,?,?,?,?,?,1,?,?) ON CONFLICT(key) DO UPDATE SET "
            "count = count + 1, last_seen = MAX(last_seen, excluded.last_seen), "
            "first_seen = MIN(first_seen, excluded.first_seen), "
            "example_idx = CASE WHEN excluded.example_idx < example_idx "
            "THEN excluded.example_idx ELSE example_idx END, "
            "example_case_id = CASE WHEN excluded.example_idx < example_idx "
            "THEN excluded.example_case_id ELSE example_case_id END",
            (sig.key, sig.symptom, sig.stage, sig.title(),
             json.dumps(sig.to_dict(), sort_keys=True), when, when, idx, case_id),
        )

    # -- buckets ----------------------------------------------------------------------------
    def buckets(self) -> list[dict[str, Any]]:
        """Every bucket, most frequent first: key, symptom, stage, title, signature
        (:class:`~fuzzharness.buckets.Signature`), first_seen, last_seen, count, example_idx
        (the lowest campaign index in the bucket), example_case_id."""
        from fuzzharness.buckets import Signature

        cur = self.conn.execute(
            "SELECT key, symptom, stage, title, signature, first_seen, last_seen, count, "
            "example_idx, example_case_id FROM buckets ORDER BY count DESC, first_seen")
        out = []
        for row in cur:
            d = dict(zip(("key", "symptom", "stage", "title", "signature", "first_seen",
                          "last_seen", "count", "example_idx", "example_case_id"), row, strict=True))
            d["signature"] = Signature.from_dict(json.loads(d["signature"]))
            out.append(d)
        return out

    def bucket_stats(self) -> dict[str, dict[str, Any]]:
        """Per bucket key: the workloads and dtypes its cases were seen with, the sessions."""
        stats: dict[str, dict[str, Any]] = {}
        for key, workload, dtype, session in self.conn.execute(
                "SELECT DISTINCT bucket, workload, dtype, session FROM results "
                "WHERE bucket IS NOT NULL"):
            s = stats.setdefault(key, {"workloads": set(), "dtypes": set(), "sessions": set()})
            if workload:
                s["workloads"].add(workload)
            if dtype:
                s["dtypes"].add(dtype)
            s["sessions"].add(session)
        return stats

    # -- repros ------------------------------------------------------------------------------
    def add_repro(self, record: dict[str, Any]) -> None:
        """Store (or replace) the repro of one bucket; ``record`` has :data:`REPRO_FIELDS`
        (plain data; ``signature`` and ``notes`` may be dicts/lists, stored as JSON)."""
        row = dict(record)
        row.setdefault("created", time.time())
        for key in ("signature", "notes"):
            if row.get(key) is not None and not isinstance(row[key], str):
                row[key] = json.dumps(row[key], sort_keys=True)
        row["reproduced"] = int(bool(row.get("reproduced")))
        values = [row.get(f) for f in REPRO_FIELDS]
        with self.conn:
            self.conn.execute(f"INSERT OR REPLACE INTO repros VALUES ({','.join('?' * len(REPRO_FIELDS))})",
                              values)

    def repros(self) -> list[dict[str, Any]]:
        """Every stored repro, by bucket key order; ``signature``/``notes`` decoded."""
        out = []
        for row in self.conn.execute(f"SELECT {', '.join(REPRO_FIELDS)} FROM repros ORDER BY bucket"):
            d = dict(zip(REPRO_FIELDS, row, strict=True))
            for key in ("signature", "notes"):
                if d[key]:
                    d[key] = json.loads(d[key])
            d["reproduced"] = bool(d["reproduced"])
            out.append(d)
        return out

    def repro(self, bucket: str) -> dict[str, Any] | None:
        return next((r for r in self.repros() if r["bucket"] == bucket), None)

    def done_indices(self) -> set[int]:
        return {r[0] for r in self.conn.execute("SELECT idx FROM results")}

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def status_counts(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT status, COUNT(*) FROM results GROUP BY status"))

    def results(self, where: str = "", params: tuple = ()) -> Iterator[dict[str, Any]]:
        cur = self.conn.execute(
            f"SELECT idx, case_json, verdict_json FROM results {where} ORDER BY idx", params
        )
        for idx, case_json, verdict_json in cur:
            yield {"idx": idx, "case": json.loads(case_json) if case_json else None,
                   "verdict": json.loads(verdict_json)}

    def find_case(self, key: str) -> dict[str, Any] | None:
        """A stored case by case id (prefix allowed) or by index."""
        if key.isdigit():
            rows = list(self.results("WHERE idx = ?", (int(key),)))
        else:
            rows = list(self.results("WHERE case_id LIKE ?", (key + "%",)))
        return rows[0] if rows else None

    def close(self) -> None:
        self.conn.close()
