"""Re-run one case and print its verdict.

CASE is a case JSON file, or — with --db DIR — a case index or (prefix of a) case id stored
in that campaign.  From a database the new verdict is compared with the stored one: same
status and, when there are outputs, the same output bits (digest).

The case runs in a fresh worker process with heap hygiene on (fuzzharness.engine.hygiene),
so a case that crashes TVM is reported, not fatal; --in-process runs it here instead (handy
under a debugger; no allocator checks then).  When the verdict differs from the stored one,
replay says why it may: nondeterministic output, or a stored failure that was seen only
after other cases in a campaign's worker.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HELP = "re-run one stored case and print its verdict"


def add_arguments(p) -> None:
    p.add_argument("case", metavar="CASE", help="case JSON file, or an index/id with --db")
    p.add_argument("--db", type=Path, metavar="DIR", help="campaign directory holding the case")
    p.add_argument("--in-process", action="store_true", help="run in this process")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds (default 120)")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")


def load_case(args):
    """(case dict, stored verdict dict or None) from the command-line arguments."""
    from fuzzharness.case import Case, CaseFormatError
    from fuzzharness.engine.db import ResultsDB
    from fuzzharness.errors import UsageError

    if args.db is not None:
        db = ResultsDB(args.db)
        row = db.find_case(args.case)
        db.close()
        if row is None:
            raise UsageError(f"no case {args.case!r} in {args.db}")
        if row["case"] is None:  # TVM failed (or died) while the schedule was being drawn
            from fuzzharness.verdict import Verdict

            seen = Verdict.from_dict(row["verdict"]).line()[:160] if row["verdict"] else "no verdict"
            raise UsageError(f"case #{row['idx']} failed while its schedule was drawn, so no case "
                             f"was stored ({seen}); `fuzzharness minimize {args.db}` draws it "
                             "again and writes its repro")
        return Case.from_dict(row["case"]), row["verdict"]
    path = Path(args.case)
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise CaseFormatError(f"{path}: not a text file") from None
    return Case.from_json(text), None


def _confirmation(args) -> dict | None:
    """The stored case's confirmation record (fuzzharness.engine.confirm), if any."""
    from fuzzharness.engine.db import ResultsDB

    db = ResultsDB(args.db)
    try:
        row = db.find_case(args.case)
        return db.confirmation(row["idx"]) if row is not None else None
    finally:
        db.close()


def run_isolated(case, timeout: float):
    from fuzzharness.engine.pool import WorkerPool

    with WorkerPool(1, timeout=timeout) as pool:
        (result,) = list(pool.run([{"task": 0, "case": case.to_dict()}]))
    return result.verdict


def main(args, argv) -> int:
    from fuzzharness.errors import EXIT_FINDINGS, EXIT_OK
    from fuzzharness.verdict import Verdict

    case, stored = load_case(args)
    # Validate names up front so a typo is a usage error, not a harness_error verdict.
    from fuzzharness.backends import backends
    from generators.workloads import workloads

    workloads[case.workload_name]
    backends[case.target.get("kind", "")]
    if args.in_process:
        from fuzzharness.execute import execute

        verdict = execute(case).verdict
    else:
        verdict = run_isolated(case, args.timeout)
    if args.json:
        print(json.dumps(verdict.to_dict(), indent=1, default=str))
    else:
        print(f"case {case.id} ({case.workload_name} {case.params})")
        print(verdict.line())
    if stored is not None:
        from fuzzharness.engine.confirm import replay_note

        old = Verdict.from_dict(stored)
        print(f"stored: {old.line()}")
        print(replay_note(old, verdict, _confirmation(args)),
              file=sys.stderr if args.json else sys.stdout)
    return EXIT_FINDINGS if verdict.is_finding else EXIT_OK
