"""Distinct bugs as plain data: what ``run --json`` and ``status --json`` report of a campaign's
root causes once known bugs are grouped (:mod:`fuzzharness.buckets.root_causes`)."""

from __future__ import annotations

from typing import Any


def distinct_bugs(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The campaign's distinct bugs as plain data (``run --json``, ``status --json``), from
    :meth:`fuzzharness.campaign.db.ResultsDB.root_causes` rows (known bugs grouped by
    :meth:`fuzzharness.buckets.known_bugs.KnownBugs.group_root_causes`): ``count`` (bugs),
    ``root_causes``,
    ``buckets`` (minimized and attached), ``verified_repros``, ``attached`` and one entry per
    bug with its best repro and its member buckets."""
    return {
        "count": len(rows),
        "root_causes": sum(len(r.get("root_causes") or [r["key"]]) for r in rows),
        "buckets": sum(len(r["buckets"]) + len(r.get("attached") or ()) for r in rows),
        "verified_repros": sum(int(r.get("repros", len(r["buckets"]))) for r in rows),
        "attached": sum(len(r.get("attached") or ()) for r in rows),
        "bugs": [{"key": r["key"], "title": r["title"], "cases": r["cases"],
                  "known": r.get("known", ""), "root_causes": r.get("root_causes", [r["key"]]),
                  "evidence": (r.get("fields") or {}).get("evidence", ""),
                  "culprit": (r.get("fields") or {}).get("culprit", ""),
                  "repro": r["path"], "buckets": r["buckets"],
                  "attached": sorted(r.get("attached") or ())} for r in rows],
    }
