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

Root causes are not a table of their own: :meth:`ResultsDB.root_causes` groups the repros by
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

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fuzzharness.buckets.root_causes import RootCause
from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.core.errors import UsageError
from fuzzharness.core.storage import check_writable_dir, connect_readonly, integrity_problem
from fuzzharness.core.verdict import Verdict
from fuzzharness.generators.targets import label

if TYPE_CHECKING:
    from fuzzharness.buckets.signatures import Signature

APPLICATION = "tvm-fuzzharness"
SCHEMA_VERSION = 12
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
RESULT_COLUMNS = 19
REPRO_FIELDS = ("bucket", "case_id", "case_json", "signature", "path", "reproduced", "runs",
                "exit_code", "output", "original_length", "length", "minimize_seconds",
                "minimize_runs", "title", "notes", "created", "root_cause", "root_cause_fields")
_JSON_REPRO_FIELDS = ("signature", "notes", "root_cause_fields")


class DatabaseError(Exception):
    """A database file the harness refuses to use (user-facing, one line)."""


def _finite(x: float | None) -> float | None:
    if x is None:
        return None
    return x if x == x and abs(x) != float("inf") else (1e308 if x > 0 else None)


class ResultsDB:
    def __init__(self, path: str | Path, *, create: bool = False, readonly: bool = False):
        """Open the database of campaign directory ``path`` (or the file itself).

        ``readonly``: never write (no WAL switch, no migration), also in a read-only
        directory (:func:`fuzzharness.core.storage.connect_readonly`) — for replay, status
        and anything else that only looks.  Otherwise an existing database is checked
        first, read-only: ours, not newer than this harness, and not corrupt (SQLite's
        ``quick_check``) — a corrupt page is refused, never written over.
        """
        self.path = Path(path)
        if self.path.is_dir():
            self.path = self.path / DB_NAME
        if not self.path.exists() and not create:
            raise DatabaseError(f"{self.path}: no campaign database here")
        self._check_file()
        try:
            if self.path.exists():  # look, read-only, before anything can touch the file
                ro = connect_readonly(self.path)
                try:
                    schema = self._check(ro)
                finally:
                    ro.close()
                if schema is None and not create:
                    raise DatabaseError(f"{self.path}: empty database, no campaign")
                if not readonly and (problem := integrity_problem(self.path)) is not None:
                    raise DatabaseError(
                        f"{self.path}: the database is corrupt (SQLite: {problem}); it was "
                        "not written to — read what is left with `sqlite3 FILE .recover`")
            if readonly:
                self.conn = connect_readonly(self.path)
                self.session = None
                return
            self._check_writable()
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

    def _check_writable(self) -> None:
        """Writing needs the file and its directory (WAL: ``-wal``/``-shm`` files beside it)."""
        try:
            check_writable_dir(self.path.parent, "campaign directory")
            if self.path.exists():
                with open(self.path, "r+b"):
                    pass
        except (UsageError, OSError) as e:
            why = e.strerror if isinstance(e, OSError) else str(e)
            raise DatabaseError(f"{self.path}: cannot be written ({why}); a read-only campaign "
                                "can be read (status, report, replay), not changed") from None

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
        if schema < 4:
            columns = {r[1] for r in self.conn.execute("PRAGMA table_info(repros)")}
            with self.conn:
                for col in ("root_cause", "root_cause_fields"):
                    if col not in columns:
                        self.conn.execute(f"ALTER TABLE repros ADD COLUMN {col} TEXT")
        if schema < 5:
            columns = {r[1] for r in self.conn.execute("PRAGMA table_info(results)")}
            with self.conn:
                for column in ("process", "confirmation"):  # after bucket, as in SCHEMA
                    if column not in columns:
                        self.conn.execute(f"ALTER TABLE results ADD COLUMN {column} TEXT")
            self.conn.executescript(SCHEMA)  # the confirmations table
        if schema < 6:
            self.conn.executescript(SCHEMA)  # the attachments table
            with self.conn:
                self._rekey_root_causes()
        if schema < 7:
            self.conn.executescript(SCHEMA)  # the baseline table (run --baseline)
        if 6 <= schema < 12:  # (below 6, the rekey above already keyed them the current way)
            with self.conn:
                self._rekey_root_causes()
        with self.conn:
            self.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'",
                              (str(SCHEMA_VERSION),))

    def _rekey_root_causes(self) -> None:
        """Every stored root cause keyed the current way (its fields read by
        :meth:`RootCause.from_dict`, which upgrades older versions)."""
        rows = self.conn.execute("SELECT bucket, root_cause, root_cause_fields FROM repros "
                                 "WHERE root_cause_fields IS NOT NULL").fetchall()
        moved: dict[str, str] = {}  # old key → new key
        for bucket, old, fields in rows:
            rc = RootCause.from_dict(json.loads(fields))
            moved[old] = rc.key
            self.conn.execute("UPDATE repros SET root_cause = ?, root_cause_fields = ? WHERE bucket = ?",
                              (rc.key, json.dumps(rc.to_dict(), sort_keys=True), bucket))
        if self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'attachments'").fetchone():
            for bucket, old in self.conn.execute("SELECT bucket, root_cause FROM attachments").fetchall():
                if old in moved:
                    self.conn.execute("UPDATE attachments SET root_cause = ? WHERE bucket = ?",
                                      (moved[old], bucket))

    def _rebuild_buckets(self) -> None:
        """Recompute every result's bucket from its stored case and verdict (one transaction)."""

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
                   signature: Signature | None = None, process: str | None = None,
                   confirmation: str | None = None) -> bool:
        """Store one result and count it in its bucket, in one transaction.

        False when that index is already stored (never overwritten, bucket not counted).
        ``signature``: the failure's bucket signature (None for passes and rejections, and
        for a failure whose confirmation is still pending: it gets its bucket in
        :meth:`confirm`).  ``process``: the worker process; ``confirmation``: see the schema.
        """
        case = case or {}
        wl = case.get("workload") or {}
        now = time.time()
        with self.conn:
            cur = self.conn.execute(
                f"INSERT OR IGNORE INTO results VALUES ({','.join('?' * RESULT_COLUMNS)})",
                (
                    idx, case.get("id"), wl.get("name"), (case.get("origin") or {}).get("dtype"),
                    label(case["target"]) if case.get("target") else None,  # adreno, not opencl
                    verdict.status.value, verdict.stage.value, _finite(verdict.ratio),
                    _finite(verdict.worst_error), verdict.digest, elapsed, now, worker,
                    self.session, json.dumps(case, sort_keys=True) if case else None,
                    json.dumps(verdict.to_dict(), sort_keys=True, default=str),
                    signature.key if signature is not None else None,
                    process, confirmation,
                ),
            )
            stored = cur.rowcount == 1
            if stored and signature is not None:
                self._bump_bucket(signature, idx, case.get("id"), now)
        return stored

    # -- confirmation ---------------------------------------------------------------------
    def confirm(self, idx: int, *, verdict: Verdict, signature: Signature | None, outcome: str,
                campaign_verdict: Verdict | None = None, alone_verdict: Verdict | None = None,
                outputs: list[str] | None = None, culprit: int | None = None,
                search: dict[str, Any] | None = None) -> None:
        """Settle a stored result after confirmation (:mod:`fuzzharness.campaign.confirm`), in
        one transaction: its verdict becomes ``verdict``, its bucket the one of
        ``signature`` (the old one, if any, loses the result; a bucket left empty is gone),
        its confirmation ``outcome``; the details go to the ``confirmations`` table."""
        now = time.time()
        with self.conn:
            row = self.conn.execute("SELECT bucket, case_id FROM results WHERE idx = ?",
                                    (idx,)).fetchone()
            if row is None:
                raise KeyError(f"no result #{idx}")
            old_bucket, case_id = row
            self.conn.execute(
                "UPDATE results SET status = ?, stage = ?, ratio = ?, worst_error = ?, "
                "digest = ?, verdict_json = ?, bucket = ?, confirmation = ? WHERE idx = ?",
                (verdict.status.value, verdict.stage.value, _finite(verdict.ratio),
                 _finite(verdict.worst_error), verdict.digest,
                 json.dumps(verdict.to_dict(), sort_keys=True, default=str),
                 signature.key if signature is not None else None, outcome, idx))
            if old_bucket is not None:
                self._unbump_bucket(old_bucket)
            if signature is not None:
                self._bump_bucket(signature, idx, case_id, now)
            previous = self.conn.execute(
                "SELECT campaign_verdict, alone_verdict, outputs, culprit, search "
                "FROM confirmations WHERE idx = ?", (idx,)).fetchone() or (None,) * 5

            def text(value, old):
                if value is None:
                    return old
                d = value.to_dict() if isinstance(value, Verdict) else value
                return json.dumps(d, sort_keys=True, default=str)

            self.conn.execute(
                "INSERT OR REPLACE INTO confirmations VALUES (?,?,?,?,?,?,?,?)",
                (idx, outcome, text(campaign_verdict, previous[0]),
                 text(alone_verdict, previous[1]), text(outputs, previous[2]),
                 culprit if culprit is not None else previous[3], text(search, previous[4]),
                 now))

    def note_search(self, idx: int, culprit: int | None, search: dict[str, Any]) -> None:
        """Record how the suspects of result ``idx`` were searched, and what was found."""
        with self.conn:
            self.conn.execute("UPDATE confirmations SET culprit = ?, search = ? WHERE idx = ?",
                              (culprit, json.dumps(search, sort_keys=True, default=str), idx))

    def _unbump_bucket(self, key: str) -> None:
        self.conn.execute("UPDATE buckets SET count = count - 1 WHERE key = ?", (key,))
        self.conn.execute("DELETE FROM buckets WHERE key = ? AND count <= 0", (key,))
        self.conn.execute(
            "UPDATE buckets SET example_idx = (SELECT MIN(idx) FROM results WHERE bucket = ?), "
            "example_case_id = (SELECT case_id FROM results WHERE bucket = ? ORDER BY idx "
            "LIMIT 1) WHERE key = ?", (key, key, key))

    def confirmation(self, idx: int) -> dict[str, Any] | None:
        """The ``confirmations`` row of result ``idx`` (JSON fields decoded), or None."""
        try:
            row = self.conn.execute(f"SELECT {', '.join(CONFIRMATION_FIELDS)} FROM confirmations "
                                    "WHERE idx = ?", (idx,)).fetchone()
        except sqlite3.OperationalError:  # a read-only database older than schema 5
            return None
        if row is None:
            return None
        d = dict(zip(CONFIRMATION_FIELDS, row, strict=True))
        for key in ("campaign_verdict", "alone_verdict", "outputs", "search"):
            if d[key]:
                d[key] = json.loads(d[key])
        return d

    def confirmations(self) -> list[dict[str, Any]]:
        return [c for (idx,) in self.conn.execute("SELECT idx FROM confirmations ORDER BY idx")
                if (c := self.confirmation(idx)) is not None]

    def with_confirmation(self, outcome: str) -> list[dict[str, Any]]:
        """Stored results (idx, case, verdict, process, session) whose confirmation is
        ``outcome`` (e.g. still pending after a driver died), by index."""
        rows = self.conn.execute(
            "SELECT idx, case_json, verdict_json, process, session FROM results "
            "WHERE confirmation = ? ORDER BY idx", (outcome,)).fetchall()
        return [{"idx": i, "case": json.loads(c) if c else None, "verdict": json.loads(v),
                 "process": p, "session": s} for i, c, v, p, s in rows]

    def predecessors(self, idx: int, limit: int) -> list[dict[str, Any]]:
        """The (at most ``limit``) results the same worker process ran just before ``idx``,
        oldest first — the suspects when ``idx`` failed only in that process."""
        row = self.conn.execute("SELECT process, session, finished FROM results WHERE idx = ?",
                                (idx,)).fetchone()
        if row is None or row[0] is None:
            return []
        process, session, finished = row
        rows = self.conn.execute(
            "SELECT idx, case_json, verdict_json FROM results WHERE process = ? AND "
            "session IS ? AND (finished < ? OR (finished = ? AND idx < ?)) AND idx != ? "
            "ORDER BY finished DESC, idx DESC LIMIT ?",
            (process, session, finished, finished, idx, idx, limit)).fetchall()
        return [{"idx": i, "case": json.loads(c) if c else None, "verdict": json.loads(v)}
                for i, c, v in reversed(rows)]

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
        (:class:`~fuzzharness.buckets.signatures.Signature`), first_seen, last_seen, count, example_idx
        (the lowest campaign index in the bucket), example_case_id."""

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
        for key in _JSON_REPRO_FIELDS:
            if row.get(key) is not None and not isinstance(row[key], str):
                row[key] = json.dumps(row[key], sort_keys=True)
        row["reproduced"] = int(bool(row.get("reproduced")))
        values = [row.get(f) for f in REPRO_FIELDS]
        with self.conn:
            self.conn.execute(f"INSERT OR REPLACE INTO repros({', '.join(REPRO_FIELDS)}) "
                              f"VALUES ({','.join('?' * len(REPRO_FIELDS))})", values)

    def repros(self) -> list[dict[str, Any]]:
        """Every stored repro, by bucket key order; ``signature``/``notes`` decoded."""
        out = []
        for row in self.conn.execute(f"SELECT {', '.join(REPRO_FIELDS)} FROM repros ORDER BY bucket"):
            d = dict(zip(REPRO_FIELDS, row, strict=True))
            for key in _JSON_REPRO_FIELDS:
                if d[key]:
                    d[key] = json.loads(d[key])
            d["reproduced"] = bool(d["reproduced"])
            out.append(d)
        return out

    def repro(self, bucket: str) -> dict[str, Any] | None:
        return next((r for r in self.repros() if r["bucket"] == bucket), None)

    def attach(self, bucket: str, root_cause: str, evidence: str, via: str = "") -> None:
        """Place ``bucket`` in the root cause ``root_cause`` without minimizing it."""
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO attachments VALUES (?, ?, ?, ?, ?)",
                              (bucket, root_cause, evidence, via, time.time()))

    def attachments(self) -> dict[str, dict[str, Any]]:
        """Bucket key → ``root_cause``, ``evidence``, ``via`` of each attached bucket."""
        if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'attachments'").fetchone():
            return {}  # a database older than schema 6, opened read-only
        return {b: {"root_cause": rc, "evidence": ev, "via": via} for b, rc, ev, via in
                self.conn.execute("SELECT bucket, root_cause, evidence, via FROM attachments")}

    def set_baseline(self, bucket: str, comparison: dict[str, Any]) -> None:
        """What the baseline TVM did with ``bucket``'s example case (run --baseline:
        :class:`fuzzharness.releases.baseline.Comparison` as a dict)."""
        c = comparison
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO baseline VALUES (?, ?, ?, ?, ?, ?)",
                              (bucket, c["baseline"], c["outcome"], c["status"], c.get("line", ""),
                               time.time()))

    def baseline(self) -> dict[str, dict[str, Any]]:
        """Bucket key → ``baseline``, ``outcome``, ``status``, ``line`` (empty: no baseline)."""
        if not self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'baseline'").fetchone():
            return {}  # a database older than schema 7, opened read-only
        return {b: {"baseline": bl, "outcome": o, "status": st, "line": ln or ""}
                for b, bl, o, st, ln in self.conn.execute(
                    "SELECT bucket, baseline, outcome, status, line FROM baseline")}

    def root_causes(self) -> list[dict[str, Any]]:
        """The campaign's root causes — its distinct bugs: the verified repros grouped by the
        root cause of their minimized case (:mod:`fuzzharness.buckets.root_causes`), with the
        buckets attached to them unminimized (:meth:`attach`), most cases first.

        Each row: ``key``, ``fields`` (the RootCause as a dict), ``title`` (of its
        representative repro's issue), ``buckets`` (keys of the buckets that minimized to it),
        ``attached`` (bucket → evidence, for buckets placed there without minimizing),
        ``cases`` (results in all of them), ``repros`` (verified repros), ``length`` (the
        shortest minimized trace) and ``path`` (the representative repro directory: the
        shortest one).  Buckets whose repro did not reproduce have no root cause and are not
        counted."""
        counts = dict(self.conn.execute("SELECT key, count FROM buckets"))
        groups: dict[str, list[dict[str, Any]]] = {}
        moved: dict[str, str] = {}  # a stored key of an older identity → today's
        for r in self.repros():
            if r["reproduced"] and r.get("root_cause_fields"):
                key = RootCause.from_dict(r["root_cause_fields"]).key
                groups.setdefault(key, []).append(r)
                if r.get("root_cause") and r["root_cause"] != key:
                    moved[r["root_cause"]] = key
        attached: dict[str, dict[str, str]] = {}
        for bucket, a in self.attachments().items():  # a read-only database is not migrated:
            key = moved.get(a["root_cause"], a["root_cause"])  # its attachments keep old keys
            if key in groups:
                attached.setdefault(key, {})[bucket] = a["evidence"]
        out = []
        for key, reps in groups.items():
            best = min(reps, key=lambda r: (r["length"] if r["length"] is not None else 1 << 30,
                                            r["bucket"]))
            extra = attached.get(key, {})
            members = sorted(r["bucket"] for r in reps)
            out.append({"key": key, "fields": best.get("root_cause_fields") or {},
                        "signature": best.get("signature") or {},
                        "title": best["title"] or "", "buckets": members,
                        "attached": dict(sorted(extra.items())), "repros": len(reps),
                        "cases": sum(int(counts.get(b, 0)) for b in [*members, *extra]),
                        "length": best["length"], "path": best["path"]})
        return sorted(out, key=lambda d: (-d["cases"], d["key"]))

    def done_indices(self) -> set[int]:
        return {r[0] for r in self.conn.execute("SELECT idx FROM results")}

    def count(self, below: int | None = None) -> int:
        """Stored results (those with an index below ``below`` when given)."""
        if below is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        return int(self.conn.execute("SELECT COUNT(*) FROM results WHERE idx < ?",
                                     (below,)).fetchone()[0])

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
