"""A campaign report: tables from :mod:`reports.tables`, rendered as one self-contained HTML
file (inline CSS and SVG plots; no script, no network) and as a markdown summary for a CI
job page.

``build(dirs)`` → :class:`Report`; ``render_html(report, out)`` and
``render_markdown(report, html_name)`` return text.  Links to repros are relative to the
HTML file, so a report written next to the campaign directories keeps working when the
whole folder is archived.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import os
from pathlib import Path
from typing import Any

import pandas as pd

from reports import plots, tables
from reports.load import Campaigns, load_campaigns


@dataclasses.dataclass
class Report:
    data: Campaigns
    matrix: pd.DataFrame
    status: pd.Series
    rates: pd.DataFrame
    throughput: pd.DataFrame
    summary: pd.DataFrame
    passing: pd.DataFrame
    ratios: pd.DataFrame
    buckets: pd.DataFrame
    known_source: str
    generated: str
    census: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)

    @property
    def totals(self) -> dict[str, Any]:
        b = self.buckets
        tvm = b[b["known"] != "harness"] if not b.empty else b
        return {
            "campaigns": len(self.summary), "cases": int(self.summary["cases"].sum()),
            "pass": int(self.summary["pass"].sum()),
            "findings": int(self.summary["findings"].sum()),
            "harness_errors": int(self.summary["harness_errors"].sum()),
            "buckets": len(tvm), "new": int((tvm["known"] == "new").sum()) if len(tvm) else 0,
        }


def build(dirs: list[str | Path], known_bugs_path: str | None = None) -> Report:
    from fuzzharness.buckets import KnownBugs

    data = load_campaigns(dirs)
    bugs = KnownBugs.load(known_bugs_path)
    buckets = tables.bucket_list(data, bugs)
    return Report(
        data=data, matrix=tables.verdict_matrix(data), status=tables.status_counts(data),
        rates=tables.failure_rate_by_primitive(data), throughput=tables.throughput(data),
        summary=tables.campaign_summary(data, buckets), passing=tables.passing_ratios(data),
        ratios=tables.ratio_distribution(data), buckets=buckets, known_source=bugs.source,
        generated=dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        census=tables.feature_census(data),
    )


# -- HTML ----------------------------------------------------------------------------------------
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;
max-width:1180px;color:#222;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
.sub{color:#666}.cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:110px}
.card b{display:block;font-size:22px}.card.bad b{color:#c0392b}.card.good b{color:#4c9a5b}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.l,th.l{text-align:left}
.new{background:#c0392b;color:#fff;padding:1px 6px;border-radius:3px;font-size:11px}
.known{background:#7f8c8d;color:#fff;padding:1px 6px;border-radius:3px;font-size:11px}
.harness{background:#3498db;color:#fff;padding:1px 6px;border-radius:3px;font-size:11px}
.plot svg{max-width:100%;height:auto}.note{color:#666;font-size:12.5px}
code{background:#f4f4f4;padding:0 3px;border-radius:3px;font-size:12px}
details{margin:6px 0}table.buckets{width:100%}
table.buckets td{word-break:break-word}td.l .note code{font-size:11px}
.buckets td:nth-child(4){white-space:nowrap}
"""


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _plot(svg: str | None, what: str) -> str:
    if svg is not None:
        return f'<div class="plot">{svg}</div>'
    if not plots.available():
        return (f'<p class="note">({_e(what)}: plots need matplotlib — '
                "<code>pip install 'tvm-fuzzharness[report]'</code>; the table below has the "
                "numbers)</p>")
    return f'<p class="note">({_e(what)}: nothing to plot)</p>'


def _table(frame: pd.DataFrame, *, index: bool = True, floats: str = "{:.3g}") -> str:
    if frame is None or frame.empty:
        return '<p class="note">(none)</p>'
    return frame.to_html(index=index, escape=True, border=0, na_rep="",
                         float_format=lambda v: floats.format(v))


def _rel(path: str, out: Path) -> str:
    try:
        return os.path.relpath(path, out.parent.resolve())
    except ValueError:  # another drive (Windows)
        return path


