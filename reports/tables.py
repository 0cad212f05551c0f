"""The report's tables, computed with pandas from :class:`fuzzharness.reports.load.Campaigns`.

Each function is pure (frames in, a frame out) and works on one campaign or many; where
campaigns are merged the ``campaign`` column says which rows came from where.

Definitions used throughout:

* a **finding** is a case whose status is a TVM finding (:data:`fuzzharness.core.verdict.FINDINGS`:
  wrong_result, nan_inf, reference_mismatch, compile_error, crash, timeout);
  order_preserving_divergence is a note, not a finding;
  harness errors are bugs of this harness and are never counted as TVM's;
* the **failure rate** of a primitive is findings / cases among the cases that applied it
  (a case counts once for every primitive it applied, so rates do not add up to the total);
* the **error/bound ratio** of a passing case is its worst element's |actual − reference| /
  bound (:mod:`fuzzharness.oracles.compare`); 0 means bitwise equal to the reference as the oracle sees
  it (every exact-integer pass), 1 is the bound itself;
* a bucket is **known** when the known-bugs file matches its signature, else **new**.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fuzzharness.buckets.known_bugs import KnownBugs
from fuzzharness.buckets.signatures import Signature
from fuzzharness.core.verdict import FINDINGS, Status
from fuzzharness.reports.load import Campaigns

STATUS_ORDER = [s.value for s in Status]
FINDING_VALUES = sorted(s.value for s in FINDINGS)


def is_finding(status: pd.Series) -> pd.Series:
    return status.isin(FINDING_VALUES)


def verdict_matrix(data: Campaigns) -> pd.DataFrame:
    """Cases by workload × dtype × target (rows) × verdict status (columns), with totals."""
    r = data.results
    if r.empty:
        return pd.DataFrame()
    keys = ["workload", "dtype", "target"]
    frame = r.assign(**{k: r[k].fillna("(generation failed)") for k in keys})
    m = frame.groupby(keys + ["status"]).size().unstack("status", fill_value=0)
    m = m[[s for s in STATUS_ORDER if s in m.columns]]
    m["cases"] = m.sum(axis=1)
    m["findings"] = m[[c for c in m.columns if c in FINDING_VALUES]].sum(axis=1)
    return m.sort_index()


def status_counts(data: Campaigns) -> pd.Series:
    r = data.results
    counts = r["status"].value_counts()
    return counts.reindex([s for s in STATUS_ORDER if s in counts.index])


#: how the failure-rate table splits findings (every finding status is in exactly one)
FINDING_GROUPS = {
    "wrong": ("wrong_result", "nan_inf"),
    "reference": ("reference_mismatch",),
    "compile": ("compile_error",),
    "crash": ("crash", "timeout"),
}
RATE_COLUMNS = ["cases", "findings", "rate", *FINDING_GROUPS]


def failure_rate_by_primitive(data: Campaigns) -> pd.DataFrame:
    """Per schedule primitive: cases that applied it, findings among them, the rate, and the
    findings split into :data:`FINDING_GROUPS` (wrong answers — wrong_result, nan_inf —,
    reference mismatches, compile errors, crashes and timeouts).

    Only real primitives: a case that applied none (an unscheduled case) or whose case was
    not stored (TVM failed while its schedule was drawn) is counted by no row here."""
    r = data.results
    if r.empty:
        return pd.DataFrame(columns=RATE_COLUMNS)
    e = r[["status", "primitives"]].explode("primitives").dropna(subset=["primitives"])
    if e.empty:
        return pd.DataFrame(columns=RATE_COLUMNS)
    e["finding"] = is_finding(e["status"])
    agg = {"cases": ("status", "size"), "findings": ("finding", "sum")}
    for name, statuses in FINDING_GROUPS.items():
        e[name] = e["status"].isin(statuses)
        agg[name] = (name, "sum")
    g = e.groupby("primitives").agg(**agg)
    g["rate"] = g["findings"] / g["cases"]
    g.index.name = "primitive"
    return g[RATE_COLUMNS].sort_values(["rate", "cases"], ascending=[False, False])


def findings_table(data: Campaigns) -> pd.DataFrame:
    """The findings of every campaign (``data.findings``, one query:
    :func:`fuzzharness.buckets.findings.campaign_findings`) merged by bucket key: counts
    summed, the campaigns that saw it, the first repro any of them has.  Most severe first,
    new before known, then by count.  ``repro_path`` is absolute (the report makes it
    relative to its own file)."""
    f = data.findings
    cols = ["key", "severity", "new", "count", "title", "symptom", "stage", "first_seen",
            "campaigns", "example", "example_campaign", "known_id", "known_link", "repro_path",
            "repro_status", "repro_note", "baseline"]
    if f.empty:
        return pd.DataFrame(columns=cols)
    rank = {"reproduced": 0, "not reproduced": 1, "not recorded": 2, "not minimized": 3}
    rows = []
    for key, g in f.groupby("key", sort=False):
        g = g.sort_values("first_seen")
        best = g.iloc[int(np.argmin([rank.get(s, 9) for s in g["repro_status"]]))]
        first = g.iloc[0]
        rows.append({
            "key": key, "severity": first["severity"], "new": bool(first["new"]),
            "count": int(g["count"].sum()), "title": first["title"], "symptom": first["symptom"],
            "stage": first["stage"], "first_seen": _date(float(g["first_seen"].min())),
            "campaigns": ", ".join(dict.fromkeys(g["campaign"])),
            "example": int(first["example_idx"]), "example_campaign": first["root"],
            "known_id": first["known_id"], "known_link": first["known_link"],
            "repro_path": str(Path(best["root"]) / best["repro"]) if best["repro"] else "",
            "repro_status": best["repro_status"], "repro_note": best["repro_note"],
            "baseline": next((b for b in g["baseline"] if b), ""),
        })
    out = pd.DataFrame(rows, columns=cols)
    order = {"high": 0, "medium": 1, "low": 2, "triage": 3}
    out["_s"] = out["severity"].map(order)
    out["_r"] = out["baseline"] != "regression"  # regressions against a baseline first
    out = out.sort_values(["_r", "_s", "new", "count"], ascending=[True, True, False, False])
    return out.drop(columns=["_s", "_r"]).reset_index(drop=True)


def known_bugs_seen(findings: pd.DataFrame) -> pd.DataFrame:
    """Known bugs among the findings: bug, link, buckets, cases, campaigns."""
    k = findings[~findings["new"]] if not findings.empty else findings
    if k.empty:
        return pd.DataFrame(columns=["bug", "link", "buckets", "cases", "campaigns"])
    g = k.groupby(["known_id", "known_link"], sort=False).agg(
        buckets=("key", "size"), cases=("count", "sum"),
        campaigns=("campaigns", lambda c: ", ".join(dict.fromkeys(", ".join(c).split(", ")))))
    g = g.reset_index().rename(columns={"known_id": "bug", "known_link": "link"})
    return g.sort_values("cases", ascending=False).reset_index(drop=True)


def trends(data: Campaigns, summary: pd.DataFrame) -> pd.DataFrame:
    """Nightly history, one row per campaign in the order given: date, cases, cases/s,
    findings, new and known finding buckets, and coverage — schedule primitives accepted at
    least once and workload/dtype pairs judged (from the stored coverage table)."""
    rows = []
    for _, c in summary.iterrows():
        name = c["campaign"]
        f = data.findings[data.findings["campaign"] == name]
        cov = data.coverage[data.coverage["campaign"] == name]
        prims = cov[cov["axis"] == "primitive"]
        pairs = cov[cov["axis"] == "workload/dtype"]
        rows.append({
            "campaign": name, "date": c["date"], "cases": c["cases"],
            "cases_per_s": c["cases_per_s"], "findings": c["findings"],
            "new_buckets": int(f["new"].sum()) if len(f) else 0,
            "known_buckets": int((~f["new"].astype(bool)).sum()) if len(f) else 0,
            "high_severity_new": int((f["new"].astype(bool) & (f["severity"] == "high")).sum())
            if len(f) else 0,
            "primitives_accepted": int((prims["accepted"] > 0).sum()) if len(prims) else None,
            "pairs_judged": int((pairs["verdict"] > 0).sum()) if len(pairs) else None,
        })
    return pd.DataFrame(rows)


def campaign_start(data: Campaigns) -> dict[str, float]:
    """When each campaign started (its first session; else its first result)."""
    start: dict[str, float] = {}
    for name, g in data.results.groupby("campaign"):
        start[name] = float(g["finished"].min() - (g["elapsed"].fillna(0).iloc[0] if len(g) else 0))
    for name, g in data.sessions.groupby("campaign"):
        if len(g):
            start[name] = float(g["started"].min())
    return start


def throughput(data: Campaigns, points: int = 40) -> pd.DataFrame:
    """Cases finished per second over time since each campaign's start (long format:
    campaign, t [s], cases_per_s); bins of equal width, about ``points`` per campaign."""
    r = data.results
    rows = []
    starts = campaign_start(data)
    for name, g in r.groupby("campaign"):
        t = g["finished"].to_numpy(dtype=float) - starts.get(name, float(g["finished"].min()))
        span = max(float(t.max()), 1.0)
        width = max(1.0, math.ceil(span / points))
        edges = np.arange(0.0, span + width, width)
        counts, _ = np.histogram(t, bins=edges)
        for left, n in zip(edges[:-1], counts, strict=True):
            rows.append({"campaign": name, "t": left + width / 2, "cases_per_s": n / width})
    return pd.DataFrame(rows, columns=["campaign", "t", "cases_per_s"])


def campaign_summary(data: Campaigns, buckets: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per campaign (nightly history): seed, date, cases, wall time, cases/s, pass,
    findings, buckets and new buckets (``buckets``: :func:`bucket_list` output)."""
    rows = []
    for _, c in data.campaigns.iterrows():
        name = c["campaign"]
        r = data.results[data.results["campaign"] == name]
        s = data.sessions[data.sessions["campaign"] == name]
        wall = _wall_time(r, s)
        b = data.buckets[data.buckets["campaign"] == name]
        finding_keys = set(b.loc[b["symptom"].isin(FINDING_VALUES), "key"])
        new = None
        if buckets is not None and not buckets.empty:
            new = int(buckets[buckets["key"].isin(finding_keys) & (buckets["known"] == "new")]
                      .shape[0])
        rows.append({
            "campaign": name, "seed": c["seed"],
            "date": _date(c["created"]) if c["created"] is not None else "",
            "target": (c["settings"].get("generation") or {}).get("target", {}).get("kind", "")
            if isinstance(c["settings"], dict) else "",
            "tvm": (c["versions"] or {}).get("tvm", "") if isinstance(c["versions"], dict) else "",
            "cases": len(r), "wall_s": round(wall, 1),
            "cases_per_s": round(len(r) / wall, 2) if wall > 0 else None,
            "pass": int((r["status"] == "pass").sum()),
            "findings": int(is_finding(r["status"]).sum()),
            "harness_errors": int((r["status"] == "harness_error").sum()),
            "buckets": len(finding_keys), "new_buckets": new,
        })
    return pd.DataFrame(rows)


