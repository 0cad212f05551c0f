"""The campaign database's file: its tables, opening it safely, and migrating older versions.

One SQLite file per campaign directory, plain data only.

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
            bucket, process, confirmation)
                                      bucket: key of the failure's bucket (NULL: no failure,
                                      or a failure not confirmed yet); process: the worker
                                      process that ran it (its earlier cases are suspects);
                                      confirmation: what re-running a failure alone showed
                                      (fuzzharness.campaign.confirm; NULL: not a finding, or
                                      confirmation off or older than schema 5)
    buckets(key PRIMARY KEY, symptom, stage, title, signature, first_seen, last_seen, count,
            example_idx, example_case_id)
                                      one row per distinct failure (fuzzharness.buckets.signatures);
                                      example = the first case that fell into it
    repros(bucket PRIMARY KEY, case_id, case_json, signature, path, reproduced, runs,
           exit_code, output, original_length, length, minimize_seconds, minimize_runs,
           title, notes, created, root_cause, root_cause_fields)
                                      the minimized repro of a bucket (fuzzharness.repro):
                                      reproduced = 1 only when the written script exited 1
                                      in every verification run in a fresh process;
                                      root_cause: the key of the minimized case's root cause
                                      (fuzzharness.buckets.root_causes), its fields as JSON
    attachments(bucket PRIMARY KEY, root_cause, evidence, via, created)
                                      a bucket placed in an existing root cause without
                                      minimizing it (cheap evidence: its raw case has that
                                      root cause's mechanism fact); via: the bucket whose
                                      verified repro is the root cause's
    confirmations(idx PRIMARY KEY, outcome, campaign_verdict, alone_verdict, outputs,
                  culprit, search, finished)
                                      one row per confirmed (or refuted) failure: the verdict
                                      seen in the campaign's worker and the one seen alone
                                      (JSON), the .npz files of both outputs when they differ
                                      (JSON list, relative to the campaign directory), the
                                      case found to have damaged the worker (culprit) and how
                                      it was searched (JSON)

Root causes are not a table of their own: :meth:`fuzzharness.campaign.db.ResultsDB.root_causes`
groups the repros by
``root_cause`` (buckets that minimized to one trigger are one root cause).

A result and its bucket update are one transaction: ``count`` always equals the number of
results that name the bucket, even across a SIGKILL.

Schema history: 1 → 2 added ``results.bucket`` and ``buckets``; a version-1 database is
migrated (additively, buckets recomputed from the stored verdicts) when opened.  2 → 3 added
``repros`` (additive: an empty table).  3 → 4 added ``repros.root_cause`` and
``repros.root_cause_fields`` (additive; NULL for repros written before).  4 → 5 added
``results.process``, ``results.confirmation`` and ``confirmations`` (additive: older results
read as unconfirmed).  5 → 6: root-cause keys of version 2 (``repros.root_cause`` recomputed
from the stored fields, :meth:`RootCause.from_dict`) and ``attachments`` (additive).  6 → 7
added ``baseline`` (additive).  7 → 8: root-cause keys of version 3 (step and site): repros
re-keyed from their fields, and each attachment moved to the new key of the root cause it
pointed at.  8 → 9: root-cause keys of version 4 (a placement step misled by a hiding wrapper
keyed by the wrapper), re-keyed the same way.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from fuzzharness.core.errors import UsageError
from fuzzharness.core.storage import check_writable_dir, connect_readonly, integrity_problem

APPLICATION = "tvm-fuzzharness"
SCHEMA_VERSION = 12
DB_NAME = "results.sqlite"
#: what a migration leaves to the caller, who knows what rows mean (this layer only knows
#: tables): recompute every result's bucket from its verdict; re-key the stored root causes
REBUILD_BUCKETS, REKEY_ROOT_CAUSES = "rebuild_buckets", "rekey_root_causes"

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
    bucket TEXT,
    process TEXT,
    confirmation TEXT
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
    created REAL NOT NULL,
    root_cause TEXT,
    root_cause_fields TEXT
);
""" + """
CREATE TABLE IF NOT EXISTS attachments(
    bucket TEXT PRIMARY KEY,
    root_cause TEXT NOT NULL,
    evidence TEXT NOT NULL,
    via TEXT,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS baseline(
    bucket TEXT PRIMARY KEY,
    baseline TEXT NOT NULL,
    outcome TEXT NOT NULL,
    status TEXT NOT NULL,
    line TEXT,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS confirmations(
    idx INTEGER PRIMARY KEY,
    outcome TEXT NOT NULL,
    campaign_verdict TEXT,
    alone_verdict TEXT,
    outputs TEXT,
    culprit INTEGER,
    search TEXT,
    finished REAL NOT NULL
);
"""
CONFIRMATION_FIELDS = ("idx", "outcome", "campaign_verdict", "alone_verdict", "outputs",
                       "culprit", "search", "finished")
REPRO_FIELDS = ("bucket", "case_id", "case_json", "signature", "path", "reproduced", "runs",
                "exit_code", "output", "original_length", "length", "minimize_seconds",
                "minimize_runs", "title", "notes", "created", "root_cause", "root_cause_fields")
#: repro fields stored as JSON text
JSON_REPRO_FIELDS = ("signature", "notes", "root_cause_fields")
#: the columns of ``results``, in table order
RESULT_FIELDS = ("idx", "case_id", "workload", "dtype", "target", "status", "stage", "ratio",
                 "worst_error", "digest", "elapsed", "finished", "worker", "session", "case_json",
                 "verdict_json", "bucket", "process", "confirmation")


