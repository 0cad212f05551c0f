"""A campaign report, findings first: one self-contained HTML file (inline CSS and SVG plots;
no script, no network) and a markdown summary for a CI job page.

What comes first is what a maintainer acts on:

0. **Distinct bugs** — the verified repros grouped by root cause, one row per bug with its
   repro (when anything was minimized);
1. **New findings** — one row per new finding bucket, most severe
   first: severity, cases, title, the replay command of its first case, and its repro — a
   link, whether it reproduced in a fresh process, or why there is none (not minimized
   within the time cap, minimization off, the script did not reproduce: its exit and last
   line).  The rows come from :func:`fuzzharness.reports.tables.findings_table`, which
   merges the campaigns' :func:`fuzzharness.buckets.findings.campaign_findings` — the one
   query the terminal summary and ``fuzzharness status`` use too;
2. **Known bugs seen**, with their upstream links; **harness errors** (bugs of this
   harness) when there are any;
3. **Trends** across the campaigns given (nightly history): findings, throughput and
   coverage per campaign; throughput over each campaign's time;
4. **Coverage**: verdicts by workload × dtype × target, failure rate by schedule primitive,
   error/bound ratios of passing cases, generator coverage; then the campaigns table.

``build(dirs)`` → :class:`Report`; ``render_html(report, out)`` and ``render_markdown(report,
html_name, md_path)`` return text.  Every path shown is relative to the file it appears in
(the HTML or the markdown), so a report archived with its campaign directories keeps
working.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import os
from pathlib import Path
from typing import Any

import pandas as pd

from fuzzharness.buckets.known_bugs import KnownBugs
from fuzzharness.reports import plots, tables, triage_tables
from fuzzharness.reports.load import Campaigns, load_campaigns


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
    findings: pd.DataFrame
    known: pd.DataFrame
    trends: pd.DataFrame
    known_source: str
    generated: str
    root_causes: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    nights: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)  # triage_tables.nightly
    night_bugs: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    census: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)

    @property
    def totals(self) -> dict[str, Any]:
        f = self.findings
        new = f[f["new"]] if not f.empty else f
        return {
            "campaigns": len(self.summary), "cases": int(self.summary["cases"].sum()),
            "pass": int(self.summary["pass"].sum()),
            "findings": int(self.summary["findings"].sum()),
            "harness_errors": int(self.summary["harness_errors"].sum()),
            "buckets": len(f), "new": len(new),
            "new_high": int((new["severity"] == "high").sum()) if len(new) else 0,
            "known_bugs": len(self.known),
        }


def build(dirs: list[str | Path], known_bugs_path: str | None = None) -> Report:
    bugs = KnownBugs.load(known_bugs_path)
    data = load_campaigns(dirs, bugs)
    buckets = tables.bucket_list(data, bugs)
    summary = tables.campaign_summary(data, buckets)
    findings = tables.findings_table(data)
    nights, night_bugs = triage_tables.nightly(data)
    return Report(
        data=data, matrix=tables.verdict_matrix(data), status=tables.status_counts(data),
        rates=tables.failure_rate_by_primitive(data), throughput=tables.throughput(data),
        summary=summary, passing=tables.passing_ratios(data),
        ratios=tables.ratio_distribution(data), buckets=buckets, findings=findings,
        known=tables.known_bugs_seen(findings), trends=tables.trends(data, summary),
        known_source=bugs.source, generated=dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        root_causes=triage_tables.root_causes(data), nights=nights, night_bugs=night_bugs,
        census=triage_tables.feature_census(data),
    )


NIGHTLY_NOTE = ("the campaigns in the order given (oldest first). A bug is a known-bugs entry, "
                "else a root cause, else a bucket. New tonight: seen in no earlier campaign; not "
                "seen tonight: seen the night before, not tonight (fixed, or not drawn: "
                "`fuzzharness known check` runs the stored witnesses); regression: passes on the "
                "campaign's --baseline TVM. docs/nightly.md has the recipe.")


# -- HTML ----------------------------------------------------------------------------------------
REPRO_COLORS = {"reproduced": "#4c9a5b", "not reproduced": "#e67e22",
                "not recorded": "#7f8c8d", "not minimized": "#95a5a6"}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;
max-width:1180px;color:#222;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin-top:22px}
.sub{color:#666}.cards{display:flex;gap:12px;flex-wrap:wrap;margin:16px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 14px;min-width:110px}
.card b{display:block;font-size:22px}.card.bad b{color:#c0392b}.card.good b{color:#4c9a5b}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.l,th.l{text-align:left}
.b{display:inline-block;white-space:nowrap;color:#fff;padding:1px 6px;border-radius:3px;
font-size:11px;line-height:1.5}
.new{background:#c0392b}.known{background:#7f8c8d}.harness{background:#3498db}
.st{display:inline-block;width:9px;height:9px;border-radius:2px;margin-right:4px}
.plot svg{max-width:100%;height:auto}.note{color:#666;font-size:12.5px}
code{background:#f4f4f4;padding:0 3px;border-radius:3px;font-size:12px}
details{margin:6px 0}table.findings{width:100%}
table.findings td{word-break:break-word}td.l .note code{font-size:11px}
td.nw{white-space:nowrap}
"""


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _badge(text: str, color: str | None = None, cls: str = "") -> str:
    style = f' style="background:{color}"' if color else ""
    return f'<span class="b {cls}"{style}>{_e(text)}</span>'


