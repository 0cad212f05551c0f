"""Which bucket a campaign minimizes first.

Severity (:func:`severity`): wrong results, nan/inf and crashes of the generated code first (a
silent miscompile is what a user cannot see), then hangs and crashes of the compiler, then
internal compile errors, then reference mismatches and order-preserving divergences; within
a class new before *probably known*, then the most frequent, then the earliest seen.
"""

from __future__ import annotations

from typing import Any

from fuzzharness.buckets.root_causes import WRONG_STATUSES
from fuzzharness.buckets.signatures import Signature

SEVERITY_LABELS = ("wrong result / nan / crash of the generated code", "hang or compiler crash",
                   "internal compile error", "reference mismatch / order divergence")


def severity(sig: Signature) -> int:
    """0 (most severe) … 3 (see the module docstring)."""
    if sig.symptom in WRONG_STATUSES or (sig.symptom == "crash" and sig.stage in ("run", "verify")):
        return 0
    if sig.symptom in ("timeout", "crash"):
        return 1
    if sig.symptom == "compile_error":
        return 2
    return 3


def minimize_order(buckets: list[dict[str, Any]], probably_known: set[str] = frozenset()
                   ) -> list[dict[str, Any]]:
    """Buckets (rows with ``key``, ``signature``, ``count``, ``example_idx``) in the order to
    minimize them: severity class, then new before *probably known* (a raw match that the
    minimized case must confirm), then most frequent, then the earliest seen."""
    return sorted(buckets, key=lambda b: (severity(b["signature"]), b["key"] in probably_known,
                                          -int(b["count"]), int(b["example_idx"])))