class DatabaseError(Exception):
    """A database file the harness refuses to use (user-facing, one line)."""


def database_path(path: str | Path) -> Path:
    """The database file of campaign directory ``path`` (or ``path`` itself, a file)."""
    path = Path(path)
    return path / DB_NAME if path.is_dir() else path


def open_database(path: Path, *, create: bool, readonly: bool) -> tuple[sqlite3.Connection, set[str]]:
    """A connection to the database file ``path``, and the recomputations its migration
    left to the caller (:data:`REBUILD_BUCKETS`, :data:`REKEY_ROOT_CAUSES`; empty when
    none).  After them the caller calls :func:`finish_migration`; a process that dies
    before that migrates again next time (every step is idempotent).

    ``readonly``: never write (no WAL switch, no migration), also in a read-only directory
    (:func:`fuzzharness.core.storage.connect_readonly`).  Otherwise an existing file is
    checked first, read-only: ours, not newer than this harness, and not corrupt (SQLite's
    ``quick_check``) — a corrupt page is refused, never written over.  ``create``: make an
    empty database when there is none.  Every refusal is a :class:`DatabaseError`.
    """
    if not path.exists() and not create:
        raise DatabaseError(f"{path}: no campaign database here")
    _check_magic(path)
    try:
        if path.exists():  # look, read-only, before anything can touch the file
            ro = connect_readonly(path)
            try:
                schema = _schema_of(ro, path)
            finally:
                ro.close()
            if schema is None and not create:
                raise DatabaseError(f"{path}: empty database, no campaign")
            if not readonly and (problem := integrity_problem(path)) is not None:
                raise DatabaseError(
                    f"{path}: the database is corrupt (SQLite: {problem}); it was "
                    "not written to — read what is left with `sqlite3 FILE .recover`")
        if readonly:
            return connect_readonly(path), set()
        _check_writable(path)
        conn = sqlite3.connect(path, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        schema = _schema_of(conn, path)
        if schema is None:
            with conn:
                conn.executescript(SCHEMA)
                conn.executemany("INSERT INTO meta VALUES (?, ?)",
                                 [("application", APPLICATION), ("schema", str(SCHEMA_VERSION))])
            return conn, set()
        return conn, (_migrate_tables(conn, schema) if schema < SCHEMA_VERSION else set())
    except sqlite3.DatabaseError as e:
        raise DatabaseError(f"{path}: not a usable SQLite database ({e})") from None


def finish_migration(conn: sqlite3.Connection) -> None:
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))


def _check_magic(path: Path) -> None:
    try:
        if path.exists() and path.stat().st_size > 0:
            with open(path, "rb") as f:
                if f.read(16) != b"SQLite format 3\x00":
                    raise DatabaseError(f"{path}: not a SQLite database")
    except OSError as e:
        raise DatabaseError(f"{path}: cannot read ({e.strerror})") from None


def _check_writable(path: Path) -> None:
    """Writing needs the file and its directory (WAL: ``-wal``/``-shm`` files beside it)."""
    try:
        check_writable_dir(path.parent, "campaign directory")
        if path.exists():
            with open(path, "r+b"):
                pass
    except (UsageError, OSError) as e:
        why = e.strerror if isinstance(e, OSError) else str(e)
        raise DatabaseError(f"{path}: cannot be written ({why}); a read-only campaign "
                            "can be read (status, report, replay), not changed") from None


def _schema_of(conn: sqlite3.Connection, path: Path) -> int | None:
    """Raise DatabaseError unless ``conn`` is ours; its schema version, None when empty."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "meta" in tables:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("application") != APPLICATION:
            raise DatabaseError(f"{path}: not a fuzzharness database")
        try:
            schema = int(meta.get("schema", 0))
        except ValueError:
            raise DatabaseError(f"{path}: unreadable schema version {meta['schema']!r}") from None
        if schema > SCHEMA_VERSION:
            raise DatabaseError(f"{path}: written by a newer harness (schema {schema})")
        return schema
    if tables:
        raise DatabaseError(
            f"{path}: a foreign SQLite database (tables: {', '.join(sorted(tables))})")
    return None


def _add_columns(conn: sqlite3.Connection, table: str, names: tuple[str, ...]) -> None:
    have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    with conn:
        for name in names:  # in SCHEMA's order, after the columns already there
            if name not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} TEXT")


def _migrate_tables(conn: sqlite3.Connection, schema: int) -> set[str]:
    """The additive part of bringing an older database up to :data:`SCHEMA_VERSION`: new
    columns (the tables ``CREATE … IF NOT EXISTS`` adds); what is left to recompute."""
    todo: set[str] = set()
    if schema < 2:
        _add_columns(conn, "results", ("bucket",))
        todo.add(REBUILD_BUCKETS)
    if schema < 4:
        conn.executescript(SCHEMA)  # the repros table, before its new columns
        _add_columns(conn, "repros", ("root_cause", "root_cause_fields"))
    if schema < 5:
        _add_columns(conn, "results", ("process", "confirmation"))
    conn.executescript(SCHEMA)  # creates every table that is missing (IF NOT EXISTS)
    if schema < 12:  # root-cause keys of version 4 (see the schema history above)
        todo.add(REKEY_ROOT_CAUSES)
    return todo
