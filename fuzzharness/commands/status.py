"""A campaign at a glance: running or stopped, cases and rate, verdicts, findings (new ones
most severe first, with where their repro is or why there is none), repros, versions.

  fuzzharness status DIR [--json] [--coverage]

Like AFL's fuzzer_stats: read-only (works while the campaign runs, and in a read-only
directory); "running" comes from the marker the driver keeps in DIR/driver.json, so a
driver that was killed shows as such.

Exit status: 0, or 2 when DIR is not a readable campaign.
"""

from __future__ import annotations

import json
from pathlib import Path

from fuzzharness.commands.common import add_output_flags

HELP = "show a running or finished campaign at a glance"


def add_arguments(p) -> None:
    p.add_argument("dir", metavar="DIR", type=Path, help="the campaign directory")
    p.add_argument("--coverage", action="store_true", help="the full coverage tables")
    p.add_argument("--known-bugs", type=Path, metavar="FILE",
                   help="known-bugs file (default: the campaign's)")
    add_output_flags(p, quiet=False, json_help="print the status as JSON")


def main(args, argv) -> int:
    from fuzzharness.campaign.status import format_status, read_status
    from fuzzharness.core.errors import EXIT_OK

    st = read_status(args.dir, str(args.known_bugs) if args.known_bugs else None)
    if args.json:
        print(json.dumps(st, indent=1, default=str))
    else:
        print(format_status(st, coverage_table=args.coverage))
    return EXIT_OK
