"""Coverage statistics: stored in the campaign database, shown in the run summary, and
consistent with the stored cases."""

import json
import sqlite3
from collections import Counter

import pytest

from fuzzharness.campaign import coverage
from tests.conftest import run_cli

pytestmark = pytest.mark.slow  # campaigns, subprocesses, clusters


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("coverage") / "run"
    r = run_cli("run", "--seed", "21", "--max-cases", "16", "--workers", "2", "--out", out,
                "--no-progress", "--coverage")
    assert r.returncode in (0, 1), r.stderr
    return out, r.stdout


def table(out, sql):
    con = sqlite3.connect(out / "results.sqlite")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_summary_shows_coverage(campaign):
    _, stdout = campaign
    for section in ("coverage: schedule primitives", "coverage: s_tir.Schedule methods",
                    "coverage: workload/dtype", "coverage: option"):
        assert section in stdout


def test_status_shows_one_line_or_the_tables(campaign):
    """The terminal gets one line of coverage by default; the tables on request."""
    out, _ = campaign
    short = run_cli("status", out)
    assert short.returncode == 0, short.stderr
    lines = [ln for ln in short.stdout.splitlines() if ln.startswith("coverage")]
    assert len(lines) == 1 and "schedule primitives drawn were accepted at least once" in lines[0]
    full = run_cli("status", out, "--coverage")
    for section in ("coverage: schedule primitives", "coverage: workload/dtype"):
        assert section in full.stdout


def test_stored_table_is_recomputed_from_the_results(campaign):
    out, _ = campaign
    stored = table(out, "SELECT * FROM coverage ORDER BY axis, value")
    rows = table(out, "SELECT status, stage, case_json, verdict_json FROM results")
    assert stored == coverage.compute(rows) and stored


def test_feature_census_is_stored_and_shown(campaign):
    """Every lowered case carries its census; the coverage table counts it per target."""
    from fuzzharness.generators.targets import label

    out, stdout = campaign
    assert "census: features of the lowered programs" in stdout
    per_target: Counter = Counter()
    lowered: Counter = Counter()
    for case_json, verdict_json in table(out, "SELECT case_json, verdict_json FROM results"):
        if not case_json:
            continue
        target = label(json.loads(case_json)["target"])
        features = json.loads(verdict_json)["details"].get("features")
        if features is not None:
            lowered[target] += 1
            per_target.update(f"{target} {f}" for f in features)
    assert lowered, "no case of the campaign was lowered"
    cov = {(a, v): (d, acc) for a, v, d, _, acc, _, _ in table(out, "SELECT * FROM coverage")}
    assert {t: cov[("census", t)][1] for t in lowered} == dict(lowered)
    assert {v: d for (a, v), (d, _) in cov.items() if a == "feature"} == dict(per_target)


def test_counts_match_the_cases(campaign):
    out, _ = campaign
    rows = table(out, "SELECT status, stage, case_json FROM results")
    cases = [json.loads(c) for _, _, c in rows if c]
    cov = {(a, v): (d, p, acc, c, j) for a, v, d, p, acc, c, j in table(out, "SELECT * FROM coverage")}
    steps = Counter(s["primitive"] for c in cases for s in c["origin"]["steps"]
                    if s["outcome"] == "accepted")
    assert steps, "the campaign accepted no schedule step"
    for name, n in steps.items():
        assert cov[("primitive", name)][2] == n
    per_wd = Counter(f"{c['workload']['name']}/{c['origin']['dtype']}" for c in cases)
    assert {v: cov[("workload/dtype", v)][0] for v in per_wd} == dict(per_wd)
    judged = sum(1 for s, st, c in rows if c and s == "pass")
    assert sum(cov[k][4] for k in cov if k[0] == "workload") >= judged
    from fuzzharness.campaign.reach import step_reach

    reach = Counter(r for c in cases for s in c["origin"]["steps"] if s["outcome"] == "accepted"
                    for r in step_reach(s.get("calls") or [], s.get("site") or []))
    assert reach and {v: cov[("reach", v)][2] for v in reach} == dict(reach)
    for (axis, value), (drawn, proposed, accepted, compiled, verdict) in cov.items():
        assert verdict <= compiled <= accepted, (axis, value)
        if axis not in ("call", "reach"):  # calls and their sites are counted once applied
            assert accepted <= proposed <= drawn, (axis, value)


def nested_parallel(sch):
    i, j, _ = sch.get_loops(sch.get_sblock("C"))
    sch.parallel(i)
    sch.parallel(j)


def test_a_schedule_accepted_then_refused_at_lowering_is_counted_apart_and_is_no_finding():
    """Two nested parallel loops: both ``parallel`` calls are accepted, and llvm's lowering
    refuses the nesting by design (execution/rejections.py) — a schedule_rejected verdict at
    a lowering stage, counted under ``refused_later`` and in the one-line coverage; a refusal
    by the primitive itself (stage ``schedule``) is not counted there."""
    from fuzzharness.execution.stages import execute
    from tests.test_repro import scheduled

    case = scheduled("matmul", {"M": 2, "N": 2, "K": 2, "dtype": "float32"}, nested_parallel)
    v = execute(case).verdict
    assert v.status.value == "schedule_rejected" and v.stage.value != "schedule", v.line()
    assert v.details["rejection_kind"] == "nested_parallel" and not v.is_finding
    rows = coverage.compute([(v.status.value, v.stage.value, case.to_json(), json.dumps(v.to_dict())),
                             ("schedule_rejected", "schedule", case.to_json(), None)])
    later = [r for r in rows if r[0] == "refused_later"]
    assert later == [("refused_later", "nested_parallel", 1, 1, 0, 0, 0)]
    assert "accepted, then refused at lowering: 1 (nested_parallel 1)" in coverage.one_line(rows)
    rows = coverage.compute([("schedule_rejected", "schedule", case.to_json(), None)])
    assert not [r for r in rows if r[0] == "refused_later"]
    assert "refused at lowering" not in coverage.one_line(rows)


def test_illegal_proposals_and_mutants_are_counted_apart():
    """Steps proposed without their legality filter (``"illegal": true``) get their own axis:
    proposed, accepted by TVM (the rest refused); an ordinary step is not counted there.
    Feedback mutants too (axis ``mutant``, by edit)."""
    import json as _json

    from fuzzharness.campaign.coverage import compute, one_line
    from fuzzharness.generators.cases import GenSettings, generate_case

    case = generate_case(7, 5, GenSettings()).to_dict()
    case["origin"]["steps"] = [
        {"primitive": "parallel", "outcome": "accepted", "illegal": True, "calls": ["parallel"]},
        {"primitive": "parallel", "outcome": "rejected", "illegal": True, "error": "x"},
        {"primitive": "fuse", "outcome": "accepted", "calls": ["fuse"]},
    ]
    plain = compute([("pass", "done", _json.dumps(case), None)])
    illegal = {r[1]: r[2:] for r in plain if r[0] == "illegal"}
    assert illegal == {"parallel": (2, 2, 1, 1, 1)}
    assert "illegal proposals: 2 with a site, 1 refused by TVM" in one_line(plain)
    # a feedback mutant is counted by its edit; a plain case is not
    case["origin"]["mutant_of"] = {"index": 3, "op": "splice"}
    rows = compute([("pass", "done", _json.dumps(case), None)])
    assert [r[1:] for r in rows if r[0] == "mutant"] == [("splice", 1, 1, 1, 1, 1)]
    assert "feedback mutants: 1" in one_line(rows) and "mutant" not in one_line(plain)
