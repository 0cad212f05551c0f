"""The end of a campaign, rendered: the terminal summary (:func:`format_summary`), a quiet
terminal (``--quiet``: :func:`summary_quiet`) and machines (``run --json``: :func:`summary_json`).

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

from fuzzharness.buckets.distinct import distinct_bugs
from fuzzharness.buckets.findings import SEVERITIES, campaign_findings, severity
from fuzzharness.campaign import coverage
from fuzzharness.campaign.outcome import BucketReport, CampaignSummary
from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_HARNESS, EXIT_OK
from fuzzharness.core.storage import connect_readonly
from fuzzharness.core.verdict import Status

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


def format_summary(s: CampaignSummary, *, limit: int = 15, coverage_table: bool = False) -> str:
    """The terminal summary; the coverage tables only with ``coverage_table`` (else one line:
    they are in the database, `fuzzharness status DIR --coverage` and the report)."""
    lines = [
        f"campaign seed {s.seed}: {s.cases} cases in {s.elapsed:.1f} s "
        f"({s.rate:.1f} cases/s), {s.total} in the database, {s.restarts} worker restarts"
        + (f", {s.recycled} workers recycled near their memory limit" if s.recycled else ""),
    ]
    order = [st.value for st in Status]
    for status in sorted(s.counts, key=order.index):
        if s.counts[status]:
            lines.append(f"  {status:<28} {s.counts[status]:>7}")
    if s.confirmations:  # campaign/confirm.py: every finding re-run alone in a fresh worker
        lines.append("failures re-run alone in a fresh worker: " + ", ".join(
            f"{n} {outcome}" for outcome, n in sorted(s.confirmations.items())))
    base = (s.baseline or {}).get("buckets") or {}
    if s.baseline:  # what changed leads: regressions against the baseline TVM first
        counts = s.baseline["counts"]
        lines.append(f"against the baseline {s.baseline['label']}: " + ", ".join(
            f"{n} {k}" for k, n in counts.items()) + " (new buckets re-run there)")
    if s.root_causes:  # what a maintainer files leads: one entry per distinct bug
        lines.append(format_root_causes(s.root_causes, limit=limit))
    findings = s.findings
    if findings:
        new = s.new_buckets
        n_cases = sum(b.count for b in findings)
        by_bug: dict[str, list[BucketReport]] = {}
        for b in findings:
            if b.known is not None:
                by_bug.setdefault(b.known.id, []).append(b)
        lines.append(f"failures in the campaign: {n_cases} cases in {len(findings)} buckets — "
                     f"{len(new)} new buckets, {len(by_bug)} known bugs")
        # most severe first (a silent wrong answer before a loud compile error), then by count
        for b in sorted(new, key=lambda b: ((base.get(b.key) or {}).get("outcome") != "regression",
                                             SEVERITIES.index(severity(b.signature.symptom,
                                                                      b.signature.stage)),
                                             -b.count, b.example_idx))[:limit]:
            seen = "; ".join(x for x in (",".join(b.workloads), ",".join(b.dtypes)) if x)
            cmp = base.get(b.key)
            tag = {"regression": "REGRESSION", "pre-existing": "NEW, pre-existing",
                   "not comparable": "NEW, not comparable"}.get((cmp or {}).get("outcome", ""), "NEW")
            lines.append(f"  {tag:<5} {b.count:>5} × {b.title}")
            lines.append(f"        first: case #{b.example_idx}" + (f"; seen with {seen}" if seen else "")
                         + (f"; resembles known bug {b.resembles.id}, but its minimized trigger "
                            "is not that entry's" if b.resembles is not None else ""))
        if len(new) > limit:
            lines.append(f"  ... {len(new) - limit} more new buckets (see the buckets table)")
        for group in sorted(by_bug.values(), key=lambda g: -sum(b.count for b in g)):
            bug = group[0].known
            first = min(b.example_idx for b in group)
            sure = [b for b in group if b.confirmed]
            label = "known" if sure else "probably known"
            lines.append(f"  {label} {sum(b.count for b in group):>5} × {bug.id} ({bug.link or bug.status}): "
                         f"{bug.title}")
            unsure = len(group) - len(sure)
            lines.append(f"        {len(group)} bucket{'s' if len(group) > 1 else ''}; first: case #{first}"
                         + (f"; {unsure} only probably (a raw match, not confirmed by a minimized case)"
                            if unsure else ""))
    notes = s.notes
    if notes:  # order_preserving_divergence: recorded, not failures unless --strict-order
        lines.append(f"notes ({'failing the run: --strict-order' if s.strict_order else 'not failures; --strict-order makes new ones fail'}): "
                     f"{sum(b.count for b in notes)} cases in {len(notes)} buckets — order-preserving "
                     "schedules whose output differs bitwise from TVM's unscheduled build within the bound")
        for b in sorted(notes, key=lambda b: (-b.count, b.example_idx))[:limit]:
            tag = "NEW " if b.known is None else "known"
            lines.append(f"  {tag} {b.count:>5} × {b.title}  (first: case #{b.example_idx})")
    harness = s.harness_errors
    if harness:
        lines.append(f"harness errors (bugs in fuzzharness, not in TVM): "
                     f"{sum(b.count for b in harness)} cases in {len(harness)} buckets")
        for b in harness[:limit]:
            lines.append(f"  {b.count:>5} × {b.title}  (first: case #{b.example_idx})")
    if s.coverage and coverage_table:
        lines.append(coverage.format_table(s.coverage))
    elif s.coverage:
        lines.append(coverage.one_line(s.coverage) + f" (all of it: fuzzharness status {s.out} --coverage)")
    if s.foreign_tvm:
        lines.append(f"WARNING: workers ran TVM {', '.join(s.foreign_tvm)}, not the TVM the "
                     "campaign records (check --tvm-python and PYTHONPATH)")
    if s.minimized:
        lines.append(s.minimized)
    lines.append(f"results: {s.out / 'results.sqlite'}")
    lines.append(f"replay one: fuzzharness replay {s.out} <case index or id>")
    return "\n".join(lines)


def format_root_causes(rows: list[dict], *, limit: int = 15) -> str:
    """``N distinct bugs (from M buckets, K verified repros)`` and one entry per root cause
    (ResultsDB.root_causes), its member buckets folded under it."""
    d = distinct_bugs(rows)
    n_buckets, n_repros, n_attached = d["buckets"], d["verified_repros"], d["attached"]
    lines = [f"distinct bugs: {len(rows)} ({d['root_causes']} root causes, from {n_buckets} bucket"
             f"{'s' if n_buckets != 1 else ''}, {n_repros} verified repro{'s' if n_repros != 1 else ''}"
             + (f", {n_attached} bucket{'s' if n_attached != 1 else ''} attached unminimized"
                if n_attached else "") + ")"]
    for r in rows[:limit]:
        evidence = (r.get("fields") or {}).get("evidence", "")
        attached = r.get("attached") or {}
        lines.append(f"  {r['cases']:>5} × {r['title'][:110]}")
        lines.append(f"        {len(r['buckets'])} minimized bucket{'s' if len(r['buckets']) > 1 else ''}"
                     + (f" + {len(attached)} attached" if attached else "")
                     + (f"; identity by {evidence.replace('_', ' ')}" if evidence else "")
                     + f"; {r['length']} trace instructions; {r['path']}")
    if len(rows) > limit:
        lines.append(f"  ... {len(rows) - limit} more (ResultsDB.root_causes)")
    return "\n".join(lines)
