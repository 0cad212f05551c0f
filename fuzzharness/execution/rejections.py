"""Build errors that are TVM refusing an invalid schedule, not TVM bugs.

The generator proposes schedules that ``s_tir.Schedule`` accepts but that a later stage
rejects by design.  Each pattern here is such a documented refusal, with the reason it is not
a bug; a build error matching none of them is a ``compile_error`` finding.
"""

from __future__ import annotations

import re

PATTERNS: list[tuple[str, str]] = [
    (
        r"Nested parallel loop is not supported by threadpool",
        "llvm's thread pool runs one level of parallel loops; nesting is refused at lowering",
    ),
]

_COMPILED = [(re.compile(p), why) for p, why in PATTERNS]


def match(message: str) -> str | None:
    """The reason a build error is a legitimate refusal, or None when it may be a bug."""
    for rx, why in _COMPILED:
        if rx.search(message):
            return why
    return None
