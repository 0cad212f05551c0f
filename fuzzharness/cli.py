"""``fuzzharness`` command line: one module per subcommand in :mod:`fuzzharness.commands`.

One vocabulary across the verbs: the campaign directory is always the positional ``DIR``
(``run DIR``, ``run DIR --resume``, ``replay DIR CASE``, ``repro DIR CASE``, ``minimize
DIR``, ``report DIR...``, ``status DIR``, ``config DIR``); ``--out`` always names where a
command writes artefacts that do not belong in a campaign directory (a case file's repro, a
report); ``--quiet`` and ``--json`` mean the same everywhere they exist.  Old spellings
(``--db DIR``, ``run --out DIR``, ``--resume DIR``, ``report --out FILE.html``) still work
and say once, on stderr, what replaces them.

Exit codes (:mod:`fuzzharness.core.errors`): 0 nothing new, 1 new TVM findings, 2 usage /
configuration / environment error (one line on stderr, found before any work starts), 3 the
harness failed (interrupted, harness errors, an internal error; one line on stderr).
"""

from __future__ import annotations

from fuzzharness.core import interrupt

interrupt.install_startup()  # first thing: a Ctrl-C while the rest imports: one line, exit 3

import argparse  # noqa: E402
import os  # noqa: E402
import sqlite3  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import traceback  # noqa: E402

from fuzzharness import __version__  # noqa: E402
from fuzzharness.commands import commands  # noqa: E402
from fuzzharness.core.children import die_with_parent  # noqa: E402
from fuzzharness.core.errors import (  # noqa: E402
    EXIT_CODES_HELP,
    EXIT_HARNESS,
    EXIT_OK,
    EXIT_USAGE,
    HarnessFailure,
    UsageError,
)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``fuzzharness run: error: ...``), exit 2."""

    def error(self, message: str):  # noqa: D401 - argparse's hook
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="fuzzharness",
        description="Numerical-correctness fuzzing and differential testing for Apache TVM.",
        epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=OneLineParser)
    for name, cmd in commands.items():
        p = sub.add_parser(name, help=cmd.HELP, description=cmd.__doc__, epilog=EXIT_CODES_HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.add_arguments(p)
        p.set_defaults(_command=cmd)
    return parser


def user_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean "the user asked for something wrong"."""
    from fuzzharness.buckets.known_bugs import KnownBugsError
    from fuzzharness.campaign.db import DatabaseError
    from fuzzharness.campaign.settings import SettingsError
    from fuzzharness.core.case import CaseFormatError
    from fuzzharness.core.registry import UnknownName

    return (UsageError, CaseFormatError, DatabaseError, UnknownName, SettingsError,
            KnownBugsError)


def _interrupted_line(args) -> str:
    hint = getattr(args._command, "interrupted_hint", None)
    text = hint(args) if hint is not None else ""
    return "fuzzharness: interrupted" + (f"; {text}" if text else "")


def _internal_error(e: BaseException) -> str:
    """Save the traceback of a bug in the harness; the one line that points to it."""
    try:
        with tempfile.NamedTemporaryFile("w", prefix="fuzzharness-traceback-", suffix=".txt",
                                         delete=False) as f:
            f.write(traceback.format_exc())
        where = f" (traceback: {f.name})"
    except OSError:
        where = ""
    return f"fuzzharness: internal error: {type(e).__name__}: {str(e)[:300]}{where}"


def main(argv: list[str] | None = None) -> int:
    die_with_parent()  # a child of another fuzzharness process ends with it
    interrupt.install()  # Ctrl-C / SIGTERM: unwind once, then never a traceback
    try:
        code = _main(sys.argv[1:] if argv is None else argv)
    finally:
        sys.stdout.flush()
        interrupt.settle()
    if interrupt.interrupted.is_set():
        # End here, with our status.  Python ends a process by SIGINT (exit -2) when it saw a
        # KeyboardInterrupt go unhandled out of code run by a C extension (its process-wide
        # flag stays set, whatever caught the exception later) — a Ctrl-C during pandas'
        # or matplotlib's imports did that after the one line had been printed.
        sys.stderr.flush()
        os._exit(code)
    return code


def _main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("fuzzharness: interrupted before it started; nothing was done", file=sys.stderr)
        return EXIT_HARNESS
    try:
        from fuzzharness.core.plugins import load_plugins

        load_plugins()
        return int(args._command.main(args, argv) or 0)
    except KeyboardInterrupt:
        print(_interrupted_line(args), file=sys.stderr, flush=True)
        return EXIT_HARNESS
    except user_errors() as e:
        print(f"fuzzharness: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except sqlite3.DatabaseError as e:  # a database that went bad under a read
        print(f"fuzzharness: error: unreadable campaign database ({e})", file=sys.stderr)
        return EXIT_USAGE
    except HarnessFailure as e:
        print(f"fuzzharness: failed: {e}", file=sys.stderr)
        return EXIT_HARNESS
    except BrokenPipeError:  # `fuzzharness list | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:  # noqa: BLE001 - a bug of ours: one line, traceback in a file
        if interrupt.interrupted.is_set():  # the interrupt, wrapped by what it cut short
            print(_interrupted_line(args), file=sys.stderr, flush=True)  # (a class body's
            return EXIT_HARNESS  # __set_name__ raises RuntimeError from KeyboardInterrupt)
        print(_internal_error(e), file=sys.stderr)
        return EXIT_HARNESS


if __name__ == "__main__":
    sys.exit(main())
