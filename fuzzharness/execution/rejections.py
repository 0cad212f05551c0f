"""Build errors that are TVM refusing an invalid schedule, not TVM bugs.

The generator proposes schedules that ``s_tir.Schedule`` accepts but that a later stage
rejects by design.  Each pattern here is such a documented refusal, with a short name and the
reason it is not a bug; a build error matching none of them is a ``compile_error`` finding.
Such a verdict is ``schedule_rejected`` at the stage that refused (not ``schedule``): the
coverage counts these "accepted, then refused at lowering" cases apart
(:mod:`fuzzharness.campaign.coverage`, axis ``refused_later``), without a finding.
"""

from __future__ import annotations

import re

PATTERNS: list[tuple[str, str, str]] = [
    (
        "nested_parallel",
        r"Nested parallel loop is not supported by threadpool",
        "llvm's thread pool runs one level of parallel loops; nesting is refused at lowering",
    ),
]

_COMPILED = [(name, re.compile(p), why) for name, p, why in PATTERNS]


def match(message: str) -> tuple[str, str] | None:
    """(name, reason) when a build error is a legitimate refusal; None when it may be a bug."""
    for name, rx, why in _COMPILED:
        if rx.search(message):
            return name, why
    return None
