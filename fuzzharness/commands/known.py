"""The known-bugs file (see fuzzharness/buckets/known_bugs.py).

  known add REPRO_DIR [--id ID] [--link URL] [--file FILE]
        append an entry for a verified repro (DIR/repros/<bucket>, which has issue.md and
        finding.json): its raw patterns (symptom, stage, the message and throw site of an
        error, or the minimized primitives and facts of a wrong answer) and its trigger (the
        minimized primitive sequence, the culprit pass, the options it needs), so that later
        campaigns report the bug as known — a raw bucket as *probably* known until its
        minimized case has the same trigger
  known list [--file FILE]
        the entries (the file's and the regression corpus's)

FILE defaults to the packaged fuzzharness/known_bugs.toml.  Exit status 0, 2 on a usage
error (an unverified repro, a duplicate id, a file that would not load).
"""

from __future__ import annotations

from pathlib import Path

HELP = "add verified repros to the known-bugs file, or list its entries"


def add_arguments(p) -> None:
    p.add_argument("action", choices=("add", "list"))
    p.add_argument("paths", nargs="*", metavar="REPRO_DIR", help="add: a verified repro directory")
    p.add_argument("--file", type=Path, metavar="FILE",
                   help="known-bugs file (default: the packaged fuzzharness/known_bugs.toml)")
    p.add_argument("--id", help="add: the entry's id (default: from the repro's title)")
    p.add_argument("--link", default="", metavar="URL", help="add: upstream issue link")


def main(args, argv) -> int:
    from fuzzharness.buckets import known_entries
    from fuzzharness.buckets.known_bugs import KnownBugs, KnownBugsError, default_known_bugs_path
    from fuzzharness.core.errors import EXIT_OK, UsageError

    path = args.file or default_known_bugs_path()
    try:
        if args.action == "list":
            for bug in KnownBugs.load(path).bugs:
                print(f"{bug.id:<48} {bug.link or bug.status}\n    {bug.title}")
            return EXIT_OK
        if len(args.paths) != 1:
            raise UsageError("known add takes one repro directory")
        entry = known_entries.add(args.paths[0], path, bug_id=args.id, link=args.link)
        print(f"added {entry.id} to {path}: {entry.title}")
        return EXIT_OK
    except (KnownBugsError, known_entries.EntryError) as e:
        raise UsageError(str(e)) from None
