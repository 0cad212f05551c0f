"""Report on one or several campaigns, findings first: a self-contained HTML file with plots
and a markdown summary for a CI job page.

  fuzzharness report DIR [DIR ...] [--out OUTDIR]    writes OUTDIR/report.html, OUTDIR/report.md

DIR is a campaign directory, as written by `fuzzharness run`; give several (every night's)
for trends.  Databases are only read (a running campaign, or one in a read-only directory,
can be reported on).  --out is the directory the report goes in (default: DIR/report for
one campaign, ./report for several); --html FILE and --markdown FILE ("-": stdout) name the
files themselves.  The old spelling --out FILE.html still works.  Outputs are checked for
writing before anything is read, and written whole or not at all.

The page: distinct bugs (one row per root cause, its best repro and its buckets), new
findings (severity, title, the repro and whether it reproduced, or why there
is none), known bugs seen, harness errors, trends across the campaigns (findings,
throughput, coverage), coverage (verdicts by workload × dtype × target, failure rate by
schedule primitive, error/bound ratios of passing cases), the campaigns.

Exit status: 0 report written, 2 usage error (a DIR that is not a campaign, an unwritable
output), 3 interrupted.  Findings do not change the exit status: `fuzzharness run` reports
those.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fuzzharness.commands.common import deprecated

HELP = "write an HTML report and a markdown summary of campaign databases"


def add_arguments(p) -> None:
    p.add_argument("dirs", nargs="+", metavar="DIR", type=Path, help="campaign directories")
    p.add_argument("--out", type=Path, metavar="OUTDIR",
                   help="the directory the report goes in (default: DIR/report for one "
                        "campaign, ./report for several)")
    p.add_argument("--html", type=Path, metavar="FILE", help="the HTML file (default OUTDIR/report.html)")
    p.add_argument("--markdown", metavar="FILE",
                   help='the markdown summary (default: next to the HTML, .md; "-": stdout)')
    p.add_argument("--known-bugs", type=Path, metavar="FILE",
                   help="known-bugs TOML file (default: the packaged one)")


def interrupted_hint(args) -> str:
    return "no report was written"


def output_paths(args) -> tuple[Path, str]:
    """(HTML file, markdown file or "-") from --out / --html / --markdown."""
    html = args.html
    if html is None and args.out is not None and args.out.suffix.lower() in (".html", ".htm"):
        deprecated("report --out FILE.html", "--out OUTDIR (or --html FILE)")
        html = args.out
    if html is None:
        outdir = args.out or (args.dirs[0] / "report" if len(args.dirs) == 1 else Path("report"))
        html = outdir / "report.html"
    return html, args.markdown or str(html.with_suffix(".md"))


def main(args, argv) -> int:
    from fuzzharness.core.errors import EXIT_OK
    from fuzzharness.core.storage import check_writable_file, write_text_atomic
    from fuzzharness.reports.markdown import render_markdown
    from fuzzharness.reports.report import build, render_html

    html, md_target = output_paths(args)
    check_writable_file(html, "the report")
    if md_target != "-":
        check_writable_file(md_target, "--markdown")
    report = build(args.dirs, str(args.known_bugs) if args.known_bugs else None)
    page = render_html(report, html.resolve())
    md = render_markdown(report, html.name, None if md_target == "-" else Path(md_target).resolve())
    html.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(html, page)
    if md_target != "-":
        write_text_atomic(md_target, md)
    else:
        sys.stdout.write(md)
    t = report.totals
    print(f"report: {t['campaigns']} campaign(s), {t['cases']} cases, {t['new']} new findings "
          f"({t['new_high']} high severity), {t['findings']} TVM findings in {t['buckets']} "
          f"buckets → {html}" + (f" + {md_target}" if md_target != "-" else ""),
          file=sys.stderr if md_target == "-" else sys.stdout)
    return EXIT_OK
