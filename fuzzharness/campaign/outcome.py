"""What a campaign ended with, as data: its buckets (:class:`BucketReport`) and its summary
(:class:`CampaignSummary`, with the exit status it implies).  The driver
(:mod:`fuzzharness.campaign.driver`) fills them; the renderers
(:mod:`fuzzharness.campaign.summary`: text, ``--quiet``, ``--json``) print them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from fuzzharness.buckets.findings import known_of_bucket, repro_for
from fuzzharness.buckets.known_bugs import KnownBug, KnownBugs
from fuzzharness.buckets.signatures import Signature
from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_HARNESS, EXIT_OK


@dataclasses.dataclass
class BucketReport:
    key: str
    title: str
    signature: Signature
    count: int  # results in the whole campaign
    example_idx: int
    known: KnownBug | None
    workloads: list[str]
    dtypes: list[str]
    confirmed: bool = True  # False: "probably known" (a raw match the minimized case must confirm)
    root_cause: str = ""  # key of its minimized case's root cause (verified repros only)
    minimized: bool = False  # matched by its minimized case (else by its raw signature)
    resembles: KnownBug | None = None  # new, but its raw signature matched this known bug

    @property
    def is_finding(self) -> bool:
        return self.signature.is_finding

    @property
    def is_note(self) -> bool:
        return self.signature.is_note

    @property
    def is_new(self) -> bool:
        return (self.is_finding or self.is_note) and self.known is None

    @property
    def probably_known(self) -> bool:
        return self.is_finding and self.known is not None and not self.confirmed


@dataclasses.dataclass
class CampaignSummary:
    out: Path
    seed: int
    cases: int  # results stored by this session
    total: int  # results in the database
    elapsed: float
    counts: dict[str, int]  # this session
    restarts: int
    buckets: list[BucketReport]  # the whole campaign
    known_source: str = ""
    recycled: int = 0
    #: TVM versions the workers reported that differ from the campaign's recorded one (a
    #: misconfigured --tvm-python environment would otherwise go unnoticed)
    foreign_tvm: list[str] = dataclasses.field(default_factory=list)
    coverage: list[tuple] = dataclasses.field(default_factory=list)  # engine/coverage.py rows
    confirmations: dict[str, int] = dataclasses.field(default_factory=dict)  # outcome → count
    minimized: str = ""  # the report of the minimization of new buckets (fuzzharness.minimize)
    interrupted: str = ""  # the phase a Ctrl-C/SIGTERM stopped: "cases", "minimizing" ("": none)
    root_causes: list[dict] = dataclasses.field(default_factory=list)  # ResultsDB.root_causes rows
    strict_order: bool = False  # new notes fail the campaign too (--strict-order)
    #: run --baseline: label, counts, bucket key → comparison (fuzzharness.releases.baseline)
    baseline: dict = dataclasses.field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.cases / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def findings(self) -> list[BucketReport]:
        return [b for b in self.buckets if b.is_finding]

    @property
    def new_buckets(self) -> list[BucketReport]:
        """New finding buckets (what is minimized and fails the campaign)."""
        return [b for b in self.buckets if b.is_new and b.is_finding]

    @property
    def notes(self) -> list[BucketReport]:
        """Note buckets (order_preserving_divergence), listed apart."""
        return [b for b in self.buckets if b.is_note]

    @property
    def harness_errors(self) -> list[BucketReport]:
        return [b for b in self.buckets if not b.is_finding and not b.is_note]

    @property
    def exit_code(self) -> int:
        """3 interrupted (the answer is incomplete), else 1 new findings (or new notes with
        --strict-order), else 3 harness errors, else 0 (fuzzharness.core.errors states the
        contract)."""
        if self.interrupted:
            return EXIT_HARNESS
        new_notes = self.strict_order and any(b.is_new for b in self.notes)
        if self.new_buckets or new_notes:
            return EXIT_FINDINGS
        return EXIT_HARNESS if self.harness_errors else EXIT_OK


def bucket_reports(db: Any, known: KnownBugs, tvm_version: str | None) -> list[BucketReport]:
    """Every bucket of ``db`` (a :class:`fuzzharness.campaign.db.ResultsDB`) with what it is:
    a known bug (by its verified minimized repro's root cause when it has one, else by its
    raw signature: known, or only probably known), or new."""
    stats = db.bucket_stats()
    repros = {r["bucket"]: r for r in db.repros()}
    via = {bucket: a["via"] for bucket, a in db.attachments().items()}
    out = []
    for b in db.buckets():
        sig = b["signature"]
        st = stats.get(b["key"], {})
        m, root, minimized, raw = None, "", False, None
        if sig.is_finding or sig.is_note:
            raw = known.classify(sig, tvm_version)
            m, root, minimized = known_of_bucket(known, sig, repro_for(b["key"], repros, via),
                                                 tvm_version)
        out.append(BucketReport(
            b["key"], b["title"], sig, b["count"], b["example_idx"],
            m.bug if m is not None else None,
            sorted(st.get("workloads", ())), sorted(st.get("dtypes", ())),
            confirmed=m is None or m.confirmed, root_cause=root, minimized=minimized,
            resembles=raw.bug if m is None and raw is not None else None))
    return out
