"""Write the standalone repro of one failing case, as it is (no minimization).

CASE is a case JSON file, or — with --db DIR — a case index or (prefix of a) case id of that
campaign.  The case is run in a worker process for its verdict (a case written for a failure
while a schedule was drawn carries the failing call and its verdict in its origin); for a TVM finding,
repro.py, case.json and (once the script reproduced in a fresh process) issue.md are
written to --out DIR (default: DIR/repros/<bucket> with --db, else ./repros/<bucket>).
With --db the outcome is also recorded in the campaign database.

Exit status: 1 the repro reproduces a TVM bug, 0 nothing to reproduce or it did not
reproduce, 2 usage error.
"""

from __future__ import annotations

from pathlib import Path

HELP = "write (and verify) the standalone repro script of one case"


def add_arguments(p) -> None:
    p.add_argument("case", metavar="CASE", help="case JSON file, or an index/id with --db")
    p.add_argument("--db", type=Path, metavar="DIR", help="campaign directory holding the case")
    p.add_argument("--out", type=Path, metavar="DIR", help="directory to write the repro to")
    p.add_argument("--verify", type=int, default=1, metavar="N",
                   help="run the script N times in fresh processes (default 1)")
    p.add_argument("--no-triage", action="store_true", help="skip the lowering-pass probe")
    p.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                   help="timeout for running the case (default 120)")


def main(args, argv) -> int:
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.commands.replay import load_case
    from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_OK, UsageError
    from fuzzharness.core.tvm_support import versions
    from fuzzharness.minimize.case_file import check_names, run_once
    from fuzzharness.minimize.report import REPROS_DIR
    from fuzzharness.repro.package import write_repro

    if args.verify < 1:
        raise UsageError("--verify must be ≥ 1")
    case, _ = load_case(args)
    check_names(case)
    failing_call = case.origin.get("failing_call")
    if failing_call and case.origin.get("failing_verdict"):
        # a failure while the schedule was drawn: the call that fails is not in the trace
        from fuzzharness.core.verdict import Verdict

        verdict = Verdict.from_dict(case.origin["failing_verdict"])
    else:
        failing_call, verdict = None, run_once(case, args.timeout)
    print(f"case {case.id}: {verdict.line()}")
    if not verdict.is_finding:
        print("not a TVM finding: nothing to reproduce")
        return EXIT_OK
    sig = signature(None if failing_call else case.to_dict(), verdict)
    base = args.out or ((args.db / REPROS_DIR / sig.key) if args.db else Path(REPROS_DIR) / sig.key)
    outcome = write_repro(base, case, verdict, bucket=sig.key, signature=sig, versions=versions(),
                          verify_times=args.verify, triage=not args.no_triage,
                          timeout=args.timeout, failing_call=failing_call)
    if args.db is not None:
        from fuzzharness.campaign.db import ResultsDB

        db = ResultsDB(args.db)
        try:
            db.add_repro(outcome.record)
        finally:
            db.close()
    if outcome.reproduced:
        print(f"reproduced {len(outcome.runs)}/{len(outcome.runs)} runs: {base}/repro.py, "
              f"{base}/issue.md")
        print(f"title: {outcome.title}")
        return EXIT_FINDINGS
    print(f"NOT reproduced by the script ({outcome.problem}); see {base}/NOT-REPRODUCED.md")
    return EXIT_OK
