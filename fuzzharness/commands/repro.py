"""Write the standalone repro of one failing case, as it is (no minimization).

  fuzzharness repro CASE.json [--out DIR]
  fuzzharness repro DIR CASE [--out DIR]     case CASE (index or id prefix) of campaign DIR

CASE.json is a case file (checked first: one that is not a valid case is a usage error).  The case is run in a worker process for its verdict (a case written for a failure
while a schedule was drawn carries the failing call and its verdict in its origin); for a TVM finding,
repro.py, case.json and (once the script reproduced in a fresh process) issue.md are
written to --out DIR (default: the campaign's DIR/repros/<bucket>, else ./repros/<bucket>);
the output directory is checked for writing before the case runs.  From a campaign the
outcome is also recorded in its database.

Exit status: 1 the repro reproduces a TVM bug, 0 nothing to reproduce or it did not
reproduce, 2 usage error, 3 the harness failed (harness_error verdict, interrupted).
"""

from __future__ import annotations

from pathlib import Path

from fuzzharness.commands.common import (
    DEFAULT_TIMEOUT,
    add_case_arguments,
    load_case,
    positive,
    seconds,
)

HELP = "write (and verify) the standalone repro script of one case"


def add_arguments(p) -> None:
    add_case_arguments(p)
    p.add_argument("--out", type=Path, metavar="DIR", help="directory to write the repro to")
    p.add_argument("--verify", type=positive, default=1, metavar="N",
                   help="run the script N times in fresh processes (default 1)")
    p.add_argument("--no-triage", action="store_true", help="skip the lowering-pass probe")
    p.add_argument("--timeout", type=seconds, metavar="SECONDS",
                   help=f"timeout for running the case (default {DEFAULT_TIMEOUT:g}, as for `run`)")


def interrupted_hint(args) -> str:
    return "no repro was recorded; run the command again"


def main(args, argv) -> int:
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_HARNESS, EXIT_OK
    from fuzzharness.core.storage import check_writable_dir
    from fuzzharness.core.tvm_support import versions
    from fuzzharness.core.verdict import Status
    from fuzzharness.minimize.case_file import run_once
    from fuzzharness.minimize.report import REPROS_DIR
    from fuzzharness.repro.package import write_repro

    case, _, campaign = load_case(args, "repro")
    root = args.out or ((campaign / REPROS_DIR) if campaign else Path(REPROS_DIR))
    check_writable_dir(root, "--out" if args.out else "the repro directory")
    if campaign is not None:  # the outcome goes into its database: check it can be written
        from fuzzharness.campaign.db import ResultsDB

        ResultsDB(campaign).close()
    timeout = args.timeout or DEFAULT_TIMEOUT
    failing_call = case.origin.get("failing_call")
    if failing_call and case.origin.get("failing_verdict"):
        # a failure while the schedule was drawn: the call that fails is not in the trace
        from fuzzharness.core.verdict import Verdict

        verdict = Verdict.from_dict(case.origin["failing_verdict"])
    else:
        failing_call, verdict = None, run_once(case, timeout)
    print(f"case {case.id}: {verdict.line()}")
    if verdict.status is Status.HARNESS_ERROR:
        print("a harness error, not a TVM finding: nothing to reproduce")
        return EXIT_HARNESS
    if not verdict.is_finding:
        print("not a TVM finding: nothing to reproduce")
        return EXIT_OK
    sig = signature(None if failing_call else case.to_dict(), verdict)
    base = root / sig.key
    outcome = write_repro(base, case, verdict, bucket=sig.key, signature=sig, versions=versions(),
                          verify_times=args.verify, triage=not args.no_triage,
                          timeout=timeout, failing_call=failing_call)
    if campaign is not None:
        from fuzzharness.campaign.db import ResultsDB

        db = ResultsDB(campaign)
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
