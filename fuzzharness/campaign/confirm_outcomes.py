"""The outcomes of a confirmation: what a failure seen in a campaign's worker and the same
case run again alone say together (see :mod:`fuzzharness.campaign.confirm`).  Plain
functions of two verdicts, shared by the confirmation and the suspect search."""

from __future__ import annotations

from fuzzharness.core.verdict import Status, Verdict

PENDING = "pending"
CONFIRMED = "confirmed"
NONDETERMINISTIC = "confirmed, nondeterministic output"
NOT_ALONE = "not reproduced alone"
DAMAGES = "damages the worker"  # the case a suspect search found (see module doc)

#: statuses that are one kind of failure (an unwritten element reads as nan in one run and as
#: a finite wrong value in another); every other status is a class of its own
_CLASS = {Status.WRONG_RESULT: "output", Status.NAN_INF: "output"}


def status_class(status: Status) -> str:
    return _CLASS.get(status, status.value)


def outcome_of(first: Verdict, alone: Verdict) -> str:
    """The confirmation outcome of a failure seen as ``first`` and, alone, as ``alone``."""
    if not alone.is_finding or status_class(alone.status) != status_class(first.status):
        return NOT_ALONE
    if alone.status != first.status or (first.digest and alone.digest
                                        and first.digest != alone.digest):
        return NONDETERMINISTIC
    return CONFIRMED


def reproduces(first: Verdict, again: Verdict | None) -> bool:
    return again is not None and outcome_of(first, again) != NOT_ALONE
