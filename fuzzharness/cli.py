"""``fuzzharness`` command line: one module per subcommand in :mod:`fuzzharness.commands`.

Exit codes: 0 nothing new found, 1 new findings (or a replay that is a finding), 2 usage or
configuration error — always one line on stderr, never a traceback, nothing stored damaged.
"""

from __future__ import annotations

import argparse
import sys

from fuzzharness import __version__
from fuzzharness.commands import commands
from fuzzharness.core.errors import EXIT_USAGE, UsageError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fuzzharness",
        description="Numerical-correctness fuzzing and differential testing for Apache TVM.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, cmd in commands.items():
        p = sub.add_parser(name, help=cmd.HELP, description=cmd.__doc__,
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    try:
        from fuzzharness.core.plugins import load_plugins

        load_plugins()
        return int(args._command.main(args, argv) or 0)
    except user_errors() as e:
        print(f"fuzzharness: error: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
