"""The report's plots: matplotlib figures rendered to inline SVG text.

Why matplotlib: it is what pandas plots with and what the field uses; SVG keeps the HTML
self-contained and text-searchable (``svg.fonttype = none``: labels stay text), with no
JavaScript and no network.  It is an optional dependency (``pip install
tvm-fuzzharness[report]``): without it every function here returns None and the report
says that plots need it — the tables are complete either way.

Every function takes frames from :mod:`fuzzharness.reports.tables` and returns ``<svg …>…</svg>`` (no
XML prologue, ready to inline) or None when there is nothing to plot.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd

#: one colour per verdict status — every status has one (tests/test_reports.py checks it
#: against fuzzharness.core.verdict.Status), shared by the plots and the HTML badges
STATUS_COLORS = {
    "pass": "#4c9a5b", "inconclusive": "#b8b8b8", "schedule_rejected": "#d9d9d9",
    "wrong_result": "#c0392b", "nan_inf": "#8e44ad", "order_preserving_divergence": "#e67e22",
    "reference_mismatch": "#d35400", "compile_error": "#e6b422", "crash": "#2c3e50",
    "timeout": "#7f8c8d", "harness_error": "#3498db",
}
#: the failure-rate groups of fuzzharness.reports.tables.FINDING_GROUPS: label and colour
GROUP_STYLE = {
    "wrong": ("wrong answer / nan / divergence", STATUS_COLORS["wrong_result"]),
    "reference": ("reference mismatch", STATUS_COLORS["reference_mismatch"]),
    "compile": ("compile error", STATUS_COLORS["compile_error"]),
    "crash": ("crash / timeout", STATUS_COLORS["crash"]),
}
SEVERITY_COLORS = {"high": "#c0392b", "medium": "#e67e22", "low": "#e6b422", "triage": "#d35400"}


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=96, layout="constrained")
    return fig


def _svg(fig, name: str) -> str:
    import matplotlib

    buf = io.StringIO()
    # labels stay text; ids salted per figure so that several inline SVGs never share one
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def verdicts(matrix: pd.DataFrame) -> str | None:
    """Stacked horizontal bars: cases per workload/dtype/target, split by verdict."""
    if not available() or matrix.empty:
        return None
    statuses = [c for c in matrix.columns if c in STATUS_COLORS]
    labels = [" / ".join(dict.fromkeys(map(str, idx))) for idx in matrix.index]
    fig = _figure(9, 0.8 + 0.32 * len(labels))
    ax = fig.add_subplot()
    left = np.zeros(len(labels))
    y = np.arange(len(labels))
    for s in statuses:
        vals = matrix[s].to_numpy(dtype=float)
        if vals.sum() == 0:
            continue
        ax.barh(y, vals, left=left, color=STATUS_COLORS[s], label=s, height=0.7)
        left += vals
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("cases")
    ax.set_title("verdicts by workload / dtype / target")
    fig.legend(fontsize=7, loc="outside lower center", ncols=5)
    return _svg(fig, "verdicts")


def failure_rates(rates: pd.DataFrame, top: int = 25, min_cases: int = 3) -> str | None:
    """Horizontal bars: findings / cases per primitive (those with ≥ ``min_cases``)."""
    if not available() or rates.empty:
        return None
    r = rates[rates["cases"] >= min_cases].head(top)
    if r.empty:
        return None
    fig = _figure(9, 0.8 + 0.28 * len(r))
    ax = fig.add_subplot()
    y = np.arange(len(r))
    left = np.zeros(len(r))
    for group, (label, color) in GROUP_STYLE.items():
        share = (r[group] / r["cases"]).to_numpy(dtype=float)
        ax.barh(y, share, left=left, color=color, label=label, height=0.7)
        left += share
    for yi, (rate, n) in enumerate(zip(r["rate"], r["cases"], strict=True)):
        ax.text(rate + 0.005, yi, f"{rate:.0%} of {n}", va="center", fontsize=7)
    ax.set_yticks(y, list(r.index), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, min(1.0, float(r["rate"].max()) * 1.25 + 0.05))
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    ax.set_xlabel("share of the cases that applied the primitive")
    ax.set_title("failure rate by schedule primitive")
    fig.legend(fontsize=7, loc="outside lower center", ncols=4)
    return _svg(fig, "failure_rates")


def throughput(frame: pd.DataFrame) -> str | None:
    """Cases per second over the campaign's time, one line per campaign."""
    if not available() or frame.empty:
        return None
    fig = _figure(9, 3.2)
    ax = fig.add_subplot()
    for name, g in frame.groupby("campaign", sort=False):
        ax.plot(g["t"], g["cases_per_s"], marker=".", label=str(name))
    ax.set_xlabel("seconds since the campaign started")
    ax.set_ylabel("cases / s")
    ax.set_ylim(bottom=0)
    ax.set_title("throughput over time")
    if frame["campaign"].nunique() > 1:
        ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _svg(fig, "throughput")


