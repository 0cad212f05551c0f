"""What the verbs share: argument types that refuse nonsense, the campaign-directory / case
vocabulary, deprecated spellings, and the validation of a case given by the user.

Every check here runs before any long work starts and fails with a one-line
:class:`~fuzzharness.core.errors.UsageError` (exit code 2).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from fuzzharness.core.errors import UsageError

#: the per-case timeout when nothing else says (a campaign's own, or `run`'s default)
DEFAULT_TIMEOUT = 30.0

_noted: set[str] = set()


def deprecated(old: str, new: str) -> None:
    """Say once, on a terminal's stderr, that ``old`` is an old spelling of ``new``.

    Old spellings keep working; the note goes only to a person at a terminal, so that a
    script's output (and its one-line errors) stay what they were."""
    if old not in _noted and sys.stderr.isatty():
        _noted.add(old)
        print(f"fuzzharness: note: {old} is an old spelling; use {new}", file=sys.stderr)


# -- argument types (argparse turns a ValueError/ArgumentTypeError into one usage line) ------------
def _number(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text!r}")
    return x


def seconds(text: str) -> float:
    """A duration > 0 (a per-case timeout, a time cap)."""
    x = _number(text)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, not {text!r}")
    return x


def seconds_or_zero(text: str) -> float:
    """A duration ≥ 0, where 0 has a documented meaning (no limit, or: do not)."""
    x = _number(text)
    if x < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0 seconds, not {text!r}")
    return x


def fraction(text: str) -> float:
    x = _number(text)
    if not 0 <= x <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {text!r}")
    return x


def count(text: str) -> int:
    """An integer ≥ 0."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0, not {text!r}")
    return n


def positive(text: str) -> int:
    n = count(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, not {text!r}")
    return n


def name_list(flag: str, text: str | None) -> tuple[str, ...] | None:
    """A comma-separated list of names; None when not given; an empty list is refused."""
    if text is None:
        return None
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    if not names:
        raise UsageError(f"{flag} {text!r}: no names given (leave {flag} out for all)")
    return names


def add_output_flags(p, *, json_help: str = "print a machine-readable JSON summary on stdout",
                     quiet: bool = True) -> None:
    if quiet:
        p.add_argument("-q", "--quiet", action="store_true",
                       help="print only the essentials (no progress, no coverage tables)")
    p.add_argument("--json", action="store_true", help=json_help)


# -- a campaign directory and a case in it ------------------------------------------------------------
def add_case_arguments(p) -> None:
    """``CASE.json`` or ``DIR CASE`` (an index or a case-id prefix in the campaign DIR)."""
    p.add_argument("where", metavar="DIR|CASE.json",
                   help="a case JSON file, or the campaign directory holding the case")
    p.add_argument("case", metavar="CASE", nargs="?",
                   help="with DIR: the case's index or (a prefix of) its id")
    p.add_argument("--db", type=Path, metavar="DIR", help=argparse.SUPPRESS)  # old spelling


def campaign_and_case(args, verb: str) -> tuple[Path | None, str]:
    """(campaign directory or None, case reference) from ``DIR CASE``, ``CASE.json`` or the
    old ``--db DIR CASE``."""
    if args.db is not None:
        deprecated("--db DIR", f"fuzzharness {verb} DIR CASE")
        if args.case is not None:
            raise UsageError(f"--db {args.db} names the campaign already; give one CASE")
        return args.db, args.where
    if args.case is not None:
        return Path(args.where), args.case
    if Path(args.where).is_dir():
        raise UsageError(f"{args.where} is a directory: give the case too, "
                         f"`fuzzharness {verb} {args.where} INDEX|ID`")
    return None, args.where


def load_case(args, verb: str):
    """(Case, stored verdict dict or None, campaign directory or None), checked
    (:func:`check_case`).  A stored case from ``DIR``; else a case file, next to which a
    ``verdict.json`` (as ``pytest -m differential`` writes) is the stored verdict."""
    import json

    from fuzzharness.campaign.db import ResultsDB
    from fuzzharness.core.case import Case
    from fuzzharness.minimize.case_file import load_case_file

    campaign, ref = campaign_and_case(args, verb)
    if campaign is not None:
        db = ResultsDB(campaign, readonly=True)
        try:
            row = db.find_case(ref)
        finally:
            db.close()
        if row is None:
            raise UsageError(f"no case {ref!r} in {campaign}")
        if row["case"] is None:  # TVM failed (or died) while the schedule was being drawn
            from fuzzharness.core.verdict import Verdict

            seen = Verdict.from_dict(row["verdict"]).line()[:160] if row["verdict"] else "no verdict"
            raise UsageError(f"case #{row['idx']} failed while its schedule was drawn, so no case "
                             f"was stored ({seen}); `fuzzharness minimize {campaign}` draws it "
                             "again and writes its repro")
        case = Case.from_dict(row["case"])
        check_case(case)
        return case, row["verdict"], campaign
    path = Path(ref)
    case = load_case_file(path)
    check_case(case, str(path))
    stored = None
    beside = path.with_name("verdict.json")
    if path.name == "case.json" and beside.is_file():
        try:
            stored = json.loads(beside.read_text())
        except (OSError, ValueError):
            stored = None
    return case, stored, None


def check_case(case, where: str = "case") -> None:
    """Refuse a case that is not a valid case — before it runs, so that garbage never
    becomes a TVM finding (exit 2, one line).  Checks the names the case uses (workload,
    target, input distribution, oracle mode) and asks the case's kind whether its workload
    parameters and schedule are well-formed (:meth:`CaseKind.check_case`: the program is
    built from the parameters, the trace has the shape TVM writes)."""
    from fuzzharness.backends import backends
    from fuzzharness.core.case import CaseFormatError
    from fuzzharness.core.kinds import run_kind
    from fuzzharness.generators.inputs import distributions
    from fuzzharness.generators.workloads import workloads

    workloads[case.workload_name]  # UnknownName: one line with the known names
    if not isinstance(case.target, dict) or not isinstance(case.target.get("kind"), str):
        raise CaseFormatError(f"{where}: 'target' must be an object with a 'kind'")
    backends[case.target["kind"]]
    if not isinstance(case.inputs, dict) or not isinstance(case.inputs.get("seed"), int):
        raise CaseFormatError(f"{where}: 'inputs' must be an object with an integer 'seed'")
    distributions[str(case.inputs.get("distribution"))]
    if not isinstance(case.schedule, dict):
        raise CaseFormatError(f"{where}: 'schedule' must be an object")
    if not isinstance(case.pass_config, dict) or not isinstance(case.oracle, dict):
        raise CaseFormatError(f"{where}: 'pass_config' and 'oracle' must be objects")
    problem: Any = run_kind(case).check_case(case)
    if problem:
        raise CaseFormatError(f"{where} is not a valid case: {problem}")
