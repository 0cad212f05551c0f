"""The report as markdown (the text a nightly job posts): the same tables as the HTML page
(:mod:`fuzzharness.reports.report`), as pipe tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from fuzzharness.reports.report import NIGHTLY_NOTE, Report, census_cells, rel_path


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


def render_markdown(rep: Report, html_name: str | None = None, md_path: Path | None = None,
                    top: int = 15) -> str:
    """The summary for a CI job page; paths relative to ``md_path``'s directory (None:
    to the current directory, where a CI job's shell is)."""
    base = (md_path.parent if md_path is not None else Path.cwd())
    t = rep.totals
    out = [f"## tvm-fuzzharness: {t['new']} new findings ({t['new_high']} high severity), "
           f"{t['cases']} cases, {t['findings']} TVM findings in {t['buckets']} buckets\n"]
    if t["harness_errors"]:
        out.append(f"**{t['harness_errors']} harness errors** (bugs in this harness, not TVM).\n")
    if len(rep.nights) > 1:
        out.append("\n### Night by night: what changed\n")
        out.append(NIGHTLY_NOTE + "\n\n")
        out.append(md_table(rep.nights))
        out.append("\n" + md_table(rep.night_bugs.head(top * 2)))
    rc = rep.root_causes
    if len(rc):  # what a maintainer files leads, as on the HTML page
        out.append(f"\n### Distinct bugs: {len(rc)} (root causes, from {int(rc['buckets'].sum())} minimized buckets)\n")
        out.append(md_table(rc.head(top)[["cases", "buckets", "attached", "title", "repro"]]))
    f = rep.findings
    new = f[f["new"]] if not f.empty else f
    out.append(f"\n### New findings ({len(new)})\n")
    if len(new):
        shown = new.head(top)
        out.append(md_table(pd.DataFrame({
            "severity": shown["severity"], "cases": shown["count"], "finding": shown["title"],
            "bucket": shown["key"],
            "repro": [rel_path(Path(p) / "repro.py", base) if p else "" for p in shown["repro_path"]],
            "repro status": [s + (f" ({n})" if n else "") for s, n in
                             zip(shown["repro_status"], shown["repro_note"], strict=True)],
        })))
        if len(new) > top:
            out.append(f"\n… and {len(new) - top} more.\n")
    elif t["findings"]:
        out.append("none — every finding matches a known bug.\n")
    else:
        out.append("none — no TVM findings.\n")
    if len(rep.known):
        out.append(f"\n### Known bugs seen ({len(rep.known)})\n")
        out.append(md_table(rep.known[["bug", "link", "buckets", "cases"]]))
    if len(rep.trends) > 1:
        out.append("\n### Trends\n")
        out.append(md_table(rep.trends, floats="{:g}"))
    out.append("\n### Campaigns\n")
    out.append(md_table(rep.summary, floats="{:g}"))
    out.append("\nverdicts: " + ", ".join(f"{k} {v}" for k, v in rep.status.items()) + "\n")
    if not rep.census.empty:
        out.append("\n### Feature census (share of each target's lowered cases)\n")
        out.append(md_table(census_cells(rep.census), index=True))
    out.append("\n### Closest passing cases to the bound (error/bound, 1 = bound)\n")
    out.append(md_table(rep.ratios, index=True))
    r = rep.rates[rep.rates["cases"] >= 5].head(10) if not rep.rates.empty else rep.rates
    out.append("\n### Highest failure rates by primitive (≥ 5 cases)\n")
    out.append(md_table(r.assign(rate=r["rate"].map("{:.1%}".format)) if len(r) else r,
                        index=True))
    if html_name:
        out.append(f"\nFull report with plots: `{html_name}`\n")
    return "\n".join(out)