def _wall_time(r: pd.DataFrame, s: pd.DataFrame) -> float:
    """Seconds the campaign ran: the sum of its sessions (a resumed one has several)."""
    total = 0.0
    for _, sess in s.iterrows():
        done = r.loc[r["session"] == sess["id"], "finished"]
        end = sess["ended"] if pd.notna(sess["ended"]) else (done.max() if len(done) else None)
        if end is not None and pd.notna(end):
            total += float(end) - float(sess["started"])
    if total <= 0 and len(r):
        total = float(r["finished"].max() - r["finished"].min())
    return total


def _date(ts: float | None) -> str:
    if ts is None or (isinstance(ts, float) and math.isnan(ts)):
        return ""
    return pd.Timestamp(ts, unit="s").strftime("%Y-%m-%d %H:%M")


def passing_ratios(data: Campaigns) -> pd.DataFrame:
    """Passing cases with their error/bound ratio: campaign, workload, dtype, ratio."""
    r = data.results
    p = r[(r["status"] == "pass") & r["ratio"].notna()]
    return p[["campaign", "workload", "dtype", "target", "ratio"]].reset_index(drop=True)


def ratio_distribution(data: Campaigns) -> pd.DataFrame:
    """How close passing cases come to the bound, per dtype: count, bitwise-equal share,
    quantiles of the ratio (0 … 1) and the closest call."""
    p = passing_ratios(data)
    if p.empty:
        return pd.DataFrame(columns=["passes", "exact", "median", "p90", "p99", "max"])
    g = p.groupby("dtype")["ratio"]
    out = pd.DataFrame({
        "passes": g.size(),
        "exact": g.apply(lambda s: int((s == 0).sum())),
        "median": g.quantile(0.5), "p90": g.quantile(0.9), "p99": g.quantile(0.99),
        "max": g.max(),
    })
    total = p["ratio"]
    out.loc["(all)"] = [len(total), int((total == 0).sum()), total.quantile(0.5),
                        total.quantile(0.9), total.quantile(0.99), total.max()]
    return out


