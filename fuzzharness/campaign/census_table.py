"""The feature census of a campaign, as rows of its coverage table and lines of its summary.

Each case's verdict carries ``details["features"]`` (:mod:`fuzzharness.execution.census`, computed in
the worker once the case was lowered).  Two axes of the coverage table
(:mod:`fuzzharness.campaign.coverage`) hold them, per target label
(:func:`fuzzharness.generators.targets.label`: ``llvm``, ``opencl``, ``adreno``, ``cuda``)::

    axis="census"   value="<target>"            drawn: cases of that target; accepted: cases
                                                 lowered (they have a census)
    axis="feature"  value="<target> <feature>"  drawn = accepted: lowered cases with it

``compiled`` and ``verdict`` count those cases that compiled and that an oracle judged, as
on every axis.  Shares are of the target's *lowered* cases: a case that failed before
lowering has no census, nor has a whole-graph case on llvm (``relax.build`` lowers inside
the VM build: there is no lowered program to read).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

#: a feature the census goal names (fuzzharness.execution.census.GOALS) below this share is flagged
GOAL_SHARE = 0.02


def target_label(case: dict[str, Any]) -> str:
    from fuzzharness.generators.targets import label

    return label(case.get("target") or {})


def rows(case: dict[str, Any], verdict_json: str | None) -> list[tuple[str, str, bool]]:
    """``(axis, value, lowered)`` rows of one stored case (see the module docstring)."""
    target = target_label(case)
    features = None
    if verdict_json:
        try:
            features = (json.loads(verdict_json).get("details") or {}).get("features")
        except (ValueError, AttributeError):
            features = None
    out = [("census", target, features is not None)]
    out += [("feature", f"{target} {f}", True) for f in features or ()]
    return out


def format_lines(coverage_rows: list[tuple]) -> list[str]:
    """The census section of the campaign summary."""
    from fuzzharness.execution.census import GOALS

    lowered: dict[str, int] = {}
    for axis, value, _drawn, _proposed, accepted, *_ in coverage_rows:
        if axis == "census":
            lowered[value] = accepted
    by_target: dict[str, dict[str, int]] = defaultdict(dict)
    for axis, value, drawn, *_ in coverage_rows:
        if axis == "feature":
            target, _, feature = value.partition(" ")
            by_target[target][feature] = drawn
    if not lowered:
        return []
    lines = ["census: features of the lowered programs (cases with it, share of the "
             "target's lowered cases; fuzzharness/execution/census.py)"]
    for target in sorted(lowered, key=lambda t: (-lowered[t], t)):
        n = lowered[target]
        feats = by_target.get(target, {})
        lines.append(f"  {target}: {n} lowered cases")
        cells = [f"{f} {c} ({100 * c / n:.1f} %)" for f, c in sorted(feats.items()) if n]
        for i in range(0, len(cells), 3):
            lines.append("    " + ", ".join(cells[i:i + 3]))
        rare = [f for f in GOALS if n and feats.get(f, 0) / n < GOAL_SHARE
                and _applies(f, target)]
        if rare:
            lines.append(f"    under {100 * GOAL_SHARE:g} %: " + ", ".join(rare))
    return lines


def _applies(feature: str, target: str) -> bool:
    """Goal features that a target can have at all (texture scopes only on Adreno, shared
    memory only on GPUs, parallel loops only on CPUs; the rest everywhere)."""
    if feature == "scope:texture" or feature.startswith("scope:global.texture"):
        return target == "adreno"
    if feature == "scope:shared":
        return target != "llvm"
    if feature.startswith("reduction_under:parallel"):
        return target == "llvm"  # GPU loops are bound to threads, not parallel
    return True
