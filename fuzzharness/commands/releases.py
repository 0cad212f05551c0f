"""Run a repro or a case on each TVM release: which release introduced the bug?

  releases DIR|CASE.json ...        repro directories (DIR/repros/<bucket>: repro.py, case.json)
                                    or case files; each repro's issue.md gets a line
                                    "present in 0.25.0.post1 / 0.26.0 / 0.27.0.post1 → introduced
                                    in ..." in its Environment section
  releases --corpus DIR [NAME ...]  every corpus entry (or those named): meta.json gets
                                    "releases", DIR/RELEASES.md the table of entries × releases
  releases --prepare                only make the environments

The environments (one virtual environment per release, with its apache-tvm-ffi pin and what
the harness's workers need) are made with pip on first use and cached under
$FUZZHARNESS_CACHE or ~/.cache/tvm-fuzzharness/releases (fuzzharness/releases/check.py).  A repro
script runs as `python -I repro.py` (exit 1 reproduces, 0 fixed, 2 other); a case runs in a
harness worker under that release's interpreter, which also reports its output bits: an
order-preserving case whose bits differ between releases is a cross-release finding.

Exit status: 0 done, 1 a cross-release finding, 2 usage error or an environment that
cannot be made (e.g. no package registry).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fuzzharness.commands.common import seconds

HELP = "run repros, cases or the corpus on each TVM release (which release introduced it)"


def add_arguments(p) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="repro directories or case files; with --corpus: entry names")
    p.add_argument("--corpus", type=Path, metavar="DIR", help="run the corpus in DIR")
    p.add_argument("--releases", metavar="V[,V...]",
                   help="which releases (default: all of fuzzharness/releases/check.py, oldest first)")
    p.add_argument("--prepare", action="store_true", help="only make the environments")
    p.add_argument("--no-write", action="store_true",
                   help="print only; leave issue.md, meta.json and RELEASES.md alone")
    p.add_argument("--no-case", action="store_true",
                   help="run only the repro scripts, not the cases through the harness")
    p.add_argument("--timeout", type=seconds, default=600.0, help="seconds per run (default 600)")


def _items(args) -> list[tuple[str, Path | None, Path | None, Path | None, Path | None]]:
    """``(name, repro.py, case.json, issue.md, meta.json)`` per thing to run."""
    from fuzzharness.core.errors import UsageError

    items = []
    if args.corpus is not None:
        from fuzzharness.repro import corpus

        entries = corpus.named(args.corpus, args.paths)
        for e in entries:
            items.append((e.name, e.script, e.dir / "case.json", e.dir / "issue.md",
                          e.dir / "meta.json"))
        return items
    for text in args.paths:
        p = Path(text)
        if p.is_dir():
            repro, case = p / "repro.py", p / "case.json"
            if not repro.is_file() and not case.is_file():
                raise UsageError(f"{p}: neither repro.py nor case.json in it")
            items.append((p.name, repro if repro.is_file() else None,
                          case if case.is_file() else None,
                          p / "issue.md" if (p / "issue.md").is_file() else None, None))
        elif p.is_file():
            items.append((p.stem, None, p, None, None))
        else:
            raise UsageError(f"{p}: no such repro directory or case file")
    return items


def _load_case(path: Path | None):
    """The case to run through the harness (None: none, or one whose failure happened while
    the schedule was drawn — replaying its case.json does not fail; its repro.py does)."""
    if path is None:
        return None
    from fuzzharness.core.case import Case

    case = Case.from_json(path.read_text())
    return None if case.origin.get("failing_call") else case


def main(args, argv) -> int:
    from fuzzharness.core.errors import EXIT_FINDINGS, EXIT_OK, UsageError
    from fuzzharness.releases import check as releases
    from fuzzharness.releases import report as release_report

    try:
        chosen = releases.find(args.releases.split(",") if args.releases else None)
    except ValueError as e:
        raise UsageError(str(e)) from None
    items = [] if args.prepare else _items(args)
    if not args.prepare and not items:
        raise UsageError("nothing to run: name repro directories, case files or --corpus DIR")

    def say(text: str) -> None:
        print(f"fuzzharness: {text}", file=sys.stderr, flush=True)

    pythons = {}
    for r in chosen:
        try:
            pythons[r.version] = releases.environment(r, say=say)
        except releases.ReleaseEnvError as e:
            raise UsageError(f"TVM {r.version}: {e}") from None
        say(f"TVM {r.version}: {pythons[r.version]}")
    if args.prepare:
        return EXIT_OK

    findings = 0
    names = [r.version for r in chosen]
    print(f"{'':<40} " + " ".join(f"{n:<14}" for n in names))
    for name, repro, case_path, issue, meta in items:
        case = None if args.no_case else _load_case(case_path)
        outcomes = [releases.run_on(v, pythons[v], repro, case, timeout=args.timeout)
                    for v in names]
        cells = [f"{releases.state_of(o):<14}" for o in outcomes]
        print(f"{name:<40} " + " ".join(cells))
        print(f"    {releases.summarize(outcomes)}")
        for o in outcomes:
            if o.repro_line:
                print(f"    {o.release} repro.py: {o.repro_line[:150]}")
            if o.status:
                order = {True: "order-preserving", False: "reassociating"}.get(
                    o.order_preserved, "order unknown")
                print(f"    {o.release} case (worker TVM {o.worker_tvm}): {o.status}, bits "
                      f"{o.digest or '-'} ({order}): {o.message[:100]}")
        findings += releases.cross_release(outcomes) is not None
        if not args.no_write:
            if issue is not None:
                release_report.update_issue(issue, outcomes)
            if meta is not None:
                release_report.update_meta(meta, outcomes)
    if args.corpus is not None and not args.no_write:
        path = release_report.write_table(args.corpus, names)
        print(f"table: {path}")
    return EXIT_FINDINGS if findings else EXIT_OK
