"""The regression corpus of confirmed TVM bugs (see fuzzharness/repro/corpus.py).

  corpus add REPRO_DIR --name NAME [--upstream URL] [--known-bug ID]
        copy a verified repro (DIR/repros/<bucket>) into the corpus as entry NAME
  corpus list
        the entries, their expected status and upstream links
  corpus check [NAME ...]
        run each entry's repro.py in a fresh process and compare its exit status with the
        expected one (1 while the bug reproduces, 0 once fixed)
  corpus refresh [NAME ...]
        re-run each entry's case and rewrite its bucket signature in meta.json when this
        harness now computes another one (message normalisation or schedule facts changed)

Exit status of check: 0 every entry behaves as expected, 1 some entry does not, 2 usage.
"""

from __future__ import annotations

from pathlib import Path

HELP = "manage and replay the regression corpus of confirmed TVM bugs"


def add_arguments(p) -> None:
    p.add_argument("action", choices=("add", "list", "check", "refresh"))
    p.add_argument("paths", nargs="*", metavar="ARG",
                   help="add: the repro directory; check, refresh: entry names (default: all)")
    p.add_argument("--corpus", type=Path, default=Path("corpus"), metavar="DIR",
                   help="corpus directory (default ./corpus)")
    p.add_argument("--name", help="add: the entry's name (lowercase words joined by '-')")
    p.add_argument("--upstream", default="", metavar="URL", help="add: upstream issue link")
    p.add_argument("--known-bug", metavar="ID", help="add: the known-bugs entry it belongs to")
    p.add_argument("--expected", default="reproduces", choices=("reproduces", "fixed"),
                   help="add: expected status (default: reproduces)")


def main(args, argv) -> int:
    from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_OK, UsageError
    from fuzzharness.repro import corpus
    from fuzzharness.repro.verify import run_script

    try:
        if args.action == "add":
            if len(args.paths) != 1 or not args.name:
                raise UsageError("corpus add takes one repro directory and --name NAME")
            e = corpus.add(args.paths[0], args.corpus, args.name, upstream=args.upstream,
                           known_bug=args.known_bug, expected=args.expected)
            print(f"added {e.dir} (bucket {e.meta['bucket']}, expected: {e.meta['expected']})")
            return EXIT_OK
        entries = corpus.named(args.corpus, args.paths)
        if args.action == "list":
            for e in entries:
                m = e.meta
                print(f"{e.name:<40} {m['expected']:<11} {m['upstream'] or m.get('known_bug') or '-'}"
                      f"\n    {m['title']}")
            return EXIT_OK
        if args.action == "refresh":
            for e in entries:
                old, new = corpus.refresh(e)
                print(f"{e.name:<40} {'unchanged' if old == new else f'bucket {old} → {new}'}")
            return EXIT_OK
        bad = 0
        for e in entries:
            run = run_script(e.script)
            ok = run.status == e.expected_exit
            bad += not ok
            print(f"{'ok ' if ok else 'BAD'} {e.name:<40} exit {run.status} "
                  f"(expected {e.expected_exit}: {e.meta['expected']}) {run.seconds:.1f} s")
        return EXIT_FINDINGS if bad else EXIT_OK
    except corpus.CorpusError as e:
        raise UsageError(str(e)) from None
