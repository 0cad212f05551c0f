"""``run --baseline SPEC``: after the campaign, each new finding bucket against a baseline TVM.

The bucket's example case (and its verified repro script, for a failure made while the
schedule was drawn) runs under the baseline (:mod:`fuzzharness.releases.baseline`); the
outcome — regression, pre-existing, not comparable — is stored in the campaign database
(``baseline`` table) and put on the summary, where regressions lead.  It lives here, above
both the campaign and the releases layers, which do not know each other.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from fuzzharness.campaign.db import ResultsDB
from fuzzharness.releases.baseline import (
    NOT_COMPARABLE,
    OUTCOMES,
    REGRESSION,
    Baseline,
    Comparison,
    compare_all,
)


def against_baseline(summary, baseline: Baseline, *, timeout: float, progress: bool) -> None:
    """Compare the summary's new finding buckets with ``baseline``; store and attach the
    outcomes (``summary.baseline``: label, counts, bucket key → comparison dict)."""
    db = ResultsDB(summary.out)
    try:
        repros = {r["bucket"]: r for r in db.repros()}
        items, missing = [], {}
        for b in summary.new_buckets:
            row = db.find_case(str(b.example_idx))
            r = repros.get(b.key)
            script = (summary.out / r["path"] / "repro.py") if r and r["reproduced"] and r.get("path") else None
            script = script if script and Path(script).is_file() else None
            if row is None or row["case"] is None:
                # no stored case (a failure while the schedule was drawn): its verified repro
                # script makes the failing call, else there is nothing to run
                if script is not None:
                    items.append((b.key, None, b.signature, script))
                else:
                    missing[b.key] = Comparison(NOT_COMPARABLE, baseline.label, "no case",
                                                "no stored case and no verified repro to run")
                continue
            items.append((b.key, row["case"], b.signature, script))
        if progress:
            print(f"fuzzharness: running {len(items)} new buckets under the baseline "
                  f"{baseline.label} ...", file=sys.stderr, flush=True)
        found = {**missing, **compare_all(baseline, items, timeout=timeout)}
        for key, c in found.items():
            db.set_baseline(key, c.to_dict())
    finally:
        db.close()
    summary.baseline = as_summary(baseline.label, {k: c.to_dict() for k, c in found.items()})


def as_summary(label: str, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The summary's ``baseline`` entry from the stored rows (bucket key → comparison)."""
    return {"label": label, "counts": {k: sum(r["outcome"] == k for r in rows.values())
                                       for k in OUTCOMES},
            "buckets": rows, "regressions": sorted(k for k, r in rows.items()
                                                   if r["outcome"] == REGRESSION)}