def bucket_list(data: Campaigns, known_bugs: Any = None) -> pd.DataFrame:
    """Every bucket across the campaigns, merged by key: counts, first/last seen, the
    campaigns that saw it, known (bug id + link) or new, and the repro written for it.

    ``known``: ``"new"``, ``"known"`` or ``"harness"`` (a bug of this harness, never TVM's).
    Sorted: new first, then by count.
    """

    b = data.buckets
    cols = ["key", "title", "symptom", "stage", "count", "first_seen", "last_seen", "campaigns",
            "known", "bug", "link", "example", "repro", "reproduced"]
    if b.empty:
        return pd.DataFrame(columns=cols)
    bugs = known_bugs if known_bugs is not None else KnownBugs.load()
    tvm = {c["campaign"]: (c["versions"] or {}).get("tvm") for _, c in data.campaigns.iterrows()}
    repros = {(r["campaign"], r["bucket"]): r for _, r in data.repros.iterrows()}
    rows = []
    for key, g in b.groupby("key", sort=False):
        g = g.sort_values("first_seen")
        first = g.iloc[0]
        sig = Signature.from_dict(first["signature"])
        if first["symptom"] == Status.HARNESS_ERROR.value:
            known, bug = "harness", None
        else:
            bug = bugs.match(sig, tvm.get(first["campaign"]))
            known = "known" if bug is not None else "new"
        repro = next((repros[(c, key)] for c in g["campaign"] if (c, key) in repros), None)
        rows.append({
            "key": key, "title": first["title"], "symptom": first["symptom"],
            "stage": first["stage"], "count": int(g["count"].sum()),
            "first_seen": _date(float(g["first_seen"].min())),
            "last_seen": _date(float(g["last_seen"].max())),
            "campaigns": ", ".join(dict.fromkeys(g["campaign"])),
            "known": known, "bug": bug.id if bug is not None else "",
            "link": (bug.link or bug.status) if bug is not None else "",
            "example": f"{first['campaign']}#{int(first['example_idx'])}",
            "repro": (repro["path"] if repro is not None and repro["path"] else ""),
            "reproduced": repro["reproduced"] if repro is not None else None,
        })
    out = pd.DataFrame(rows, columns=cols)
    order = {"new": 0, "known": 1, "harness": 2}
    return out.sort_values(["known", "count"], key=lambda s: s.map(order) if s.name == "known"
                           else -s).reset_index(drop=True)
