"""The end of a campaign for machines (``run --json``) and for a quiet terminal (``--quiet``).

``run --json`` prints one JSON object on stdout::

    {"exit_code": 1, "exit_meaning": "new TVM findings", "interrupted": "",
     "campaign": "fuzz-runs/x", "database": "fuzz-runs/x/results.sqlite", "seed": 3,
     "cases": 120, "total": 120, "elapsed": 61.2, "rate": 1.96, "restarts": 0,
     "counts": {"pass": 100, ...}, "buckets": 9, "new_buckets": 2, "known_bugs": ["..."],
     "harness_errors": 0,
     "new": [{"key", "title", "symptom", "stage", "severity", "count", "example_idx",
              "repro": "repros/<key>", "repro_status", "repro_note", ...}],
     "distinct_bugs": {"count", "buckets", "verified_repros", "attached",
                       "bugs": [{"key", "title", "cases", "known", "root_causes",
                                 "evidence", "culprit", "repro", "buckets", "attached"}]},
     "minimize": "<the minimization report, text>",
     "baseline": null | {"label": "TVM 0.26.0", "counts": {"regression": 1, ...},
                         "regressions": [bucket keys], "buckets": {key: {"outcome", "status", ...}}},
     "replay": "fuzzharness replay fuzz-runs/x <case index or id>"}

``new`` comes from :func:`fuzzharness.buckets.findings.campaign_findings` (most severe first;
``repro`` relative to the campaign directory), the same rows the report leads with.
"""

from __future__ import annotations

from typing import Any

from fuzzharness.buckets.findings import campaign_findings
from fuzzharness.buckets.root_causes import distinct_bugs
from fuzzharness.campaign.driver import CampaignSummary
from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_HARNESS, EXIT_OK
from fuzzharness.core.storage import connect_readonly

EXIT_MEANINGS = {EXIT_OK: "nothing new", EXIT_FINDINGS: "new TVM findings",
                 EXIT_HARNESS: "the harness failed (interrupted or harness errors)"}


def _findings(s: CampaignSummary):
    conn = connect_readonly(s.out / "results.sqlite")
    try:
        return campaign_findings(conn, _known(s), s.out)
    finally:
        conn.close()


def _known(s: CampaignSummary):
    from fuzzharness.buckets.known_bugs import KnownBugs

    return KnownBugs.load(s.known_source or None)


def summary_json(s: CampaignSummary) -> dict[str, Any]:
    findings = _findings(s)
    return {
        "exit_code": s.exit_code, "exit_meaning": EXIT_MEANINGS.get(s.exit_code, ""),
        "interrupted": s.interrupted, "campaign": str(s.out),
        "database": str(s.out / "results.sqlite"), "seed": s.seed, "cases": s.cases,
        "total": s.total, "elapsed": round(s.elapsed, 2), "rate": round(s.rate, 3),
        "restarts": s.restarts, "counts": s.counts, "buckets": len(s.findings),
        "new_buckets": len(s.new_buckets),
        "known_bugs": sorted({b.known.id for b in s.findings if b.known is not None}),
        "harness_errors": sum(b.count for b in s.harness_errors),
        "new": [f.to_dict() for f in findings if f.is_new],
        "distinct_bugs": distinct_bugs(s.root_causes),
        "minimize": s.minimized,
        "baseline": s.baseline or None,
        "replay": f"fuzzharness replay {s.out} <case index or id>",
    }


def summary_quiet(s: CampaignSummary, top: int = 10) -> str:
    """A few lines: the counts, the new findings with their repro, where the results are."""
    findings = [f for f in _findings(s) if f.is_new]
    head = (f"{s.cases} cases, {sum(b.count for b in s.findings)} findings in "
            f"{len(s.findings)} buckets, {len(findings)} new")
    if s.harness_errors:
        head += f", {sum(b.count for b in s.harness_errors)} harness errors"
    lines = [head + f"  ({s.out})"]
    for f in findings[:top]:
        repro = f.repro if f.repro_status == "reproduced" else f"no repro: {f.repro_note or f.repro_status}"
        lines.append(f"  NEW {f.severity:<7}{f.count:>5} × {f.title[:100]}  [{repro}]")
    if len(findings) > top:
        lines.append(f"  ... {len(findings) - top} more: fuzzharness status {s.out}")
    return "\n".join(lines)