def render_html(rep: Report, out: Path) -> str:
    t = rep.totals
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
             f"<title>tvm-fuzzharness report: {t['cases']} cases</title><style>{CSS}</style>"
             "</head><body>",
             "<h1>tvm-fuzzharness campaign report</h1>",
             f'<div class="sub">{t["campaigns"]} campaign(s), generated {_e(rep.generated)}; '
             f"known bugs from <code>{_e(rep.known_source)}</code></div>"]
    cards = [("cases", t["cases"], ""), ("pass", t["pass"], "good"),
             ("TVM findings", t["findings"], "bad" if t["findings"] else ""),
             ("buckets", t["buckets"], ""), ("new buckets", t["new"], "bad" if t["new"] else "good"),
             ("harness errors", t["harness_errors"], "bad" if t["harness_errors"] else "")]
    parts.append('<div class="cards">' + "".join(
        f'<div class="card {c}"><b>{v}</b>{_e(k)}</div>' for k, v, c in cards) + "</div>")

    parts.append("<h2>Campaigns</h2>")
    parts.append(_table(rep.summary, index=False, floats="{:g}"))
    if len(rep.summary) > 1:
        parts.append(_plot(plots.history(rep.summary), "campaign history"))

    parts.append("<h2>Verdicts by workload × dtype × target</h2>")
    parts.append(_plot(plots.verdicts(rep.matrix), "verdicts"))
    parts.append(_table(rep.matrix))

    parts.append("<h2>Failure rate by schedule primitive</h2>")
    parts.append('<p class="note">findings / cases among the cases that applied the primitive '
                 "(a case counts for each primitive it applied).</p>")
    parts.append(_plot(plots.failure_rates(rep.rates), "failure rates"))
    parts.append(_table(rep.rates.assign(rate=rep.rates["rate"].map("{:.1%}".format))
                        if not rep.rates.empty else rep.rates))

    parts.append("<h2>Feature census of the lowered programs</h2>")
    parts.append(f'<p class="note">{_e(CENSUS_NOTE)}</p>')
    parts.append(_table(_census_cells(rep.census)))

    parts.append("<h2>Error/bound ratios of passing cases</h2>")
    parts.append('<p class="note">worst |actual − reference| / bound per passing case; 1 is '
                 "the bound, 0 bitwise equal. A distribution hugging 1 would mean the bound is "
                 "barely holding; far below 1 it is loose.</p>")
    parts.append(_plot(plots.ratios(rep.passing), "ratios"))
    parts.append(_table(rep.ratios))

    parts.append("<h2>Throughput</h2>")
    parts.append(_plot(plots.throughput(rep.throughput), "throughput"))

    parts.append("<h2>Buckets</h2>")
    parts.append('<p class="note">one row per distinct failure, new first; known = matched by '
                 "the known-bugs file (with its upstream link).</p>")
    parts.append(_buckets_html(rep, out))
    parts.append("</body></html>")
    return "\n".join(parts)


def _buckets_html(rep: Report, out: Path, first: int = 30) -> str:
    b = rep.buckets
    if b.empty:
        return '<p class="note">(no failures)</p>'
    head = ("<table class=buckets><tr><th class=l>status</th><th>count</th><th class=l>bucket"
            "</th><th class=l>first seen</th><th class=l>bug</th><th class=l>repro</th></tr>")
    paths = dict(zip(rep.data.campaigns["campaign"], rep.data.campaigns["path"], strict=True))
    rows = []
    for _, r in b.iterrows():
        label = r["known"].upper() if r["known"] == "new" else r["known"]
        link = str(r["link"])
        bug = ""
        if r["bug"]:
            bug = _e(r["bug"]) + (f'<br><a href="{_e(link)}">{_e(link)}</a>'
                                  if link.startswith("http") else f"<br>{_e(link)}")
        camp, _, idx = r["example"].rpartition("#")
        repro = ""
        if r["repro"]:
            target = Path(r["repro"]) / "repro.py"
            flag = {True: "<br>✓ reproduced", False: "<br>✗ did not reproduce"}.get(
                r["reproduced"], "")
            repro = f'<a href="{_e(_rel(str(target), out))}">repro.py</a>{flag}'
        rows.append(
            f'<tr><td class=l><span class="{r["known"]}">{label}</span></td><td>{r["count"]}'
            f"</td><td class=l>{_e(r['title'])}<br><span class=note>{_e(r['key'])} · seen in "
            f"{_e(r['campaigns'])} · first case: <code>fuzzharness replay --db "
            f"{_e(paths.get(camp, camp))} {_e(idx)}</code></span></td>"
            f"<td class=l>{_e(r['first_seen'])}</td><td class=l>{bug}</td>"
            f"<td class=l>{repro}</td></tr>")
    html_rows = head + "".join(rows[:first]) + "</table>"
    if len(rows) > first:
        html_rows += (f"<details><summary>{len(rows) - first} more buckets</summary>{head}"
                      + "".join(rows[first:]) + "</table></details>")
    return html_rows


