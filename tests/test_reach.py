"""The reach map (docs/reach-map.md, fuzzharness/campaign/reach.py): generated from TVM's own
surface, checked against this TVM, and counted by the census.  Both sides: a method or pass
the map lacks is reported; a step's site classes are counted under its first call, and a
class no step built is listed as never built."""

from __future__ import annotations

from fuzzharness.campaign import coverage, reach
from tests.conftest import ROOT

DOC = ROOT / "docs" / "reach-map.md"


def test_the_committed_map_lists_every_schedule_method_and_lowering_pass_of_this_tvm():
    doc = DOC.read_text()
    assert reach.unlisted(doc) == [], "regenerate: python -m fuzzharness.campaign.reach --write docs/reach-map.md"
    # the other side: what TVM would add, and a method nothing accounts for, are reported
    assert reach.unlisted(doc, methods=["cache_write", "new_primitive"], passes=["tirx.NewPass"]) == [
        "method new_primitive", "pass tirx.NewPass"]
    assert "| `unsafe_hide_buffer_access` | excused:" in doc
    assert "`tirx.StorageRewrite`" in doc and "`s_tir.LoopPartition`" in doc


def test_reach_classes_follow_what_a_method_acts_on():
    classes = set(reach.reach_classes())
    assert {"cache_write @ site_reduction", "cache_write @ site_shares_outer_loop",
            "split @ plain", "split @ site_reduction"} <= classes
    assert "split @ site_shares_outer_loop" not in classes  # a loop has no outer-loop class
    assert not any(c.startswith(("sample_", "can_")) for c in classes)


def test_a_step_counts_under_its_first_call_and_unbuilt_classes_are_listed():
    import json

    assert reach.step_reach(["sample_compute_location", "compute_at"], ["site_reduction"]) == [
        "compute_at @ site_reduction"]
    assert reach.step_reach(["cache_write", "reverse_compute_at"], []) == ["cache_write @ plain"]
    # a primitive that makes its own call after set-up calls counts under that call
    assert reach.step_reach(["split", "compute_at", "rolling_buffer"], [], "rolling_buffer") == [
        "rolling_buffer @ plain"]
    assert reach.step_reach(["cache_write", "reverse_compute_at"], [], "cache") == [
        "cache_write @ plain"]
    case = {"workload": {"name": "row_sum"}, "schedule": {"source": "random"}, "origin": {
        "dtype": "float32", "steps": [
            {"primitive": "cache", "outcome": "accepted", "calls": ["cache_write"],
             "site": ["site_nested", "site_reduction"]},
            {"primitive": "split", "outcome": "rejected"}]}}
    rows = coverage.compute([("pass", "done", json.dumps(case))])
    built = {r[1]: r for r in rows if r[0] == "reach"}
    assert set(built) == {"cache_write @ site_nested", "cache_write @ site_reduction"}
    assert built["cache_write @ site_reduction"][4:] == (1, 1, 1)  # accepted, compiled, judged
    missing = reach.never_built(rows)
    assert "cache_write @ site_reduction" not in missing and "cache_write @ plain" in missing
    assert len(missing) == len(reach.reach_classes()) - 2


def test_every_recorded_reason_names_a_class_of_the_map_and_status_prints_it():
    """A reason for a class the map does not list (a renamed method or site class) is stale;
    ``status --coverage`` prints a never-built class with its reason, and says so where none
    is recorded."""
    from fuzzharness.campaign.status import _never_built
    from fuzzharness.generators.schedules import reach_reasons
    from fuzzharness.generators.schedules.site_classes import SITE_FACTS

    classes = set(reach.reach_classes())
    assert set(reach_reasons.REASONS) <= classes, set(reach_reasons.REASONS) - classes
    assert set(reach_reasons.CLASS_REASONS) == {reach.PLAIN, *SITE_FACTS}
    assert reach_reasons.reason("compute_inline @ site_reduction").startswith("TVM refuses")
    unlisted = next(c for c in reach.reach_classes() if c not in reach_reasons.REASONS)
    assert reach_reasons.reason(unlisted) == reach_reasons.CLASS_REASONS[unlisted.split(" @ ")[1]]
    rows = [("reach", c, "", "", 1, 1, 1) for c in reach.reach_classes()
            if c not in ("compute_inline @ site_reduction", "annotate @ site_shares_outer_loop")]
    text = "\n".join(_never_built(rows))
    assert "never built: 2 of" in text and "1 a generator gap" in text
    assert reach_reasons.REASONS["compute_inline @ site_reduction"] in text
    assert reach_reasons.REASONS["annotate @ site_shares_outer_loop"] in text


def test_classifying_a_site_records_nothing_in_the_trace():
    """The generator classifies every accepted step's site: a traced lookup (sch.get_loops)
    would change the case's trace, and with it every case after the first step."""
    from tvm import s_tir

    from fuzzharness.generators.schedules.site_classes import site_classes
    from fuzzharness.generators.workloads import workloads

    sch = s_tir.Schedule(workloads["row_sum"].prim_func({"M": 2, "N": 3, "dtype": "float32"}))
    block = sch.get_sblock("B")
    (i, j) = sch.get_loops(block)
    n = len(sch.trace.insts)
    got = {name: site_classes(sch, [rv]) for name, rv in (("B", block), ("i", i), ("j", j))}
    assert len(sch.trace.insts) == n
    assert got == {"B": ("site_reduction",), "i": (), "j": ("site_reduction",)}


def test_a_step_whose_lookups_are_made_inside_its_call_still_gets_its_site():
    """fuse_reduction_epilogue looks its blocks up inside the call it returns: the site is
    the max reduction it folds into (site_reduction, not a sum) — classified as it was
    before the step, not left plain."""
    from fuzzharness.generators import draw as draws
    from fuzzharness.generators.schedules import ScheduleOptions, random_schedule
    from fuzzharness.generators.workloads import workloads

    p = {"M": 2, "N": 4, "op": "max", "steps": [{"op": "add", "arg": "bias"}], "dtype": "float32"}
    func = workloads["reduce_epilogue"].prim_func(p)
    sites = []
    for seed in range(400):
        _, steps = random_schedule(func, draws.for_case(seed, 0, "site"), ScheduleOptions(
            primitives=["fuse_reduction_epilogue"], max_steps=8, known_site_permille=0))
        sites += [tuple(s.site) for s in steps if s.outcome == "accepted"]
        if len(sites) >= 3:
            break
    assert sites and set(sites) == {("site_padding_not_neutral", "site_reduction", "site_reduction_not_sum")}, sites


def test_a_reduction_site_says_whether_its_combiner_is_a_sum():
    """A sum's block and its reduction loop are ``site_reduction``; a max's are also
    ``site_reduction_not_sum`` (its identity is not 0: a bias cannot be folded into it) and
    ``site_padding_not_neutral`` (padding with 0 changes it); the spatial loop is neither."""
    from tvm import s_tir

    from fuzzharness.generators.schedules.site_classes import site_classes
    from fuzzharness.generators.workloads import workloads

    def classes(op):
        p = {"M": 2, "N": 4, "op": op, "steps": [{"op": "add", "arg": "bias"}], "dtype": "float32"}
        sch = s_tir.Schedule(workloads["reduce_epilogue"].prim_func(p))
        block = sch.get_sblock("red")
        i, j = sch.get_loops(block)
        return [site_classes(sch, [x]) for x in (block, i, j)]

    assert classes("sum") == [("site_reduction",), (), ("site_reduction",)]
    not_sum = ("site_padding_not_neutral", "site_reduction", "site_reduction_not_sum")
    assert classes("max") == classes("min") == [not_sum, (), not_sum]
