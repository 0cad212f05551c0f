"""Report on one or several campaigns: a self-contained HTML file with plots and a markdown
summary for a CI job page.

DIR is a campaign directory (holding results.sqlite), as written by `fuzzharness run`; give
several for nightly history.  Databases are opened read-only (a running campaign can be
reported on).  The HTML goes to --out FILE; the markdown to --markdown FILE (default: FILE
with the suffix .md; "-" prints it).  Plots need matplotlib
(pip install 'tvm-fuzzharness[report]'); without it the report has every table and says so.

Tables: cases by workload × dtype × target × verdict; failure rate by schedule primitive;
throughput over time; error/bound ratios of passing cases; buckets with counts, first seen,
known (with the upstream link) or new, and links to the repros under DIR/repros/.

Exit status: 0 report written, 2 usage error (a DIR that is not a campaign, an unwritable
--out).  Findings do not change the exit status: `fuzzharness run` reports those.
"""

from __future__ import annotations

import sys
from pathlib import Path

HELP = "write an HTML report and a markdown summary of campaign databases"


def add_arguments(p) -> None:
    p.add_argument("dirs", nargs="+", metavar="DIR", type=Path, help="campaign directories")
    p.add_argument("--out", type=Path, required=True, metavar="FILE", help="HTML report file")
    p.add_argument("--markdown", metavar="FILE",
                   help='markdown summary (default: --out with suffix .md; "-": stdout)')
    p.add_argument("--known-bugs", type=Path, metavar="FILE",
                   help="known-bugs TOML file (default: the packaged one)")


def main(args, argv) -> int:
    from fuzzharness.core.errors import EXIT_OK, UsageError
    from fuzzharness.reports.report import build, render_html, render_markdown

    out: Path = args.out
    if out.exists() and out.is_dir():
        raise UsageError(f"--out {out}: is a directory; give a file name, e.g. {out}/report.html")
    md_target = args.markdown or str(out.with_suffix(".md"))
    report = build(args.dirs, str(args.known_bugs) if args.known_bugs else None)
    page = render_html(report, out.resolve())
    md = render_markdown(report, out.name)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(page, encoding="utf-8")
        if md_target != "-":
            Path(md_target).write_text(md, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write the report: {e.filename}: {e.strerror}") from None
    if md_target == "-":
        sys.stdout.write(md)
    t = report.totals
    print(f"report: {t['campaigns']} campaign(s), {t['cases']} cases, {t['findings']} findings "
          f"in {t['buckets']} buckets ({t['new']} new) → {out}"
          + (f" + {md_target}" if md_target != "-" else ""),
          file=sys.stderr if md_target == "-" else sys.stdout)
    return EXIT_OK
