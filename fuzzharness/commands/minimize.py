"""Minimize failures into verified standalone repros.

DIR (a campaign directory): every *new* failure bucket — one that matches no known bug —
is minimized (its first case, the same bug signature kept), written to
DIR/repros/<bucket>/{case.json, repro.py, issue.md}, and the script is run in a fresh
process; issue.md is written only when it reproduced.  The outcome is stored in the
campaign database.  --all takes every finding bucket, --bucket KEY given ones.

CASE (a case JSON file): the case is run, minimized for its own failure and written to
--out DIR (default: ./repros/<bucket>).

Exit status: 1 when at least one verified repro reproduces a TVM bug, 0 when none does,
2 on a usage error.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HELP = "minimize failures into verified standalone repro scripts and issue texts"


def add_arguments(p) -> None:
    from fuzzharness.minimize import DEFAULT_BUDGET

    p.add_argument("target", metavar="DIR|CASE", type=Path,
                   help="campaign directory, or a case JSON file")
    p.add_argument("--all", action="store_true", help="every finding bucket, known bugs too")
    p.add_argument("--bucket", action="append", metavar="KEY",
                   help="only this bucket (key or prefix; repeatable)")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET, metavar="SECONDS",
                   help=f"time per bucket (default {DEFAULT_BUDGET:g})")
    p.add_argument("--total-budget", type=float, metavar="SECONDS",
                   help="time cap for all buckets together (default: none)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="worker processes for candidates (default: the campaign's)")
    p.add_argument("--verify", type=int, default=1, metavar="N",
                   help="run each written script N times in fresh processes (default 1)")
    p.add_argument("--no-triage", action="store_true", help="skip the lowering-pass probe")
    p.add_argument("--force", action="store_true", help="redo buckets that have a repro")
    p.add_argument("--out", type=Path, metavar="DIR", help="output directory for a CASE")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="per-candidate timeout for a CASE (default 30)")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def main(args, argv) -> int:
    from fuzzharness.campaign.minimize_buckets import minimize_campaign
    from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_OK, UsageError
    from fuzzharness.minimize.report import format_report

    if args.budget <= 0 or (args.total_budget is not None and args.total_budget <= 0):
        raise UsageError("--budget and --total-budget must be > 0")
    if args.verify < 1:
        raise UsageError("--verify must be ≥ 1")
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be ≥ 1")
    t0 = time.monotonic()
    if args.target.is_dir():
        from fuzzharness.campaign.db import ResultsDB

        ResultsDB(args.target).close()  # a clear error for a directory that is not a campaign
        results = minimize_campaign(
            args.target, which="all" if args.all else "new", keys=args.bucket,
            total_budget=args.total_budget, per_bucket=args.budget, workers=args.workers,
            verify_times=args.verify, triage=not args.no_triage,
            progress=not args.no_progress, force=args.force)
    elif args.target.is_file():
        from fuzzharness.minimize.case_file import minimize_case_file

        results = [minimize_case_file(
            args.target, out=args.out, budget=args.budget, workers=args.workers or 2,
            timeout=args.timeout, verify_times=args.verify, triage=not args.no_triage,
            progress=not args.no_progress)]
    else:
        raise UsageError(f"{args.target}: no such campaign directory or case file")
    print(format_report(results, total_budget=args.total_budget, seconds=time.monotonic() - t0))
    sys.stdout.flush()
    return EXIT_FINDINGS if any(r.reproduced for r in results) else EXIT_OK