def _plot(svg: str | None, what: str) -> str:
    if svg is not None:
        return f'<div class="plot">{svg}</div>'
    if not plots.available():
        return (f'<p class="note">({_e(what)}: plots need matplotlib — '
                "<code>pip install matplotlib</code>; the table below has the numbers)</p>")
    return f'<p class="note">({_e(what)}: nothing to plot)</p>'


def _table(frame: pd.DataFrame, *, index: bool = True, floats: str = "{:.3g}") -> str:
    if frame is None or frame.empty:
        return '<p class="note">(none)</p>'
    text = frame.to_html(index=index, escape=True, border=0, na_rep="",
                         float_format=lambda v: floats.format(v))
    for status, color in plots.STATUS_COLORS.items():  # every status column wears its colour
        text = text.replace(f"<th>{status}</th>",
                            f'<th><span class="st" style="background:{color}"></span>{status}</th>')
    return text


def rel_path(path: str | Path, base_dir: Path) -> str:
    try:
        return os.path.relpath(Path(path).resolve(), base_dir.resolve())
    except ValueError:  # another drive (Windows)
        return str(path)


def render_html(rep: Report, out: Path) -> str:
    t = rep.totals
    base = out.parent
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
             f"<title>tvm-fuzzharness report: {t['new']} new findings, {t['cases']} cases</title>"
             f"<style>{CSS}</style></head><body>",
             "<h1>tvm-fuzzharness campaign report</h1>",
             f'<div class="sub">{t["campaigns"]} campaign(s), generated {_e(rep.generated)}; '
             f"known bugs from <code>{_e(rep.known_source)}</code>; paths are relative to "
             "this file</div>"]
    cards = [("new findings", t["new"], "bad" if t["new"] else "good"),
             ("of them high severity", t["new_high"], "bad" if t["new_high"] else "good"),
             ("known bugs seen", t["known_bugs"], ""), ("cases", t["cases"], ""),
             ("pass", t["pass"], "good"),
             ("TVM findings (cases)", t["findings"], "bad" if t["findings"] else ""),
             ("harness errors", t["harness_errors"], "bad" if t["harness_errors"] else "")]
    parts.append('<div class="cards">' + "".join(
        f'<div class="card {c}"><b>{v}</b>{_e(k)}</div>' for k, v, c in cards) + "</div>")

    if len(rep.nights) > 1:  # several nights: what changed leads
        parts.append("<h2 id='nightly'>Night by night: what changed</h2>")
        parts.append(f'<p class="note">{_e(NIGHTLY_NOTE)}</p>')
        parts.append(_table(rep.nights, index=False))
        parts.append(_table(rep.night_bugs, index=False))
    rc = rep.root_causes
    if len(rc):  # what a maintainer files: one row per distinct bug, its best repro
        parts.append(f"<h2 id='root-causes'>Distinct bugs: {len(rc)} (root causes, from "
                     f"{int(rc['buckets'].sum())} minimized buckets)</h2>")
        parts.append('<p class="note">verified repros grouped by root cause: an error\'s text, '
                     "the IR shape of its mechanism, or its minimal trigger "
                     "(fuzzharness/buckets/root_causes.py); one repro each.</p>")
        parts.append(_table(rc.assign(repro=[rel_path(p, out) if p else "" for p in rc["repro"]]),
                            index=False))
    parts.append(f'<h2 id="new">New findings ({t["new"]})</h2>')
    parts.append('<p class="note">findings that match no known bug, most severe first '
                 "(high: a silent wrong answer or a crash of the kernel; medium: a hang or a "
                 "crash while compiling; low: a compile error; triage: TVM's unscheduled build "
                 "disagrees with the reference).</p>")
    parts.append(_findings_html(rep, base))

    parts.append(f'<h2 id="known">Known bugs seen ({t["known_bugs"]})</h2>')
    parts.append(_known_html(rep))
    harness = rep.buckets[rep.buckets["known"] == "harness"] if not rep.buckets.empty else rep.buckets
    if len(harness):
        parts.append(f'<h2 id="harness">Harness errors ({int(harness["count"].sum())} cases)</h2>')
        parts.append('<p class="note">bugs in tvm-fuzzharness, never counted as TVM\'s.</p>')
        parts.append(_table(harness[["count", "title", "campaigns", "example"]], index=False))

    parts.append('<h2 id="trends">Trends</h2>')
    if len(rep.trends) > 1:
        parts.append('<p class="note">the campaigns in the order given: finding buckets '
                     "(new and known), throughput, and coverage — schedule primitives "
                     "accepted at least once, workload/dtype pairs judged.</p>")
        parts.append(_plot(plots.history(rep.trends), "campaign history"))
        parts.append(_table(rep.trends, index=False, floats="{:g}"))
    else:
        parts.append('<p class="note">(one campaign: give several campaign directories — '
                     "e.g. every night's — for findings, throughput and coverage over "
                     "time)</p>")
    parts.append("<h3>Throughput</h3>")
    parts.append(_plot(plots.throughput(rep.throughput), "throughput"))

    parts.append('<h2 id="coverage">Coverage</h2>')
    parts.append("<h3>Verdicts by workload × dtype × target</h3>")
    parts.append('<p class="note">' + " ".join(
        f'<span class="st" style="background:{c}"></span>{_e(s)}'
        for s, c in plots.STATUS_COLORS.items()) + "</p>")
    parts.append(_plot(plots.verdicts(rep.matrix), "verdicts"))
    parts.append(f"<details><summary>the table ({len(rep.matrix)} rows)</summary>"
                 f"{_table(rep.matrix)}</details>")

    parts.append("<h3>Failure rate by schedule primitive</h3>")
    parts.append('<p class="note">findings / cases among the cases that applied the primitive '
                 "(a case counts for each primitive it applied; unscheduled cases and cases "
                 "that failed while their schedule was drawn count for none).</p>")
    parts.append(_plot(plots.failure_rates(rep.rates), "failure rates"))
    parts.append(f"<details><summary>the table ({len(rep.rates)} primitives)</summary>"
                 + _table(rep.rates.assign(rate=rep.rates["rate"].map("{:.1%}".format))
                          if not rep.rates.empty else rep.rates) + "</details>")

    parts.append("<h3>Feature census of the lowered programs</h3>")
    parts.append(f'<p class="note">{_e(CENSUS_NOTE)}</p>')
    parts.append(_table(census_cells(rep.census)))

    parts.append("<h3>Error/bound ratios of passing cases</h3>")
    parts.append('<p class="note">worst |actual − reference| / bound per passing case; 1 is '
                 "the bound, 0 bitwise equal. A distribution hugging 1 would mean the bound is "
                 "barely holding; far below 1 it is loose.</p>")
    parts.append(_plot(plots.ratios(rep.passing), "ratios"))
    parts.append(_table(rep.ratios))

    prims = rep.data.coverage[rep.data.coverage["axis"] == "primitive"]
    if len(prims):
        g = prims.groupby("value")[["drawn", "proposed", "accepted", "compiled", "verdict"]].sum()
        g.index.name = "primitive"
        parts.append("<h3>Generator coverage: schedule primitives</h3>")
        parts.append('<p class="note">steps drawn / with a site / accepted by TVM; cases '
                     "compiled / judged with the primitive.</p>")
        parts.append(f"<details><summary>the table ({len(g)} primitives, "
                     f"{int((g['accepted'] == 0).sum())} never accepted)</summary>"
                     f"{_table(g.sort_values('accepted'))}</details>")

    parts.append('<h2 id="campaigns">Campaigns</h2>')
    parts.append(_table(rep.summary, index=False, floats="{:g}"))
    parts.append("</body></html>")
    return "\n".join(parts)