CENSUS_NOTE = ("share of each target's lowered cases whose program had the feature, read in the "
               "worker from the scheduled and the lowered program (fuzzharness/census.py); "
               "the goal features come first, 0 % where none had it")


def _census_cells(census: pd.DataFrame) -> pd.DataFrame:
    """Shares as percentages, the lowered-case counts as integers."""
    if census.empty:
        return census
    out = census.copy().astype(object)
    for i in out.index:
        fmt = (lambda v: f"{int(v)}") if i == "lowered cases" else (
            lambda v: "" if pd.isna(v) else f"{100 * v:.1f} %")
        out.loc[i] = [fmt(v) for v in census.loc[i]]
    return out


# -- markdown ------------------------------------------------------------------------------------
def md_table(frame: pd.DataFrame, *, index: bool = False, floats: str = "{:.3g}") -> str:
    if frame is None or frame.empty:
        return "_(none)_\n"
    f = frame.reset_index() if index else frame
    cols = [str(c) for c in f.columns]

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "" if pd.isna(v) else floats.format(v)
        return str("" if v is None else v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in f.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def render_markdown(rep: Report, html_name: str | None = None, top: int = 15) -> str:
    t = rep.totals
    out = [f"## tvm-fuzzharness: {t['cases']} cases, {t['findings']} TVM findings in "
           f"{t['buckets']} buckets ({t['new']} new)\n"]
    if t["harness_errors"]:
        out.append(f"**{t['harness_errors']} harness errors** (bugs in this harness, not TVM).\n")
    out.append(md_table(rep.summary, floats="{:g}"))
    out.append("\nverdicts: " + ", ".join(f"{k} {v}" for k, v in rep.status.items()) + "\n")
    b = rep.buckets
    new = b[b["known"] == "new"] if not b.empty else b
    out.append(f"\n### New buckets ({len(new)})\n")
    if len(new):
        shown = new.head(top)[["count", "title", "first_seen", "example", "repro"]].copy()
        shown["repro"] = [f"{p}/repro.py" if p else "" for p in shown["repro"]]
        out.append(md_table(shown))
        if len(new) > top:
            out.append(f"\n… and {len(new) - top} more.\n")
    elif t["findings"]:
        out.append("none — every finding matches a known bug.\n")
    else:
        out.append("none — no TVM findings.\n")
    known = b[b["known"] == "known"] if not b.empty else b
    if len(known):
        g = known.groupby(["bug", "link"])["count"].sum().reset_index()
        out.append(f"\n### Known bugs seen ({len(g)})\n")
        out.append(md_table(g))
    if not rep.census.empty:
        out.append("\n### Feature census (share of each target's lowered cases)\n")
        out.append(md_table(_census_cells(rep.census), index=True))
    out.append("\n### Closest passing cases to the bound (error/bound, 1 = bound)\n")
    out.append(md_table(rep.ratios, index=True))
    r = rep.rates[rep.rates["cases"] >= 5].head(10) if not rep.rates.empty else rep.rates
    out.append("\n### Highest failure rates by primitive (≥ 5 cases)\n")
    out.append(md_table(r.assign(rate=r["rate"].map("{:.1%}".format)) if len(r) else r,
                        index=True))
    if html_name:
        out.append(f"\nFull report with plots: `{html_name}`\n")
    return "\n".join(out)
