"""Coverage statistics of a campaign: what was generated, and how far it got.

Computed from the stored result rows only (so it is right after a resume, and can be
recomputed from any campaign database), and stored in the campaign database in its own
table::

    coverage(axis, value, drawn, proposed, accepted, compiled, verdict)

Axes and what the columns count:

``primitive``  generator steps (:mod:`fuzzharness.generators.schedules`): ``drawn`` every step that drew
               it, ``proposed`` steps that found a site and were applied or attempted
               (accepted, rejected by TVM, or dropped later), ``accepted`` steps TVM accepted;
               ``compiled`` / ``verdict`` count *cases* with at least one accepted step of it
               that compiled / reached an oracle verdict
``call``       ``s_tir.Schedule`` methods applied by accepted steps (a step is often an idiom:
               ``cache_read`` + ``compute_at``), MetaSchedule's included: ``accepted`` calls,
               ``compiled`` / ``verdict`` cases
``workload``, ``dtype``, ``workload/dtype``, ``source`` (random / metaschedule, or a graph
               case's mode), ``option`` (each compiler-option label; ``default`` for cases
               without any), ``graph_op`` (each operator of a graph case): cases;
               ``drawn`` = ``proposed`` = generated, ``accepted`` = schedule not rejected

``reach``      accepted steps by ``method @ site class`` (:mod:`fuzzharness.campaign.reach`:
               the first call of the step and the classes of what it acted on, ``plain``
               for none): ``accepted`` steps, ``compiled`` / ``verdict`` cases
``mutant``     feedback mutants (:mod:`fuzzharness.campaign.feedback`) by their edit: cases
``illegal``    steps proposed without their primitive's legality filter
               (:data:`fuzzharness.generators.schedules.base.ILLEGAL_PERCENT`), by primitive:
               ``drawn``, ``proposed`` (a site), ``accepted`` by TVM (the rest it refused);
               ``compiled`` / ``verdict`` cases with such an accepted step
``refused_later``  cases whose schedule TVM's primitives accepted and a later stage refused
               by design (:mod:`fuzzharness.execution.rejections`: ``nested_parallel``),
               by the refusal's name: ``drawn`` = ``proposed`` = such cases (not findings)
``census``, ``feature``  the feature census of the lowered programs, per target
               (:mod:`fuzzharness.campaign.census_table`)

``compiled``: the case got past lowering, code generation and build (its verdict's stage is
``run``, ``verify`` or ``done``).  ``verdict``: the oracle judged it (pass, inconclusive,
wrong result, nan/inf, order-preserving divergence).  Cases whose generation itself failed
(TVM raised while scheduling) have no stored case; they are counted under
``source = (generation failed)``.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable

from fuzzharness import store
from fuzzharness.campaign import census_table
from fuzzharness.campaign.reach import step_reach

COLUMNS = store.COVERAGE_COLUMNS
COMPILED_STAGES = frozenset({"run", "verify", "done"})
JUDGED = frozenset({"pass", "inconclusive", "wrong_result", "nan_inf",
                    "order_preserving_divergence"})
GENERATION_FAILED = "(generation failed)"

Row = tuple[str, str, int, int, int, int, int]


def compute(rows: Iterable[tuple]) -> list[Row]:
    """Coverage rows from ``(status, stage, case_json[, verdict_json])`` result rows, sorted
    by axis, value (the verdict, when given, adds the feature census: census_table.py)."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])

    def add(axis: str, value: str, *deltas: int) -> None:
        c = counts[(axis, value)]
        for i, d in enumerate(deltas):
            c[i] += d

    for status, stage, case_json, *verdict_json in rows:
        if not case_json:
            add("source", GENERATION_FAILED, 1, 1, 0, 0, 0)
            continue
        case = json.loads(case_json)
        origin = case.get("origin") or {}
        compiled = int(stage in COMPILED_STAGES)
        judged = int(status in JUDGED and stage in ("verify", "done"))
        accepted = int(status != "schedule_rejected")
        workload = (case.get("workload") or {}).get("name", "?")
        dtype = str(origin.get("dtype", "?"))
        per_case = [("workload", workload), ("dtype", dtype), ("workload/dtype", f"{workload}/{dtype}"),
                    ("source", (case.get("schedule") or {}).get("source", "?"))]
        per_case += [("option", o) for o in origin.get("options") or ["default"]]
        per_case += [("graph_op", op) for op in origin.get("ops") or []]  # graph cases
        if origin.get("mutant_of"):  # a feedback mutant (campaign/feedback.py), by its edit
            per_case.append(("mutant", origin["mutant_of"]["op"]))
        for axis, value in per_case:
            add(axis, value, 1, 1, accepted, compiled, judged)
        used: set[tuple[str, str]] = set()
        for step in origin.get("steps") or []:
            name, outcome = step["primitive"], step["outcome"]
            add("primitive", name, 1, int(outcome in ("accepted", "rejected", "dropped")),
                int(outcome == "accepted"), 0, 0)
            if step.get("illegal"):  # proposed without its legality filter (schedules/base.py)
                add("illegal", name, 1, int(outcome in ("accepted", "rejected", "dropped")),
                    int(outcome == "accepted"), 0, 0)
                if outcome == "accepted":
                    used.add(("illegal", name))
            if outcome == "accepted":
                used.add(("primitive", name))
                for call in step.get("calls") or []:
                    add("call", call, 0, 0, 1, 0, 0)
                    used.add(("call", call))
                for value in step_reach(step.get("calls") or [], step.get("site") or [],
                                        step.get("primitive")):
                    add("reach", value, 0, 0, 1, 0, 0)
                    used.add(("reach", value))
        for axis, value in used:
            add(axis, value, 0, 0, 0, compiled, judged)
        if status == "schedule_rejected" and stage != "schedule":  # accepted, refused later
            details = (json.loads(verdict_json[0]) if verdict_json and verdict_json[0] else {}
                       ).get("details") or {}
            add("refused_later", str(details.get("rejection_kind") or "other"), 1, 1, 0, 0, 0)
        for axis, value, lowered in census_table.rows(case, (verdict_json or [None])[0]):
            add(axis, value, 1, 1, int(lowered), compiled * lowered, judged * lowered)
    return sorted((axis, value, *c) for (axis, value), c in counts.items())