def _repro_cell(r: pd.Series, base: Path) -> str:
    status = r["repro_status"] or "not minimized"
    badge = _badge(status, REPRO_COLORS.get(status, "#7f8c8d"))
    if r["repro_path"]:
        link = rel_path(Path(r["repro_path"]) / "repro.py", base)
        cell = f'<a href="{_e(link)}">{_e(link)}</a><br>{badge}'
    else:
        cell = badge
    if r["repro_note"]:
        cell += f'<br><span class="note">{_e(r["repro_note"])}</span>'
    return cell


def _finding_rows(frame: pd.DataFrame, base: Path, *, known: bool = False) -> list[str]:
    rows = []
    for _, r in frame.iterrows():
        sev = _badge(r["severity"], plots.SEVERITY_COLORS.get(r["severity"]))
        label = (_badge("known", cls="known") if known else _badge("NEW", cls="new"))
        if r.get("baseline"):  # run --baseline: what the baseline TVM did with it
            label += " " + _badge(r["baseline"], "#8e44ad" if r["baseline"] == "regression"
                                  else "#7f8c8d")
        camp = rel_path(r["example_campaign"], base)
        rows.append(
            f'<tr><td class="l nw">{sev} {label}</td><td>{r["count"]}</td>'
            f'<td class=l>{_e(r["title"])}<br><span class=note>{_e(r["key"])} · '
            f"{_e(r['symptom'])}@{_e(r['stage'])} · first seen {_e(r['first_seen'])} in "
            f"{_e(r['campaigns'])} · first case: <code>fuzzharness replay {_e(camp)} "
            f"{_e(r['example'])}</code></span></td><td class=l>{_repro_cell(r, base)}</td></tr>")
    return rows


