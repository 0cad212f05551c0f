"""Re-run one case and print its verdict.

  fuzzharness replay CASE.json          a case file
  fuzzharness replay DIR CASE           case CASE (index, or a prefix of its id) of campaign DIR

The new verdict is compared with the stored one — from the campaign database, or from the
``verdict.json`` next to a ``case.json`` (as ``pytest -m differential`` writes them): the
same status and, when there are outputs, the same output bits.  When they differ, replay says
why they may: nondeterministic output (a kernel that reads memory nothing wrote), or a stored
failure that was seen only after other cases in a campaign's worker
(:func:`fuzzharness.campaign.confirm.replay_note`).

The case is checked first (a file that is not a valid case is a usage error, exit 2, never
a TVM finding), then runs in a fresh worker process with heap hygiene on
(:mod:`fuzzharness.core.hygiene`), so a case that crashes TVM is reported, not fatal;
--in-process runs it here instead (handy under a debugger; no allocator checks then).
The campaign directory is only read (a read-only directory works).

Exit status: 0 the case passes (or is not a finding), 1 it is a TVM finding, 2 usage error,
3 the harness failed (a harness_error verdict, or interrupted).
"""

from __future__ import annotations

import json
import sys

from fuzzharness.commands.common import DEFAULT_TIMEOUT, add_case_arguments, load_case, seconds

HELP = "re-run one stored case and print its verdict"


def add_arguments(p) -> None:
    add_case_arguments(p)
    p.add_argument("--in-process", action="store_true", help="run in this process")
    p.add_argument("--timeout", type=seconds, metavar="SECONDS",
                   help=f"per-case timeout (default: the campaign's; else {DEFAULT_TIMEOUT:g}, "
                        "as for `run`)")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")


def interrupted_hint(args) -> str:
    return "nothing was stored"


def _confirmation(args) -> dict | None:
    """The stored case's confirmation record (fuzzharness.campaign.confirm), if any."""
    from fuzzharness.campaign.db import ResultsDB
    from fuzzharness.commands.common import campaign_and_case

    campaign, ref = campaign_and_case(args, "replay")
    if campaign is None:
        return None
    db = ResultsDB(campaign, readonly=True)
    try:
        row = db.find_case(ref)
        return db.confirmation(row["idx"]) if row is not None else None
    finally:
        db.close()


def main(args, argv) -> int:
    from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_HARNESS, EXIT_OK
    from fuzzharness.core.verdict import Status, Verdict

    case, stored, campaign = load_case(args, "replay")
    timeout = args.timeout or _campaign_timeout(campaign) or DEFAULT_TIMEOUT
    if args.in_process:
        from fuzzharness.execution.stages import execute

        verdict = execute(case).verdict
    else:
        from fuzzharness.engine.isolated import run_isolated

        verdict = run_isolated(case, timeout)
    if args.json:
        print(json.dumps(verdict.to_dict(), indent=1, default=str))
    else:
        print(f"case {case.id} ({case.workload_name} {case.params})")
        print(verdict.line())
    if stored is not None:
        from fuzzharness.campaign.confirm import replay_note

        old = Verdict.from_dict(stored)
        out = sys.stderr if args.json else sys.stdout
        print(f"stored: {old.line()}", file=out)
        print(replay_note(old, verdict, _confirmation(args)), file=out)
    if verdict.status is Status.HARNESS_ERROR:
        return EXIT_HARNESS
    return EXIT_FINDINGS if verdict.is_finding else EXIT_OK


def _campaign_timeout(campaign) -> float | None:
    """The per-case timeout the campaign ran its cases with."""
    if campaign is None:
        return None
    from fuzzharness.campaign.db import ResultsDB

    db = ResultsDB(campaign, readonly=True)
    try:
        stored = db.campaign()
    finally:
        db.close()
    t = (stored or {}).get("settings", {}).get("timeout")
    return float(t) if isinstance(t, int | float) and t > 0 else None
