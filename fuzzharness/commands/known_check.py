"""``fuzzharness known check``: every known bug's executable witness, run on this TVM.

A known-bugs entry with a ``witness`` (a minimized case JSON beside the file; ``routes``:
more of them, the bug reached other ways) is executable: each witness runs in a worker of
the crash-isolating pool (one row per witness), and

``recognized``     it fails and the failure's root cause (:func:`root_cause` of the witness,
                   as a campaign computes it for a minimized bucket) is classified as this
                   entry — the entry knows its own bug;
``other entry``    it fails but is classified as another entry (two entries overlap, or the
                   witness shows another bug);
``not recognized`` it fails, but no entry knows it: the entry's rules are too narrow for its
                   own witness (a campaign would report this bug as NEW);
``fixed?``         it passes (or TVM refuses its schedule) on this TVM: the bug may be fixed
                   here — set the entry's status, or check with ``fuzzharness releases``;
``not run here``   this machine cannot judge it (its target needs a runtime it lacks);
``no witness``     the entry has none (listed, not a failure; nor is ``not run here``).

``--record`` writes each failing witness's root cause into it (``root_cause``): the entry
then knows its bug by that identity (:mod:`fuzzharness.buckets.known_identities`), the
way to add a route or to re-key the witnesses after the identity changed.

Exit status: 0 every witness is recognized, 1 any other outcome of a witness, 2 usage.
A nightly job runs it to learn which known bugs no longer reproduce (docs/nightly.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def check(known, *, ids: list[str] | None = None, timeout: float = 120.0,
          tvm_version: str | None = None, record: bool = False) -> list[dict[str, Any]]:
    """One row per witness of the entries of ``known`` (a KnownBugs; ``ids``: only those):
    id (``id [route]`` for a route), outcome, the verdict line and what it was classified
    as; ``record``: write each failing witness's root cause into it first."""
    from fuzzharness.buckets import known_identities
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.verdict import Verdict
    from fuzzharness.engine.pool import WorkerPool

    bugs = [b for b in known.bugs if not b.id.startswith("corpus:")
            and (not ids or b.id in ids)]
    rows, tasks, cases, entry_of, path_of = [], [], {}, {}, {}
    for b in bugs:
        if not b.witnesses:
            rows.append({"id": b.id, "outcome": "no witness", "line": "", "as": ""})
            continue
        for path in b.witnesses:
            name = b.id if path == b.witness else f"{b.id} [{Path(path).stem}]"
            try:
                case = known_identities.witness_case(json.loads(Path(path).read_text()))
            except (OSError, ValueError) as e:
                rows.append({"id": name, "outcome": "no witness", "line": f"unreadable: {e}", "as": ""})
                continue
            cases[name], entry_of[name], path_of[name] = case, b.id, path
            tasks.append({"task": name, "case": case})
    verdicts = {}
    if tasks:
        with WorkerPool(min(2, len(tasks)), timeout=timeout) as pool:
            verdicts = {r.task["task"]: r.verdict for r in pool.run(tasks)}
    for name, case in cases.items():
        bid = entry_of[name]
        v = verdicts.get(name)
        failing = (case.get("origin") or {}).get("failing_verdict")
        if v is not None and failing and not v.is_finding:
            v = Verdict.from_dict(failing)  # a failure while the schedule was drawn (its script makes the call)
        if v is not None and v.status.value == "inconclusive":  # e.g. no OpenCL device here
            rows.append({"id": name, "outcome": "not run here", "as": "", "line": v.line()[:160]})
            continue
        if v is None or not v.is_finding:
            rows.append({"id": name, "outcome": "fixed?", "as": "",
                         "line": v.line()[:160] if v is not None else "no result"})
            continue
        sig = signature(case, v)
        rc = _root_cause(case, sig) if sig is not None else None
        m = None
        if rc is not None:
            if record:
                known_identities.record(path_of[name], rc)
                known = _with_identity(known, bid, rc.key)
            m = known.classify(sig, tvm_version, rc)
        outcome = ("recognized" if m is not None and m.bug.id == bid
                   else "other entry" if m is not None else "not recognized")
        rows.append({"id": name, "outcome": outcome, "line": v.line()[:160],
                     "as": m.bug.id if m is not None else ""})
    order = {b.id: i for i, b in enumerate(bugs)}
    return sorted(rows, key=lambda r: (order[r["id"].split(" ")[0]], r["id"]))


def _with_identity(known, bid: str, key: str):
    """``known`` with ``key`` among entry ``bid``'s identities (what --record just wrote)."""
    import dataclasses

    return dataclasses.replace(known, bugs=[
        dataclasses.replace(b, identities=b.identities | {key}) if b.id == bid else b
        for b in known.bugs])


def _root_cause(case: dict[str, Any], sig):
    """The witness's root cause as a campaign records it for a minimized bucket: with the
    culprit schedule step of a schedule-level failure (minimize/step_bisect.py)."""
    from fuzzharness.buckets.root_causes import root_cause
    from fuzzharness.core.case import Case
    from fuzzharness.minimize.step_bisect import probeable

    case = {k: v for k, v in case.items() if k != "id"}
    step, facts, site = "", (), ()
    if not sig.has_text and probeable(Case.from_dict(case)):
        from fuzzharness.minimize.step_bisect import culprit_step

        try:
            step, facts, site = culprit_step(Case.from_dict(case), sig)
        except Exception:  # noqa: BLE001 - without a step the root cause is still keyed
            step, facts, site = "", (), ()
    return root_cause(case, sig, "", step, facts, site)


def format_rows(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        lines.append(f"{r['outcome']:<15} {r['id']}" + (f"  (as {r['as']})" if r["outcome"] == "other entry" else ""))
        if r["line"] and r["outcome"] != "recognized":
            lines.append(f"{'':<16}{r['line']}")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    lines.append("known check: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return "\n".join(lines)