def _findings_html(rep: Report, base: Path, first: int = 40) -> str:
    f = rep.findings
    new = f[f["new"]] if not f.empty else f
    if new.empty:
        return ('<p class="note">none — every TVM finding matches a known bug.</p>'
                if len(f) else '<p class="note">none — no TVM findings.</p>')
    head = ('<table class=findings><tr><th class=l>severity</th><th>cases</th>'
            '<th class=l>finding</th><th class=l>repro</th></tr>')
    rows = _finding_rows(new, base)
    text = head + "".join(rows[:first]) + "</table>"
    if len(rows) > first:
        text += (f"<details><summary>{len(rows) - first} more new findings</summary>{head}"
                 + "".join(rows[first:]) + "</table></details>")
    return text


def _known_html(rep: Report) -> str:
    k = rep.known
    if k.empty:
        return '<p class="note">(none)</p>'
    rows = []
    for _, r in k.iterrows():
        link = str(r["link"])
        shown = f'<a href="{_e(link)}">{_e(link)}</a>' if link.startswith("http") else _e(link)
        rows.append(f'<tr><td class="l nw">{_badge("known", cls="known")} {_e(r["bug"])}</td>'
                    f"<td class=l>{shown}</td><td>{r['buckets']}</td><td>{r['cases']}</td>"
                    f"<td class=l>{_e(r['campaigns'])}</td></tr>")
    return ("<table class=findings><tr><th class=l>bug</th><th class=l>upstream</th>"
            "<th>buckets</th><th>cases</th><th class=l>campaigns</th></tr>"
            + "".join(rows) + "</table>")


CENSUS_NOTE = ("share of each target's lowered cases whose program had the feature, read in the "
               "worker from the scheduled and the lowered program (fuzzharness/execution/census.py); "
               "the goal features come first, 0 % where none had it")


def census_cells(census: pd.DataFrame) -> pd.DataFrame:
    """Shares as percentages, the lowered-case counts as integers."""
    if census.empty:
        return census
    out = census.copy().astype(object)
    for i in out.index:
        fmt = (lambda v: f"{int(v)}") if i == "lowered cases" else (
            lambda v: "" if pd.isna(v) else f"{100 * v:.1f} %")
        out.loc[i] = [fmt(v) for v in census.loc[i]]
    return out
