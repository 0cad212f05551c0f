"""Re-run one case and print its verdict.

CASE is a case JSON file, or — with --db DIR — a case index or (prefix of a) case id stored
in that campaign.  From a database the new verdict is compared with the stored one: same
status and, when there are outputs, the same output bits (digest).

The case runs in a fresh worker process, so a case that crashes TVM is reported, not fatal;
--in-process runs it here instead (handy under a debugger).
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
    from fuzzharness.campaign.db import ResultsDB
    from fuzzharness.core.case import Case, CaseFormatError
    from fuzzharness.core.errors import UsageError

    if args.db is not None:
        db = ResultsDB(args.db)
        row = db.find_case(args.case)
        db.close()
        if row is None:
            raise UsageError(f"no case {args.case!r} in {args.db}")
        if row["case"] is None:  # TVM failed (or died) while the schedule was being drawn
            from fuzzharness.core.verdict import Verdict

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


def main(args, argv) -> int:
    from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_OK
    from fuzzharness.core.verdict import Verdict

    case, stored = load_case(args)
    # Validate names up front so a typo is a usage error, not a harness_error verdict.
    from fuzzharness.backends import backends
    from fuzzharness.generators.workloads import workloads

    workloads[case.workload_name]
    backends[case.target.get("kind", "")]
    if args.in_process:
        from fuzzharness.execution.stages import execute

        verdict = execute(case).verdict
    else:
        from fuzzharness.engine.isolated import run_isolated

        verdict = run_isolated(case, args.timeout)
    if args.json:
        print(json.dumps(verdict.to_dict(), indent=1, default=str))
    else:
        print(f"case {case.id} ({case.workload_name} {case.params})")
        print(verdict.line())
    if stored is not None:
        old = Verdict.from_dict(stored)
        same = old.status == verdict.status and old.digest == verdict.digest
        print(f"stored: {old.line()}")
        print("reproduced: " + ("yes (same status and output bits)" if same else "NO"),
              file=sys.stderr if args.json else sys.stdout)
    return EXIT_FINDINGS if verdict.is_finding else EXIT_OK