def ratios(passing: pd.DataFrame) -> str | None:
    """Histogram of log10(error/bound) of passing cases per dtype; ratio 0 counted apart."""
    if not available() or passing.empty:
        return None
    fig = _figure(9, 3.6)
    ax = fig.add_subplot()
    pos = passing[passing["ratio"] > 0]
    lo = math.floor(np.log10(pos["ratio"].min())) if len(pos) else -6
    bins = np.linspace(max(lo, -12), 0.0, 40)
    for dtype, g in passing.groupby("dtype"):
        vals = np.log10(g.loc[g["ratio"] > 0, "ratio"].clip(lower=10.0 ** bins[0]))
        exact = int((g["ratio"] == 0).sum())
        ax.hist(vals, bins=bins, histtype="step", linewidth=1.5,
                label=f"{dtype}: {len(g)} passes, {exact} bitwise equal (not shown)")
    ax.axvline(0.0, color="#c0392b", linestyle="--", linewidth=1)
    ax.text(-0.05, ax.get_ylim()[1] * 0.95, "bound", color="#c0392b", ha="right", va="top",
            fontsize=8)
    ax.set_xlabel("log10(worst |error| / bound) of passing cases   (0 = at the bound)")
    ax.set_ylabel("cases")
    ax.set_title("how close passing cases come to the error bound")
    ax.legend(fontsize=7, loc="upper left")
    return _svg(fig, "ratios")


def history(trends: pd.DataFrame) -> str | None:
    """Nightly history (several campaigns): new and known finding buckets per campaign
    (bars), throughput and coverage (lines) — :func:`fuzzharness.reports.tables.trends`."""
    if not available() or len(trends) < 2:
        return None
    fig = _figure(9, 5.2)
    ax, cov = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    x = np.arange(len(trends))
    ax.bar(x - 0.2, trends["new_buckets"], width=0.4, color=STATUS_COLORS["wrong_result"],
           label="new finding buckets")
    ax.bar(x + 0.2, trends["known_buckets"], width=0.4, color="#7f8c8d",
           label="known-bug buckets")
    ax.set_ylabel("buckets")
    ax2 = ax.twinx()
    ax2.plot(x, trends["cases_per_s"], color="#2c3e50", marker="o", label="cases / s")
    ax2.set_ylabel("cases / s")
    ax2.set_ylim(bottom=0)
    ax.set_title("findings and throughput per campaign")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left")
    for col, label, color in (("primitives_accepted", "schedule primitives accepted", "#4c9a5b"),
                              ("pairs_judged", "workload/dtype pairs judged", "#3498db")):
        if trends[col].notna().any():
            cov.plot(x, trends[col].astype(float), marker="o", color=color, label=label)
    cov.set_ylabel("coverage")
    cov.set_ylim(bottom=0)
    cov.legend(fontsize=7, loc="lower left")
    cov.set_xticks(x, [f"{c}\n{d}" for c, d in zip(trends["campaign"], trends["date"],
                                                    strict=True)], fontsize=7)
    return _svg(fig, "history")
