"""The known-bugs file (see fuzzharness/buckets/known_bugs.py).

  known add REPRO_DIR [--id ID] [--link URL] [--file FILE]
        append an entry for a verified repro (DIR/repros/<bucket>, which has issue.md and
        finding.json): its raw patterns (symptom, stage, the message and throw site of an
        error, or the minimized primitives and facts of a wrong answer) and its trigger (the
        minimized primitive sequence, the culprit pass, the options it needs), so that later
        campaigns report the bug as known — a raw bucket as *probably* known until its
        minimized case has the same trigger; and its witness, the repro's minimized case
        with its root cause, as known_witnesses/<id>.json beside FILE
  known list [--file FILE]
        the entries (the file's and the regression corpus's)
  known check [ID ...] [--file FILE] [--record]
        run every entry's executable witnesses (minimized cases beside the file, the entry's
        ``witness`` and ``routes``) on this TVM: each must fail and be recognized as that
        entry; a witness that passes says the bug may be fixed; --record writes each failing
        witness's root cause into it, so that the entry knows its bug by that identity
        (fuzzharness/commands/known_check.py)

FILE defaults to the packaged fuzzharness/known_bugs.toml.  Exit status 0, 2 on a usage
error (an unverified repro, a duplicate id, a file that would not load); check: 1 when a
witness is not recognized as its entry or no longer fails.
"""

from __future__ import annotations

from pathlib import Path

HELP = "add verified repros to the known-bugs file, list its entries, or check their witnesses"


def add_arguments(p) -> None:
    p.add_argument("action", choices=("add", "list", "check"))
    p.add_argument("paths", nargs="*", metavar="REPRO_DIR|ID",
                   help="add: a verified repro directory; check: entry ids (default: all)")
    p.add_argument("--file", type=Path, metavar="FILE",
                   help="known-bugs file (default: the packaged fuzzharness/known_bugs.toml)")
    p.add_argument("--id", help="add: the entry's id (default: from the repro's title)")
    p.add_argument("--link", default="", metavar="URL", help="add: upstream issue link")
    p.add_argument("--record", action="store_true",
                   help="check: write each failing witness's root cause into it (its identity)")


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
        if args.action == "check":
            from fuzzharness.commands.known_check import check, format_rows
            from fuzzharness.core.errors import EXIT_FINDINGS
            from fuzzharness.core.tvm_support import versions

            known = KnownBugs.load(path)
            unknown = set(args.paths) - {b.id for b in known.bugs}
            if unknown:
                raise UsageError(f"known check: no entry {', '.join(sorted(unknown))}")
            rows = check(known, ids=args.paths or None, tvm_version=versions().get("tvm"),
                         record=args.record)
            print(format_rows(rows))
            bad = [r for r in rows if r["outcome"] not in ("recognized", "no witness", "not run here")]
            return EXIT_FINDINGS if bad else EXIT_OK
        if len(args.paths) != 1:
            raise UsageError("known add takes one repro directory")
        entry = known_entries.add(args.paths[0], path, bug_id=args.id, link=args.link)
        print(f"added {entry.id} to {path}: {entry.title}")
        if entry.witness:
            where = f" --file {path}" if args.file else ""
            print(f"  witness {entry.witness} (run it: fuzzharness known check {entry.id}{where})")
        return EXIT_OK
    except (KnownBugsError, known_entries.EntryError) as e:
        raise UsageError(str(e)) from None
