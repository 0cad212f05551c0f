"""The report's triage tables — root causes, the feature census, nightly runs — computed with
pandas from :class:`fuzzharness.reports.load.Campaigns` (definitions: :mod:`fuzzharness.reports.tables`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fuzzharness.reports.load import Campaigns


def root_causes(data: Campaigns) -> pd.DataFrame:
    """The verified repros grouped by root cause (the minimized trigger and culprit pass,
    :mod:`fuzzharness.buckets.root_causes`), across the campaigns: one row per root cause
    with its issue title, how many buckets minimized to it, how many were attached to it
    unminimized (their raw case had its mechanism), their cases, and one repro.  Sorted by
    cases."""
    cols = ["root_cause", "title", "buckets", "attached", "cases", "repro"]
    r = data.repros
    if r.empty or "root_cause" not in r:
        return pd.DataFrame(columns=cols)
    r = r[r["reproduced"].fillna(False).astype(bool) & r["root_cause"].notna()]
    if r.empty:
        return pd.DataFrame(columns=cols)
    counts = {(b["campaign"], b["key"]): int(b["count"]) for _, b in data.buckets.iterrows()}
    # buckets attached to a root cause unminimized (campaign/minimizing/lanes.py): folded under it
    rc_of = {(c, b): k for c, b, k in zip(r["campaign"], r["bucket"], r["root_cause"], strict=True)}
    f = data.findings
    attached: dict[str, list[int]] = {}
    if len(f):
        for _, a in f[f["repro_status"] == "attached"].iterrows():
            k = rc_of.get((a["campaign"], str(a["repro"]).rsplit("/", 1)[-1]))
            if k is not None:
                attached.setdefault(k, []).append(int(a["count"]))
    rows = []
    for key, g in r.groupby("root_cause", sort=False):
        rows.append({"root_cause": key, "title": g["issue_title"].dropna().iloc[0] if g["issue_title"].notna().any() else "",
                     "buckets": int(g["bucket"].nunique()),
                     "attached": len(attached.get(key, ())),
                     "cases": sum(counts.get((c, b), 0) for c, b in zip(g["campaign"], g["bucket"], strict=True))
                     + sum(attached.get(key, ())),
                     "repro": g["path"].dropna().iloc[0] if g["path"].notna().any() else ""})
    return pd.DataFrame(rows, columns=cols).sort_values("cases", ascending=False).reset_index(drop=True)
def feature_census(data: Campaigns) -> pd.DataFrame:
    """Feature × target: the share of the target's lowered cases that had the feature
    (all campaigns together), plus a ``lowered cases`` row; goal features first
    (:data:`fuzzharness.execution.census.GOALS`), then the rest by name."""
    from fuzzharness.execution.census import GOALS

    c = data.census
    if c.empty:
        return pd.DataFrame()
    totals = c[c["feature"] == ""].groupby("target")["cases"].sum()
    feats = c[c["feature"] != ""].groupby(["feature", "target"])["cases"].sum().unstack(
        "target", fill_value=0)
    feats = feats.reindex(columns=totals.index, fill_value=0)
    share = feats.div(totals.replace(0, np.nan), axis=1)
    share = share.reindex(list(GOALS) + sorted(set(share.index) - set(GOALS)), fill_value=0.0)
    share.index.name = "feature"
    lowered = pd.DataFrame([totals.values], index=["lowered cases"], columns=totals.index)
    return pd.concat([lowered, share])


def nightly(data: Campaigns) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What changed night by night, the campaigns in the order given: ``(nights, bugs)``.

    A *bug* is a finding bucket's known-bugs entry, else its root cause, else the bucket
    (:attr:`fuzzharness.buckets.findings.Finding.bug`).  ``nights``: per campaign its TVM,
    the distinct bugs seen, those **new tonight** (seen in no earlier campaign), **seen
    again**, **not seen tonight** (seen the night before, not tonight — gone, or not drawn:
    ``fuzzharness known check``, ``corpus check`` and ``releases`` tell a fix apart by
    running the witness or repro), and **regressions** against the campaign's baseline (``run --baseline``).  ``bugs``: per bug
    its title, the first and last night it was seen, on how many nights, and its state on the
    last night (new tonight, seen again, not seen tonight, regression)."""
    f = data.findings
    names = list(data.campaigns["campaign"])
    tvm = {c["campaign"]: (c["versions"] or {}).get("tvm", "") for _, c in data.campaigns.iterrows()}
    seen: dict[str, set[str]] = {n: set(f[f["campaign"] == n]["bug"]) if len(f) else set() for n in names}
    regress: dict[str, set[str]] = {
        n: set(f[(f["campaign"] == n) & (f["baseline"] == "regression")]["bug"]) if len(f) else set()
        for n in names}
    rows, before, last = [], set(), set()
    for n in names:
        tonight = seen[n]
        rows.append({"campaign": n, "tvm": tvm.get(n, ""), "bugs": len(tonight),
                     "new_tonight": len(tonight - before), "seen_again": len(tonight & before),
                     "not_seen_tonight": len(last - tonight), "regressions": len(regress[n])})
        before |= tonight
        last = tonight
    nights = pd.DataFrame(rows, columns=["campaign", "tvm", "bugs", "new_tonight", "seen_again",
                                         "not_seen_tonight", "regressions"])
    brows = []
    final = names[-1] if names else ""
    earlier = set().union(*(seen[n] for n in names[:-1])) if len(names) > 1 else set()
    for bug in sorted(before):
        nights_seen = [n for n in names if bug in seen[n]]
        title = f[f["bug"] == bug]["title"].iloc[0]
        if bug in regress.get(final, set()):
            state = "regression"
        elif bug not in seen.get(final, set()):
            state = "not seen tonight"
        else:
            state = "seen again" if bug in earlier else "new tonight"
        brows.append({"bug": bug, "title": title, "first_seen": nights_seen[0],
                      "last_seen": nights_seen[-1], "nights": len(nights_seen), "state": state})
    order = {"regression": 0, "new tonight": 1, "not seen tonight": 2, "seen again": 3}
    bugs = pd.DataFrame(brows, columns=["bug", "title", "first_seen", "last_seen", "nights", "state"])
    if len(bugs):
        bugs = bugs.sort_values("state", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)
    return nights, bugs
