"""Minimize failures into verified standalone repros.

DIR (a campaign directory): every *new* failure bucket — one that matches no known bug —
is minimized (its first case, the same bug signature kept), written to
DIR/repros/<bucket>/{case.json, repro.py, issue.md}, and the script is run in a fresh
process; issue.md is written only when it reproduced.  The outcome is stored in the
campaign database.  --all takes every finding bucket, --bucket KEY given ones.

CASE (a case JSON file, checked first: one that is not a valid case is a usage error): the
case is run, minimized for its own failure and written to OUT/<bucket> (--out OUT, default
./repros).  Everything that could stop the work at its end is checked before it starts: an
unknown --bucket, an output directory that cannot be written, a database that cannot be.

Ctrl-C stops within seconds: the repros verified so far are stored, and the same command
continues with the buckets that are left.

Exit status: 1 when at least one verified repro reproduces a TVM bug, 0 when none does,
2 on a usage error, 3 when interrupted.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from fuzzharness.commands.common import DEFAULT_TIMEOUT, positive, seconds
from fuzzharness.core.errors import UsageError

HELP = "minimize failures into verified standalone repro scripts and issue texts"


def add_arguments(p) -> None:
    from fuzzharness.minimize import DEFAULT_BUDGET

    p.add_argument("target", metavar="DIR|CASE.json", type=Path,
                   help="campaign directory, or a case JSON file")
    p.add_argument("--all", action="store_true", help="every finding bucket, known bugs too")
    p.add_argument("--bucket", action="append", metavar="KEY",
                   help="only this bucket (key or prefix; repeatable)")
    p.add_argument("--budget", type=seconds, default=DEFAULT_BUDGET, metavar="SECONDS",
                   help=f"time per bucket (default {DEFAULT_BUDGET:g})")
    p.add_argument("--total-budget", type=seconds, metavar="SECONDS",
                   help="time cap for all buckets together (default: none)")
    p.add_argument("--workers", type=positive, metavar="N",
                   help="worker processes for candidates (default: the campaign's)")
    p.add_argument("--verify", type=positive, default=1, metavar="N",
                   help="run each written script N times in fresh processes (default 1)")
    p.add_argument("--no-triage", action="store_true", help="skip the lowering-pass probe")
    p.add_argument("--force", action="store_true", help="redo buckets that have a repro")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="for a CASE: the directory its repro folder goes in (default ./repros)")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"per-candidate timeout for a CASE (default {DEFAULT_TIMEOUT:g}, as for `run`)")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def interrupted_hint(args) -> str:
    if args.target.is_dir():
        return (f"the repros verified so far are stored; `fuzzharness minimize {args.target}` "
                "does the rest")
    return "no repro was written; run the command again"


def _check_buckets(directory: Path, keys: list[str]) -> None:
    """Every --bucket KEY names (a prefix of) a bucket of the campaign; else a usage error."""
    from fuzzharness.campaign.db import ResultsDB

    db = ResultsDB(directory, readonly=True)
    try:
        stored = [b["key"] for b in db.buckets()]
    finally:
        db.close()
    for k in keys:
        if not any(key.startswith(k) for key in stored):
            known = ", ".join(sorted(stored)[:8]) + (" ..." if len(stored) > 8 else "")
            raise UsageError(f"--bucket {k}: no such bucket in {directory}"
                             + (f" (buckets: {known})" if stored else " (it has no buckets)"))


def main(args, argv) -> int:
    from fuzzharness.campaign.minimizing.after import minimize_campaign
    from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_OK
    from fuzzharness.core.storage import check_writable_dir
    from fuzzharness.minimize.report import REPROS_DIR, format_report

    t0 = time.monotonic()
    if args.target.is_dir():
        from fuzzharness.campaign.db import ResultsDB

        if args.out is not None:
            raise UsageError(f"--out is for a case file; the repros of a campaign go to "
                             f"{args.target / REPROS_DIR}")
        ResultsDB(args.target).close()  # ours, not corrupt, writable (repros are recorded)
        check_writable_dir(args.target / REPROS_DIR, "the repro directory")
        if args.bucket:
            _check_buckets(args.target, args.bucket)
        results = minimize_campaign(
            args.target, which="all" if args.all else "new", keys=args.bucket,
            total_budget=args.total_budget, per_bucket=args.budget, workers=args.workers,
            verify_times=args.verify, triage=not args.no_triage,
            progress=not args.no_progress, force=args.force)
    elif args.target.is_file():
        from fuzzharness.commands.common import check_case
        from fuzzharness.minimize.case_file import load_case_file, minimize_case_file

        if args.bucket or args.all:
            raise UsageError("--bucket and --all choose buckets of a campaign DIR, not of a case file")
        check_case(load_case_file(args.target), str(args.target))
        check_writable_dir(args.out or Path(REPROS_DIR), "--out")
        results = [minimize_case_file(
            args.target, out=args.out, budget=args.budget, workers=args.workers or 2,
            timeout=args.timeout, verify_times=args.verify, triage=not args.no_triage,
            progress=not args.no_progress)]
    else:
        raise UsageError(f"{args.target}: no such campaign directory or case file")
    print(format_report(results, total_budget=args.total_budget, seconds=time.monotonic() - t0))
    sys.stdout.flush()
    return EXIT_FINDINGS if any(r.reproduced for r in results) else EXIT_OK