def store_table(conn: sqlite3.Connection) -> list[Row]:
    """Recompute the coverage table of the campaign database behind ``conn``; return it."""
    rows = compute(store.result_rows(conn, ("status", "stage", "case_json", "verdict_json")))
    store.write_coverage(conn, rows)
    return rows


def load(conn: sqlite3.Connection) -> list[Row]:
    return store.coverage_rows(conn)


def format_table(rows: list[Row], *, calls_per_line: int = 4) -> str:
    """The coverage section of the campaign summary (plain text)."""
    by_axis: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_axis[r[0]].append(r)
    lines: list[str] = []

    def step_table(axis: str, heading: str) -> None:  # steps by primitive, one per line
        if by_axis.get(axis):
            lines.append(f"coverage: {heading} (steps drawn / with a site / accepted{'' if axis == 'primitive' else ' by TVM'}; "
                         "cases compiled / judged)")
            for _, value, drawn, proposed, accepted, compiled, verdict in by_axis[axis]:
                lines.append(f"  {value:<26} {drawn:>6} {proposed:>6} {accepted:>6} "
                             f"{compiled:>6} {verdict:>6}")

    step_table("primitive", "schedule primitives")
    if by_axis.get("call"):
        lines.append("coverage: s_tir.Schedule methods applied (calls; cases compiled / judged)")
        cells = [f"{v} {a} ({c}/{j})" for _, v, _, _, a, c, j in by_axis["call"]]
        for i in range(0, len(cells), calls_per_line):
            lines.append("  " + ", ".join(cells[i:i + calls_per_line]))
    step_table("illegal", "illegal proposals")
    for axis in ("workload/dtype", "source", "option", "graph_op", "mutant"):
        if by_axis.get(axis):
            lines.append(f"coverage: {axis} (cases generated / schedule accepted / compiled / judged)")
            cells = [f"{v} {d}/{a}/{c}/{j}" for _, v, d, _, a, c, j in by_axis[axis]]
            for i in range(0, len(cells), 3):
                lines.append("  " + ", ".join(cells[i:i + 3]))
    lines += census_table.format_lines(rows)
    return "\n".join(lines)


def one_line(rows: list[Row], *, names: int = 6) -> str:
    """The coverage of a campaign in one line (the tables: :func:`format_table`)."""
    prims = [r for r in rows if r[0] == "primitive"]
    never = sorted(r[1] for r in prims if r[4] == 0)
    pairs = [r for r in rows if r[0] == "workload/dtype"]
    judged = sum(1 for r in pairs if r[6] > 0)
    text = (f"coverage: {len(prims) - len(never)} of {len(prims)} schedule primitives drawn "
            f"were accepted at least once; {judged} of {len(pairs)} workload/dtype pairs judged")
    if never:
        shown = ", ".join(never[:names]) + (f" and {len(never) - names} more" if len(never) > names else "")
        text += f"; never accepted: {shown}"
    mutants = [r for r in rows if r[0] == "mutant"]
    if mutants:
        text += f"; feedback mutants: {sum(r[2] for r in mutants)}"
    illegal = [r for r in rows if r[0] == "illegal"]
    if illegal:  # proposals without the legality filter: TVM must refuse what breaks its rules
        proposed = sum(r[3] for r in illegal)
        text += (f"; illegal proposals: {proposed} with a site, {proposed - sum(r[4] for r in illegal)} "
                 f"refused by TVM")
    later = [r for r in rows if r[0] == "refused_later"]
    if later:  # documented refusals after the primitive accepted (execution/rejections.py)
        text += (f"; accepted, then refused at lowering: {sum(r[2] for r in later)} "
                 f"({', '.join(f'{r[1]} {r[2]}' for r in later)})")
    return text
