"""The campaign database as the campaign sees it: results, buckets, confirmations, repros and
root causes, written in terms of verdicts, bucket signatures and root causes.

The file itself — its tables, opening it safely, the migrations of older versions — and every
SQL statement belong to :mod:`fuzzharness.store` (``schema.py``, ``writers.py``,
``readers.py``; the tables are documented there and in ``docs/campaign-format.md``).  What is
left here is what rows *mean*: a result's bucket is its failure's signature
(:mod:`fuzzharness.buckets.signatures`), a repro's root cause is keyed the current way
(:class:`~fuzzharness.buckets.root_causes.RootCause`), and the root causes are the verified
repros grouped by that key (:meth:`ResultsDB.root_causes`).

A result and its bucket update are one transaction: ``count`` always equals the number of
results that name the bucket, even across a SIGKILL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fuzzharness import store
from fuzzharness.buckets.root_causes import RootCause
from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.core.verdict import Verdict
from fuzzharness.generators.targets import label
from fuzzharness.store import writers
from fuzzharness.store.schema import (  # noqa: F401  (re-exported: the campaign's names for them)
    APPLICATION,
    DB_NAME,
    JSON_REPRO_FIELDS,
    REBUILD_BUCKETS,
    REKEY_ROOT_CAUSES,
    REPRO_FIELDS,
    SCHEMA_VERSION,
    DatabaseError,
    database_path,
    finish_migration,
    open_database,
)


def _finite(x: float | None) -> float | None:
    if x is None:
        return None
    return x if x == x and abs(x) != float("inf") else (1e308 if x > 0 else None)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class ResultsDB:
    def __init__(self, path: str | Path, *, create: bool = False, readonly: bool = False):
        """Open the database of campaign directory ``path`` (or the file itself); see
        :func:`fuzzharness.store.schema.open_database` for ``create``, ``readonly`` and
        what is refused.  An older database is migrated here (not when read-only)."""
        self.path = database_path(path)
        self.session: int | None = None
        self.conn, todo = open_database(self.path, create=create, readonly=readonly)
        if todo:
            with self.conn:
                if REBUILD_BUCKETS in todo:
                    self._rebuild_buckets()
                if REKEY_ROOT_CAUSES in todo:
                    self._rekey_root_causes()
            finish_migration(self.conn)

    def _rekey_root_causes(self) -> None:
        """Every stored root cause keyed the current way (its fields read by
        :meth:`RootCause.from_dict`, which upgrades older versions)."""
        moved: dict[str, str] = {}  # old key → new key
        for r in store.repro_records(self.conn):
            if r["root_cause_fields"]:
                rc = RootCause.from_dict(r["root_cause_fields"])
                moved[r["root_cause"]] = rc.key
                writers.set_root_cause(self.conn, r["bucket"], rc.key,
                                       json.dumps(rc.to_dict(), sort_keys=True))
        writers.move_attachments(self.conn, moved)

    def _rebuild_buckets(self) -> None:
        """Recompute every result's bucket from its stored case and verdict."""
        writers.forget_buckets(self.conn)
        for idx, case_json, verdict_json, finished in list(store.result_rows(
                self.conn, ("idx", "case_json", "verdict_json", "finished"))):
            case = json.loads(case_json) if case_json else None
            sig = signature(case, Verdict.from_dict(json.loads(verdict_json)))
            if sig is not None:
                writers.set_result_bucket(self.conn, idx, sig.key)
                self._bump_bucket(sig, idx, (case or {}).get("id"), finished)

    # -- campaign ---------------------------------------------------------------------------
    def campaign(self) -> dict[str, Any] | None:
        return store.campaign_row(self.conn)

    def create_campaign(self, seed: int, settings: dict[str, Any], versions: dict[str, str]) -> None:
        with self.conn:
            writers.insert_campaign(self.conn, seed, json.dumps(settings, sort_keys=True),
                                    json.dumps(versions), time.time())

    def start_session(self, argv: list[str]) -> int:
        with self.conn:
            self.session = writers.insert_session(self.conn, time.time(), json.dumps(argv))
        return self.session

    def end_session(self, cases: int) -> None:
        if self.session is None:
            return
        with self.conn:
            writers.end_session(self.conn, self.session, time.time(), cases)

    def elapsed_before(self) -> float:
        """Wall time spent by earlier sessions (a resumed time budget continues from here)."""
        return store.elapsed_before(self.conn)

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
        now = time.time()
        row = {
            "idx": idx, "case_id": case.get("id"),
            "workload": (case.get("workload") or {}).get("name"),
            "dtype": (case.get("origin") or {}).get("dtype"),
            "target": label(case["target"]) if case.get("target") else None,  # adreno, not opencl
            "status": verdict.status.value, "stage": verdict.stage.value,
            "ratio": _finite(verdict.ratio), "worst_error": _finite(verdict.worst_error),
            "digest": verdict.digest, "elapsed": elapsed, "finished": now, "worker": worker,
            "session": self.session, "case_json": json.dumps(case, sort_keys=True) if case else None,
            "verdict_json": _json(verdict.to_dict()),
            "bucket": signature.key if signature is not None else None,
            "process": process, "confirmation": confirmation,
        }
        with self.conn:
            stored = writers.insert_result(self.conn, row)
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
        its confirmation ``outcome``; the details go to the ``confirmations`` table (a
        detail not given keeps its earlier value)."""
        now = time.time()
        with self.conn:
            found = store.result_bucket(self.conn, idx)
            if found is None:
                raise KeyError(f"no result #{idx}")
            old_bucket, case_id = found
            writers.settle_result(
                self.conn, idx, status=verdict.status.value, stage=verdict.stage.value,
                ratio=_finite(verdict.ratio), worst_error=_finite(verdict.worst_error),
                digest=verdict.digest, verdict_json=_json(verdict.to_dict()),
                bucket=signature.key if signature is not None else None, confirmation=outcome)
            if old_bucket is not None:
                writers.uncount_in_bucket(self.conn, old_bucket)
            if signature is not None:
                self._bump_bucket(signature, idx, case_id, now)
            before = store.confirmation(self.conn, idx, decode=False) or {}

            def text(key: str, value: Any) -> str | None:
                if value is None:
                    return before.get(key)
                return _json(value.to_dict() if isinstance(value, Verdict) else value)

            writers.put_confirmation(self.conn, (
                idx, outcome, text("campaign_verdict", campaign_verdict),
                text("alone_verdict", alone_verdict), text("outputs", outputs),
                culprit if culprit is not None else before.get("culprit"),
                text("search", search), now))

    def note_search(self, idx: int, culprit: int | None, search: dict[str, Any]) -> None:
        """Record how the suspects of result ``idx`` were searched, and what was found."""
        with self.conn:
            writers.set_search(self.conn, idx, culprit, _json(search))

    def confirmation(self, idx: int) -> dict[str, Any] | None:
        """The ``confirmations`` row of result ``idx`` (JSON fields decoded), or None."""
        return store.confirmation(self.conn, idx)

    def confirmations(self) -> list[dict[str, Any]]:
        return [c for idx in store.confirmed_indices(self.conn)
                if (c := self.confirmation(idx)) is not None]

    def with_confirmation(self, outcome: str) -> list[dict[str, Any]]:
        """Stored results (idx, case, verdict, process, session) whose confirmation is
        ``outcome`` (e.g. still pending after a driver died), by index."""
        return store.with_confirmation(self.conn, outcome)

    def predecessors(self, idx: int, limit: int) -> list[dict[str, Any]]:
        """The (at most ``limit``) results the same worker process ran just before ``idx``,
        oldest first — the suspects when ``idx`` failed only in that process."""
        return store.predecessors(self.conn, idx, limit)

    def _bump_bucket(self, sig: Signature, idx: int, case_id: str | None, when: float) -> None:
        writers.count_in_bucket(self.conn, sig.key, symptom=sig.symptom, stage=sig.stage,
                                title=sig.title(), signature=json.dumps(sig.to_dict(), sort_keys=True),
                                idx=idx, case_id=case_id, when=when)

    # -- buckets ----------------------------------------------------------------------------
    def buckets(self) -> list[dict[str, Any]]:
        """Every bucket, most frequent first: key, symptom, stage, title, signature
        (:class:`~fuzzharness.buckets.signatures.Signature`), first_seen, last_seen, count, example_idx
        (the lowest campaign index in the bucket), example_case_id."""
        rows = store.bucket_rows(self.conn, most_frequent_first=True)
        for d in rows:
            d["signature"] = Signature.from_dict(d["signature"])
        return rows

    def bucket_stats(self) -> dict[str, dict[str, Any]]:
        """Per bucket key: the workloads and dtypes its cases were seen with, the sessions."""
        stats: dict[str, dict[str, Any]] = {}
        for key, workload, dtype, session in store.bucket_memberships(self.conn):
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
        for key in JSON_REPRO_FIELDS:
            if row.get(key) is not None and not isinstance(row[key], str):
                row[key] = json.dumps(row[key], sort_keys=True)
        row["reproduced"] = int(bool(row.get("reproduced")))
        with self.conn:
            writers.put_repro(self.conn, row)

    def repros(self) -> list[dict[str, Any]]:
        """Every stored repro, by bucket key order; ``signature``/``notes`` decoded."""
        return store.repro_records(self.conn)

    def repro(self, bucket: str) -> dict[str, Any] | None:
        return next((r for r in self.repros() if r["bucket"] == bucket), None)

    def attach(self, bucket: str, root_cause: str, evidence: str, via: str = "") -> None:
        """Place ``bucket`` in the root cause ``root_cause`` without minimizing it."""
        with self.conn:
            writers.put_attachment(self.conn, bucket, root_cause, evidence, via, time.time())

    def attachments(self) -> dict[str, dict[str, Any]]:
        """Bucket key → ``root_cause``, ``evidence``, ``via`` of each attached bucket."""
        return store.attachment_rows(self.conn)

    def set_baseline(self, bucket: str, comparison: dict[str, Any]) -> None:
        """What the baseline TVM did with ``bucket``'s example case (run --baseline:
        :class:`fuzzharness.releases.baseline.Comparison` as a dict)."""
        c = comparison
        with self.conn:
            writers.put_baseline(self.conn, bucket, c["baseline"], c["outcome"], c["status"],
                                 c.get("line", ""), time.time())

    def baseline(self) -> dict[str, dict[str, Any]]:
        """Bucket key → ``baseline``, ``outcome``, ``status``, ``line`` (empty: no baseline)."""
        return store.baseline_rows(self.conn)

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
        counts = store.bucket_counts(self.conn)
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
        return store.result_indices(self.conn)

    def count(self, below: int | None = None) -> int:
        """Stored results (those with an index below ``below`` when given)."""
        return int(store.count_results(self.conn, below=below))

    def status_counts(self) -> dict[str, int]:
        return store.status_counts(self.conn)

    def results(self, first: int | None = None, stop: int | None = None) -> Iterator[dict[str, Any]]:
        """Stored results (idx, case, verdict) by index, those in [first, stop) when given."""
        yield from store.cases(self.conn, first=first, stop=stop)

    def find_case(self, key: str) -> dict[str, Any] | None:
        """A stored case by case id (prefix allowed) or by index."""
        rows = (store.cases(self.conn, idx=int(key)) if key.isdigit()
                else store.cases(self.conn, case_id_prefix=key))
        return rows[0] if rows else None

    def close(self) -> None:
        self.conn.close()
