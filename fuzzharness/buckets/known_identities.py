"""Known bugs recognized by root-cause identity, from their executable witnesses.

A known-bugs entry's witnesses (``witness`` and ``routes``: minimized cases of its bug, as
JSON beside the file) each carry the root cause ``fuzzharness known check --record`` computed
for them — the same identity a campaign gives a minimized bucket
(:func:`fuzzharness.buckets.root_causes.root_cause`, with the culprit step and its site).
A minimized failure with one of those keys *is* the entry's bug: the rules of
:mod:`fuzzharness.buckets.known_bugs` (text patterns over signature fields) are only the
fallback for a route no witness shows yet.  Adding a route is adding a witness.

Invariants: a recorded root cause is read with :meth:`RootCause.from_dict`, so one recorded
by an older identity version is keyed the current way (or stays a trigger); a witness
without a recorded root cause, or one that cannot be read, adds no identity.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fuzzharness.buckets.root_causes import RootCause

#: the key of a witness's recorded root cause (beside the case's own keys)
FIELD = "root_cause"


def identities(paths: Iterable[str]) -> frozenset[str]:
    """The root-cause keys recorded in the witnesses at ``paths``."""
    out = set()
    for p in paths:
        try:
            fields = json.loads(Path(p).read_text()).get(FIELD)
            if isinstance(fields, dict):
                out.add(RootCause.from_dict(fields).key)
        except (OSError, ValueError, TypeError):
            continue
    return frozenset(out)


def witness_case(doc: dict[str, Any]) -> dict[str, Any]:
    """The case of a witness document (its recorded root cause and any id left out)."""
    return {k: v for k, v in doc.items() if k not in (FIELD, "id")}


def record(path: str | Path, rc: RootCause) -> None:
    """Write ``rc`` into the witness at ``path`` (the case itself unchanged)."""
    p = Path(path)
    doc = json.loads(p.read_text())
    doc[FIELD] = rc.to_dict()
    p.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
