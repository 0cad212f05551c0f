"""Repro scripts: written for real TVM 0.27 failures, run standalone in fresh isolated
processes, exit 1 while the bug reproduces, 0 once it is fixed, 2 for anything else; issue
text only for verified repros; the database record; the regression corpus format."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from fuzzharness.buckets.signatures import signature
from fuzzharness.campaign.db import SCHEMA_VERSION
from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import trace_to_json, versions
from fuzzharness.core.verdict import Status
from fuzzharness.execution.stages import execute
from fuzzharness.kinds.tir.script import write_script
from fuzzharness.repro import arrays
from fuzzharness.repro.kit import error_pattern
from fuzzharness.repro.package import write_repro
from fuzzharness.repro.verify import foreign_imports, run_script
from tests.conftest import ROOT, run_cli


def scheduled(workload: str, params: dict, build, *, oracle="exact", distribution="ones") -> Case:
    from tvm import s_tir

    from fuzzharness.generators.workloads import workloads

    sch = s_tir.Schedule(workloads[workload].prim_func(params))
    build(sch)
    return Case(workload={"name": workload, "params": params},
                inputs={"distribution": distribution, "seed": 3},
                schedule={"source": "test", "trace": trace_to_json(sch.trace)},
                oracle={"mode": oracle}, origin={"dtype": params["dtype"]})


def loop_partition(sch):
    _, j = sch.get_loops(sch.get_sblock("B"))
    sch.loop_partition(j, [1, 1, None])


def vectorized_unit_loop_with_unroll(sch):
    i, _, _ = sch.get_loops(sch.get_sblock("C"))
    sch.vectorize(i)
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)
    sch.annotate(i, "pragma_unroll_explicit", 1)


def repro_of(case: Case, out: Path, **kw):
    verdict = execute(case).verdict
    sig = signature(case.to_dict(), verdict)
    return verdict, write_repro(out, case, verdict, bucket=sig.key, signature=sig,
                                versions=versions(), triage=kw.pop("triage", False), **kw)


@pytest.fixture(scope="module")
def wrong_sum(tmp_path_factory):
    """loop_partition of row_sum's reduction loop: TVM 0.27 re-runs the init per partition."""
    case = scheduled("row_sum", {"M": 1, "N": 3, "dtype": "float32"}, loop_partition)
    return case, *repro_of(case, tmp_path_factory.mktemp("repro") / "wrong-sum", triage=True)


@pytest.mark.slow
def test_wrong_result_repro_reproduces_standalone_and_writes_the_issue(wrong_sum, tmp_path):
    case, verdict, outcome = wrong_sum
    assert verdict.status is Status.WRONG_RESULT
    assert outcome.reproduced and outcome.runs[0].exit_code == 1
    d = outcome.dir
    text = (d / "repro.py").read_text()
    assert foreign_imports(text) == []
    assert "sch.loop_partition(loop=l2, factors=[1, 1, None]" in text
    assert f"TVM {versions()['tvm']} · tvm-ffi {versions()['tvm_ffi']} · LLVM" in text
    # copied elsewhere and run with -I: no harness on the path, nothing but tvm and numpy
    copy = tmp_path / "elsewhere.py"
    copy.write_text(text)
    run = run_script(copy)
    assert run.exit_code == 1, run.output
    assert "B[0]: got 1.0, expected 3.0" in run.output and "error/bound inf" in run.output
    # the issue: TVM's template sections, the verified output, triage hints
    issue = (d / "issue.md").read_text()
    for section in ("# [Bug]", "### Expected behavior", "### Actual behavior", "### Environment",
                    "### Steps to reproduce", "### Triage", "needs-triage"):
        assert section in issue
    assert "got 1.0, expected 3.0" in issue and "`loop_partition`" in issue
    assert "disabling any single pass does not make the output correct" in issue
    assert "Scheduled TIR" in issue
    assert Case.from_json((d / "case.json").read_text()) == case


@pytest.mark.slow
def test_the_script_exits_0_once_the_bug_is_fixed(wrong_sum, tmp_path):
    """Without the miscompiling primitive the same script judges a correct result."""
    text = (wrong_sum[2].dir / "repro.py").read_text()
    fixed = "\n".join(ln for ln in text.splitlines() if "sch.loop_partition(" not in ln)
    (tmp_path / "fixed.py").write_text(fixed)
    run = run_script(tmp_path / "fixed.py")
    assert run.exit_code == 0, run.output
    assert "RESULT: fixed" in run.output


@pytest.mark.slow
def test_a_crash_is_reported_even_though_it_kills_the_process(wrong_sum, tmp_path):
    """A real segfault where TVM would compile: the parent survives and says so."""
    text = (wrong_sum[2].dir / "repro.py").read_text()
    crashing = text.replace('    _stage("compile")\n',
                            '    _stage("compile")\n    import ctypes\n    ctypes.string_at(0)\n')
    assert crashing != text
    expect_crash = crashing.replace("EXPECT = {'symptom': 'wrong_result'",
                                    "EXPECT = {'signal': 'SIGSEGV', 'symptom': 'crash'")
    assert expect_crash != crashing
    (tmp_path / "crash.py").write_text(expect_crash)
    run = run_script(tmp_path / "crash.py")
    assert run.exit_code == 1 and "died with SIGSEGV in stage compile" in run.output, run.output
    (tmp_path / "other.py").write_text(crashing)  # a crash where a wrong sum was expected
    run = run_script(tmp_path / "other.py")
    assert run.exit_code == 2 and "SIGSEGV" in run.output, run.output


@pytest.mark.slow
def test_compile_error_repro_matches_the_error_text(tmp_path):
    case = scheduled("matmul", {"M": 1, "N": 4, "K": 8, "dtype": "float32"},
                     vectorized_unit_loop_with_unroll)
    verdict, outcome = repro_of(case, tmp_path / "lanes")
    assert verdict.status is Status.COMPILE_ERROR and verdict.stage.value == "lower"
    assert outcome.reproduced, outcome.runs[-1].output
    assert "Check failed: lanes > 1" in outcome.runs[0].output
    assert "an error in stage compile (the harness's lower)" in outcome.runs[0].output


@pytest.mark.slow
def test_a_repro_that_does_not_reproduce_is_never_an_issue(tmp_path):
    """A correct schedule presented as a wrong result: the script says 0, no issue.md."""
    case = scheduled("row_sum", {"M": 2, "N": 4, "dtype": "float32"},
                     lambda sch: sch.split(sch.get_loops(sch.get_sblock("B"))[0], [None, 2]))
    claimed = execute(case).verdict
    assert claimed.status is Status.PASS
    claimed.status = Status.WRONG_RESULT
    sig = signature(case.to_dict(), claimed)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "issue.md").write_text("stale")
    outcome = write_repro(tmp_path / "r", case, claimed, bucket=sig.key, signature=sig,
                          versions=versions(), triage=False)
    assert not outcome.reproduced and outcome.runs[0].exit_code == 0
    assert not (tmp_path / "r" / "issue.md").exists()
    assert "exited 0" in (tmp_path / "r" / "NOT-REPRODUCED.md").read_text()
    assert outcome.record["reproduced"] is False


@pytest.mark.slow
def test_failure_while_drawing_the_schedule_gets_a_script(tmp_path, monkeypatch):
    """No case is stored for it: the failing call is captured from a fresh draw."""
    from hypothesis import strategies as st
    from tvm import s_tir

    import fuzzharness.generators.cases as cases
    from fuzzharness.generators import draw as draws
    from fuzzharness.kinds.tir.generation_failure import as_case, capture, capture_isolated
    from fuzzharness.minimize.hypothesis_shrink import draw

    def failing_schedule(func, data, settings):
        sch = s_tir.Schedule(func)
        block = sch.get_sblock("B")
        loops = sch.get_loops(block)
        sch.decompose_reduction(block, loops[data.draw(st.integers(1, 1))])
        sch.get_loops(block)  # a lookup the failing call does not need
        sch.reindex(sch.get_sblock("B_update"), ("read", 0))  # TVM 0.27: InternalError

    monkeypatch.setattr(cases, "draw_schedule", failing_schedule)
    settings = cases.GenSettings(workloads=("row_sum",))
    data = draws.for_case(1, 0)
    with pytest.raises(Exception, match="Check failed"):
        cases.draw_case(data, settings)
    choices = draws.recorded_choices(data)
    _, verdict, _ = draw(choices, settings)
    assert verdict.status is Status.COMPILE_ERROR and verdict.stage.value == "schedule"
    call = capture(choices, settings)
    assert call.line == "sch.reindex(block=b4, buffer=('read', 0))"
    assert capture_isolated(choices, settings) == call  # the same, from a forked child
    case = as_case(call, settings, {})
    assert [i[0] for i in case.trace[0]] == ["GetSBlock", "GetLoops", "DecomposeReduction",
                                              "GetSBlock"]
    sig = signature(None, verdict)
    outcome = write_repro(tmp_path / "gen", case, verdict, bucket=sig.key, signature=sig,
                          versions=versions(), triage=False, failing_call=call.line)
    assert outcome.reproduced, outcome.runs[-1].output
    assert "outer->body.get() == inner" in (tmp_path / "gen" / "issue.md").read_text()


@pytest.mark.slow
def test_a_dlight_rule_failing_in_its_own_code_gets_a_script(tmp_path):
    """dlight's GEMV rule, tried by the dlight style on a depthwise conv2d for Adreno, fails
    in its own Python (an assert, an attribute of a non-constant extent) instead of returning
    None: no schedule call raised, so the bucket used to end "not reproduced" (a README
    campaign's NEW ``AttributeError 'ID' object has no attribute 'ID' [gemv.py]``).  The rule
    call is captured; its script reproduces, and title and expected behaviour name the rule."""
    import dataclasses
    import traceback

    from fuzzharness.generators import draw as draws
    from fuzzharness.generators.cases import GenSettings, case_data, draw_case
    from fuzzharness.kinds.tir.generation_failure import as_case, capture
    from fuzzharness.minimize.hypothesis_shrink import draw

    settings = dataclasses.replace(GenSettings(), workloads=("depthwise_conv2d",),
                                   target={"kind": "opencl", "device": "adreno"})

    def dlight_failure():  # the first case of the stream whose drawing fails inside dlight
        for seed in range(10):
            for index in range(40):
                data = case_data(seed, index, None)
                try:
                    draw_case(data, settings)
                except Exception as e:  # noqa: BLE001
                    if "/dlight/" in traceback.extract_tb(e.__traceback__)[-1].filename:
                        return draws.recorded_choices(data)
        pytest.fail("no dlight rule failure in 400 depthwise conv2d cases for Adreno")

    choices = dlight_failure()
    _, verdict, _ = draw(choices, settings)
    assert verdict.status is Status.COMPILE_ERROR and "dlight" in verdict.details["site"]
    call = capture(choices, settings)
    assert call.method == "dlight.GEMV.apply" and call.trace == [], call
    assert call.line == ("with tvm.target.Target({'kind': 'opencl', 'device': 'adreno'}) as "
                         "target: tvm.s_tir.dlight.gpu.GEMV().apply(sch.mod[\"main\"], target, False)")
    case = as_case(call, settings, {})
    sig = signature(None, verdict)
    outcome = write_repro(tmp_path / "gemv", case, verdict, bucket=sig.key, signature=sig,
                          versions=versions(), triage=False, failing_call=call.line)
    assert outcome.reproduced, outcome.runs[-1].output
    assert outcome.title.startswith("[Bug] [TIR][dlight] dlight.gpu.GEMV fails in its own code"), \
        outcome.title
    issue = (tmp_path / "gemv" / "issue.md").read_text()
    assert "A dlight rule should return a schedule for the function, or None" in issue


# -- pieces ----------------------------------------------------------------------------------------
def test_error_pattern_ignores_numbers_and_addresses():
    import re

    p = error_pattern("InternalError: Check failed: block_realize == old (0x55d1 vs. 0x7f00) : 3")
    assert re.search(p, "tvm.error.InternalError: Check failed: block_realize == old "
                        "(0xab12 vs. 0xcd34) : 17")
    assert not re.search(p, "InternalError: Check failed: other")
    # the OpenCL compiler names its own temporary copy of the source: any path, same error
    p = error_pattern("GeneratedCodeError: OpenCL build failed: error: "
                      "/root/.cache/pocl/kcache/tempfile_IWlFvl.cl:13:246: cannot take the address")
    assert re.search(p, "GeneratedCodeError: OpenCL build failed: error: "
                        "/tmp/x/tempfile_h2xj66.cl:13:246: cannot take the address")
    assert not re.search(p, "GeneratedCodeError: OpenCL build failed: error: "
                            "/tmp/x/tempfile_h2xj66.cl:13:246: use of undeclared identifier")
    # an exception without a message ("AssertionError: " in a verdict) is printed as its bare
    # name in a traceback (dlight's GPU GEMV rule asserting, seen on a GPU host)
    p = error_pattern("AssertionError: ")
    assert re.search(p, '    assert sch.get(ts_o).extent.value == 1\nAssertionError\n')
    assert re.search(p, "AssertionError: with a message")
    assert not re.search(p, "ValueError\n")
    p = error_pattern("InternalError: Check failed: lanes > 1 (1 vs. 1) : ")
    assert re.search(p, "tvm.error.InternalError: Check failed: lanes > 1 (1 vs. 1) : \n")


@pytest.mark.parametrize("a", [
    np.ones((2, 3), "float16"), np.arange(6, dtype="float32").reshape(2, 3) / 3,
    np.array([1, -2, 3], "int8"), np.array([np.nan, np.inf, -0.0, 1e-40]),
    np.random.default_rng(0).standard_normal((40, 40)).astype("float16"),
])
def test_arrays_are_written_as_source_that_gives_the_same_bits(a):
    assert arrays.same_bits(arrays.evaluate(arrays.array_source(a)), a)


def test_bound_mode_reference_is_inlined_and_identical_to_the_harness(tmp_path):
    """Float inputs from a seed: the script regenerates them and computes the model's bound."""
    case = scheduled("matmul", {"M": 3, "N": 40, "K": 40, "dtype": "float16-acc32"},
                     lambda sch: None, oracle="bound", distribution="uniform")
    verdict = execute(case).verdict
    verdict.status = Status.WRONG_RESULT  # only the text is checked here
    s = write_script(case, verdict, bucket="x", signature=None, versions=versions())
    assert "rng = np.random.default_rng([3, 0])" in s.text
    assert "gamma = ku / (1.0 - ku)" in s.text and 'error model "dot"' in s.text
    assert "embedded" not in " ".join(s.notes)
    import runpy

    from fuzzharness.kinds.tir.reference import expectation

    (tmp_path / "repro.py").write_text(s.text)
    ns = runpy.run_path(str(tmp_path / "repro.py"), run_name="imported")  # defines, runs nothing

    e = expectation(case)
    got = ns["reference"](ns["make_inputs"]())
    assert arrays.same_bits(got["C"][1], e.expected["C"].bound)


def test_database_migrates_to_the_repros_table_additively(tmp_path):
    from fuzzharness.campaign.db import ResultsDB

    db = ResultsDB(tmp_path, create=True)
    db.create_campaign(1, {}, {})
    db.close()
    con = sqlite3.connect(tmp_path / "results.sqlite")
    con.execute("DROP TABLE repros")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    con.commit()
    con.close()
    db = ResultsDB(tmp_path)
    assert db.repros() == [] and db.campaign()["seed"] == 1
    db.add_repro({"bucket": "k", "reproduced": True, "runs": 10, "signature": {"a": 1},
                  "notes": ["n"]})
    assert db.repro("k")["reproduced"] is True and db.repro("k")["signature"] == {"a": 1}
    db.close()
    con = sqlite3.connect(tmp_path / "results.sqlite")
    assert con.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == str(SCHEMA_VERSION)


def test_root_causes_group_the_repros_of_a_version_3_database(tmp_path):
    """3 → 4 adds the root-cause columns to an existing repros table (its rows kept); two
    buckets whose repros have one root cause are one root cause, a third stays apart, and a
    repro that did not reproduce is no root cause at all."""
    from fuzzharness.buckets.root_causes import RootCause
    from fuzzharness.campaign.db import ResultsDB

    db = ResultsDB(tmp_path, create=True)
    db.create_campaign(1, {}, {})
    db.close()
    con = sqlite3.connect(tmp_path / "results.sqlite")
    con.execute("DROP TABLE repros")
    con.execute("CREATE TABLE repros(bucket TEXT PRIMARY KEY, case_id TEXT, case_json TEXT, "
                "signature TEXT, path TEXT, reproduced INTEGER NOT NULL, runs INTEGER NOT NULL, "
                "exit_code INTEGER, output TEXT, original_length INTEGER, length INTEGER, "
                "minimize_seconds REAL, minimize_runs INTEGER, title TEXT, notes TEXT, "
                "created REAL NOT NULL)")
    con.execute("INSERT INTO repros(bucket, reproduced, runs, created) VALUES ('old', 1, 1, 0)")
    con.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    con.commit()
    con.close()
    db = ResultsDB(tmp_path)
    assert db.repro("old")["root_cause"] is None
    a = RootCause("wrong_output", "verify", ("loop_partition",), culprit="schedule")
    b = RootCause("wrong_output", "verify", ("cache_write", "vectorize"), culprit="tirx.VectorizeLoop")
    for bucket, rc, ok, length in (("b1", a, True, 3), ("b2", a, True, 2), ("b3", b, True, 4),
                                   ("b4", b, False, 1)):
        db.add_repro({"bucket": bucket, "reproduced": ok, "runs": 1, "length": length,
                      "path": f"/r/{bucket}", "title": bucket, "root_cause": rc.key,
                      "root_cause_fields": rc.to_dict()})
    rows = {r["key"]: r for r in db.root_causes()}
    assert set(rows) == {a.key, b.key}
    assert rows[a.key]["buckets"] == ["b1", "b2"] and rows[a.key]["path"] == "/r/b2"
    assert rows[b.key]["buckets"] == ["b3"]  # b4 did not reproduce
    assert RootCause.from_dict(rows[a.key]["fields"]) == a
    db.close()


def test_a_version_5_database_is_rekeyed_and_attached_buckets_join_their_root_cause(tmp_path):
    """5 → 6: root causes stored by version 1 of the identity (primitive sequence and an
    unconfirmed culprit in the key) are keyed again from their fields, so two repros of one
    bug that differed only in order and culprit become one distinct bug, while another bug
    stays apart; a bucket attached without minimizing joins its root cause, and an
    attachment to a root cause the database does not hold counts nowhere."""
    from fuzzharness.buckets.root_causes import VERSION as RC_VERSION
    from fuzzharness.buckets.root_causes import RootCause
    from fuzzharness.campaign.db import ResultsDB

    db = ResultsDB(tmp_path, create=True)
    db.create_campaign(1, {}, {})
    db.close()
    v1 = {"symptom": "wrong_output", "stage": "verify", "options": [], "facts": [], "detail": "",
          "site": "", "workload": "", "dtype": ""}
    rows = [("b1", v1 | {"primitives": ["compute_at", "vectorize"], "culprit": "tirx.StorageRewrite"}),
            ("b2", v1 | {"primitives": ["vectorize", "compute_at"], "culprit": "tirx.Simplify"}),
            ("b3", v1 | {"primitives": ["loop_partition"], "culprit": "schedule"})]
    con = sqlite3.connect(tmp_path / "results.sqlite")
    con.execute("DROP TABLE attachments")
    for bucket, fields in rows:
        con.execute("INSERT INTO repros(bucket, reproduced, runs, created, length, path, title, "
                    "root_cause, root_cause_fields) VALUES (?, 1, 1, 0, 2, ?, ?, ?, ?)",
                    (bucket, f"/r/{bucket}", bucket, f"v1-{bucket}", json.dumps(fields)))
    con.execute("INSERT INTO buckets(key, symptom, stage, title, signature, first_seen, last_seen, "
                "count, example_idx) VALUES ('b4', 'wrong_result', 'verify', 't', '{}', 0, 0, 5, 9)")
    con.execute("UPDATE meta SET value = '5' WHERE key = 'schema'")
    con.commit()
    con.close()
    db = ResultsDB(tmp_path)
    keys = {r["bucket"]: r["root_cause"] for r in db.repros()}
    assert keys["b1"] == keys["b2"] != keys["b3"] and not keys["b1"].startswith("v1-")
    assert db.repro("b1")["root_cause_fields"]["version"] == RC_VERSION
    assert RootCause.from_dict(db.repro("b3")["root_cause_fields"]).culprit == "schedule"
    db.attach("b4", keys["b1"], "ir_shape", via="b1")
    db.attach("b5", "no-such-root-cause", "ir_shape")
    causes = {r["key"]: r for r in db.root_causes()}
    assert set(causes) == {keys["b1"], keys["b3"]}
    assert causes[keys["b1"]]["buckets"] == ["b1", "b2"] and causes[keys["b1"]]["repros"] == 2
    assert causes[keys["b1"]]["attached"] == {"b4": "ir_shape"} and causes[keys["b1"]]["cases"] == 5
    assert causes[keys["b3"]]["attached"] == {}
    db.close()
    con = sqlite3.connect(tmp_path / "results.sqlite")
    assert con.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == str(SCHEMA_VERSION)


def test_a_version_7_database_moves_its_attachments_to_the_rekeyed_root_causes(tmp_path):
    """7 → 8: root-cause identity 3 changes every key; a bucket attached to a root cause by
    its old key follows it to the new key, and one attached to a key no repro had stays
    outside every root cause."""
    from fuzzharness.buckets.root_causes import RootCause
    from fuzzharness.campaign.db import ResultsDB

    db = ResultsDB(tmp_path, create=True)
    db.create_campaign(1, {}, {})
    db.close()
    v2 = {"symptom": "wrong_output", "stage": "verify", "primitives": ["compute_at", "vectorize"],
          "options": [], "facts": ["alloc_in_vectorized_loop"], "culprit": "", "detail": "",
          "site": "", "workload": "", "dtype": "", "evidence": "ir_shape", "version": 2}
    con = sqlite3.connect(tmp_path / "results.sqlite")
    con.execute("INSERT INTO repros(bucket, reproduced, runs, created, length, path, title, "
                "root_cause, root_cause_fields) VALUES ('b1', 1, 1, 0, 2, '/r/b1', 't', 'old-key', ?)",
                (json.dumps(v2),))
    for bucket, key in (("b2", "old-key"), ("b3", "another-old-key")):
        con.execute("INSERT INTO attachments VALUES (?, ?, 'ir_shape', 'b1', 0)", (bucket, key))
    con.execute("UPDATE meta SET value = '7' WHERE key = 'schema'")
    con.commit()
    con.close()
    db = ResultsDB(tmp_path)
    new = RootCause.from_dict(v2).key
    assert db.repro("b1")["root_cause"] == new != "old-key"
    (cause,) = db.root_causes()
    assert cause["key"] == new and cause["attached"] == {"b2": "ir_shape"}
    assert db.attachments()["b3"]["root_cause"] == "another-old-key"
    db.close()


def test_a_version_8_database_joins_placements_a_hiding_wrapper_misled(tmp_path):
    """8 → 9: identity 4 keys a cache_read and a cache_write misled by a loop_partition
    wrapper (stored by identity 3 under two keys) as one root cause, while a merge on the
    same kind of site stays its own."""
    from fuzzharness.campaign.db import ResultsDB

    db = ResultsDB(tmp_path, create=True)
    db.create_campaign(1, {}, {})
    db.close()
    v3 = {"symptom": "wrong_output", "stage": "verify", "options": [], "facts": [], "culprit": "",
          "detail": "", "site": "", "workload": "", "dtype": "", "evidence": "step_site",
          "version": 3, "step_facts": [], "step_site": ["site_dependence_hidden"]}
    con = sqlite3.connect(tmp_path / "results.sqlite")
    for bucket, step in (("b1", "cache_read"), ("b2", "cache_write"), ("b3", "merge")):
        fields = v3 | {"step": step, "primitives": ["loop_partition", step]}
        con.execute("INSERT INTO repros(bucket, reproduced, runs, created, length, path, title, "
                    "root_cause, root_cause_fields) VALUES (?, 1, 1, 0, 2, ?, 't', ?, ?)",
                    (bucket, f"/r/{bucket}", f"v3-{bucket}", json.dumps(fields)))
    con.execute("INSERT INTO attachments VALUES ('b4', 'v3-b2', 'ir_shape', 'b2', 0)")
    con.execute("INSERT INTO buckets(key, symptom, stage, title, signature, first_seen, last_seen, "
                "count, example_idx) VALUES ('b4', 'wrong_result', 'verify', 't', '{}', 0, 0, 5, 9)")
    con.execute("UPDATE meta SET value = '8' WHERE key = 'schema'")
    con.commit()
    con.close()
    for readonly in (True, False):  # status reads without migrating; a campaign migrates
        db = ResultsDB(tmp_path, readonly=readonly)
        causes = {tuple(c["buckets"]): c for c in db.root_causes()}
        assert set(causes) == {("b1", "b2"), ("b3",)}, readonly
        assert causes[("b1", "b2")]["attached"] == {"b4": "ir_shape"}, readonly
        db.close()
    db = ResultsDB(tmp_path)
    keys = {r["bucket"]: r["root_cause"] for r in db.repros()}
    assert keys["b1"] == keys["b2"] != keys["b3"] and not keys["b1"].startswith("v3-")
    db.close()


def test_a_version_11_database_keeps_a_padded_max_apart_from_a_padded_unused_iterator(tmp_path):
    """11 → 12: identity 7 keys pad_einsum by whether zero padding is neutral.  A stored
    pad_einsum root cause of a max (identity 6: its site says the combiner is not a sum) gets
    the class; a sum's stays without it — two root causes, rekeyed, attachments moved."""
    from fuzzharness.campaign.db import ResultsDB

    db = ResultsDB(tmp_path, create=True)
    db.create_campaign(1, {}, {})
    db.close()
    v6 = {"symptom": "wrong_output", "stage": "verify", "options": [], "facts": [], "culprit": "",
          "detail": "", "site": "", "workload": "", "dtype": "", "evidence": "step_site",
          "version": 6, "step": "pad_einsum", "step_facts": [], "primitives": ["pad_einsum"]}
    con = sqlite3.connect(tmp_path / "results.sqlite")
    for bucket, site in (("b1", ["site_reduction", "site_reduction_not_sum"]), ("b2", ["site_reduction"])):
        con.execute("INSERT INTO repros(bucket, reproduced, runs, created, length, path, title, "
                    "root_cause, root_cause_fields) VALUES (?, 1, 1, 0, 2, ?, 't', ?, ?)",
                    (bucket, f"/r/{bucket}", f"v6-{bucket}", json.dumps(v6 | {"step_site": site})))
    con.execute("INSERT INTO attachments VALUES ('b3', 'v6-b1', 'ir_shape', 'b1', 0)")
    con.execute("UPDATE meta SET value = '11' WHERE key = 'schema'")
    con.commit()
    con.close()
    db = ResultsDB(tmp_path)
    rows = {r["bucket"]: r for r in db.repros()}
    assert "site_padding_not_neutral" in rows["b1"]["root_cause_fields"]["step_site"]
    assert "site_padding_not_neutral" not in rows["b2"]["root_cause_fields"]["step_site"]
    assert rows["b1"]["root_cause"] != rows["b2"]["root_cause"]
    assert not rows["b1"]["root_cause"].startswith("v6-")
    assert db.attachments()["b3"]["root_cause"] == rows["b1"]["root_cause"]
    db.close()


# -- the regression corpus ----------------------------------------------------------------------------
def test_committed_corpus_entries_are_well_formed():
    from fuzzharness.repro.corpus import entries

    found = entries(ROOT / "corpus")
    assert len(found) >= 3
    for e in found:
        assert e.meta["expected"] in ("reproduces", "fixed")
        assert foreign_imports((e.dir / "repro.py").read_text()) == []
        assert json.loads((e.dir / "meta.json").read_text())["bucket"] == e.meta["bucket"]


@pytest.mark.slow
def test_committed_corpus_signatures_are_todays():
    """Every entry still fails with the bucket its meta.json names, as the harness computes
    buckets now: a change to message normalisation or schedule facts must come with
    `fuzzharness corpus refresh` (else `pytest -m differential` reports the entries broken)."""
    from fuzzharness.repro.corpus import current_signature, entries

    stale = {e.name: (e.meta["bucket"], current_signature(e).key)
             for e in entries(ROOT / "corpus")}
    stale = {n: keys for n, keys in stale.items() if keys[0] != keys[1]}
    assert not stale, f"run `fuzzharness corpus refresh`: {stale}"


@pytest.mark.slow
def test_corpus_add_and_check(wrong_sum, tmp_path):
    corpus = tmp_path / "corpus"
    r = run_cli("corpus", "add", wrong_sum[2].dir, "--name", "loop-partition-init",
                "--corpus", corpus)
    assert r.returncode == 0, r.stderr
    meta = json.loads((corpus / "loop-partition-init" / "meta.json").read_text())
    assert meta["expected"] == "reproduces" and meta["upstream"] == ""
    assert meta["signature"]["primitives"] == ["loop_partition"]
    r = run_cli("corpus", "check", "--corpus", corpus)
    assert r.returncode == 0 and "ok  loop-partition-init" in r.stdout, r.stdout + r.stderr
    # a second add under the same name, or of a directory without a verified issue: refused
    r = run_cli("corpus", "add", wrong_sum[2].dir, "--name", "loop-partition-init",
                "--corpus", corpus)
    assert r.returncode == 2 and "already exists" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("corpus", "add", tmp_path, "--name", "x", "--corpus", corpus)
    assert r.returncode == 2 and "no case.json" in r.stderr


def test_known_add_writes_an_entry_that_knows_its_repro(wrong_sum, tmp_path):
    """`fuzzharness known add` appends an entry from the repro's finding.json; the file still
    loads, and the entry confirms the minimized case (and only probably a raw bucket)."""
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.root_causes import RootCause
    from fuzzharness.buckets.signatures import Signature

    finding = json.loads((wrong_sum[2].dir / "finding.json").read_text())
    assert finding["title"] == wrong_sum[2].title and finding["culprit"] == "schedule"
    path = tmp_path / "known.toml"
    path.write_text("format = 1\n# our bugs\n")
    r = run_cli("known", "add", wrong_sum[2].dir, "--file", path, "--id", "lp-init")
    assert r.returncode == 0, r.stderr
    assert path.read_text().startswith("format = 1\n# our bugs\n")  # appended, comments kept
    known = KnownBugs.load(path, corpus=False)
    sig = Signature.from_dict(finding["signature"])
    m = known.classify(sig, finding["tvm"], RootCause.from_dict(finding["root_cause_fields"]))
    assert m is not None and m.confirmed and m.bug.id == "lp-init"
    assert m.bug.trigger == {"primitives": ["loop_partition"], "options": [], "culprit": "schedule"}
    raw = Signature(**(sig.to_dict() | {"primitives": ("loop_partition", "split")}))
    assert not known.classify(raw, finding["tvm"]).confirmed
    # its witness: the repro's case with the campaign's root cause, run by `known check`
    witness = tmp_path / "known_witnesses" / "lp-init.json"
    assert 'witness = "known_witnesses/lp-init.json"' in path.read_text()
    doc = json.loads(witness.read_text())
    assert doc["root_cause"] == finding["root_cause_fields"] and doc["origin"]["witness_of"] == "lp-init"
    assert {k: v for k, v in doc.items() if k not in ("origin", "root_cause")} == {
        k: v for k, v in json.loads((wrong_sum[2].dir / "case.json").read_text()).items()
        if k not in ("origin", "id")}
    r = run_cli("known", "check", "lp-init", "--file", path)
    assert r.returncode == 0 and "recognized      lp-init" in r.stdout, r.stdout + r.stderr
    # a failure raised while the schedule was drawn: its case cannot tell a fix, no witness
    from fuzzharness.buckets.known_entries import witness_doc

    drawn = {"origin": {"failing_verdict": {"status": "compile_error"}}, "workload": {}}
    assert witness_doc(drawn, finding, bug_id="x", source="d") is None
    # the same id twice, or a directory that is no verified repro: refused, files untouched
    before = path.read_text()
    witness_before = witness.read_text()
    for args in ((wrong_sum[2].dir, "--id", "lp-init"), (tmp_path,)):
        r = run_cli("known", "add", *args, "--file", path)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert path.read_text() == before and witness.read_text() == witness_before
    assert [p.name for p in witness.parent.iterdir()] == ["lp-init.json"]


def test_the_issue_snippet_was_run_and_fails_like_the_bug(wrong_sum):
    d = wrong_sum[2].dir
    snippet = (d / "snippet.py").read_text()
    issue = (d / "issue.md").read_text()
    assert snippet.strip() in issue
    assert "np.testing.assert_array_equal" in snippet and "sch.loop_partition(" in snippet
    assert "B_expected = A64.sum(axis=1)" in snippet  # the operator's definition, not numbers
    run = run_script(d / "snippet.py")
    assert run.exit_code == 1 and "AssertionError" in run.output
    fixed = "\n".join(ln for ln in snippet.splitlines() if "sch.loop_partition(" not in ln)
    (d / "fixed_snippet.py").write_text(fixed)
    assert run_script(d / "fixed_snippet.py").exit_code == 0  # the other side: correct → passes
    # the title names the culprit and states legality; the three files agree
    title = wrong_sum[2].title
    assert "sch.loop_partition" in title and "should raise a ScheduleError" in title
    assert issue.splitlines()[1] == f"# {title}"
    assert (d / "repro.py").read_text().splitlines()[1] == f'"""{title}'
    assert json.loads((d / "finding.json").read_text())["bucket"] in issue.splitlines()[0]


# -- commands and the campaign hook -------------------------------------------------------------------
def test_minimize_and_repro_commands_refuse_bad_input_in_one_line(tmp_path):
    for args, needle in [(("minimize", tmp_path / "nowhere"), "no such campaign directory"),
                         (("minimize", tmp_path), "no campaign database here"),
                         (("minimize", tmp_path, "--budget", "0"), "must be > 0"),
                         (("repro", tmp_path / "nope.json"), "cannot read")]:
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.slow
def test_campaign_minimizes_new_buckets_within_its_cap(tmp_path, plugin_env):
    """A deliberately wrong program: one new bucket; the run reports its minimization."""
    out = tmp_path / "c"
    r = run_cli("run", "--seed", "1", "--max-cases", "1", "--workers", "1", "--workloads",
                "test_matmul_off_by_one", "--primitives", "split,reorder", "--no-progress", "--out", out,
                "--minimize-budget", "1", env=plugin_env)
    assert r.returncode == 1, r.stderr
    assert "then ≤ 1 s minimizing new buckets" in r.stderr
    assert "minimize: 1 bucket, 0 minimized" in r.stdout and "time cap 1 s" in r.stdout
    assert "skipped (budget)" in r.stdout
    r = run_cli("run", "--seed", "1", "--max-cases", "1", "--workers", "1", "--workloads",
                "test_matmul_off_by_one", "--primitives", "split,reorder", "--no-progress", "--out", tmp_path / "d",
                "--no-minimize", env=plugin_env)
    assert r.returncode == 1 and "minimize:" not in r.stdout


@pytest.mark.slow
def test_minimize_command_on_a_campaign_writes_verified_repros(tmp_path, plugin_env):
    out = tmp_path / "c"
    r = run_cli("run", "--seed", "1", "--max-cases", "1", "--workers", "1", "--workloads",
                "test_matmul_off_by_one", "--primitives", "split,reorder", "--no-progress", "--out", out, env=plugin_env)
    assert r.returncode == 1
    r = run_cli("minimize", out, "--budget", "40", "--no-triage", "--workers", "2",
                env=plugin_env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "1 verified repro" in r.stdout
    (d,) = (out / "repros").iterdir()
    assert (d / "issue.md").exists() and (d / "repro.py").exists()
    con = sqlite3.connect(out / "results.sqlite")
    (reproduced, length, original) = con.execute(
        "SELECT reproduced, length, original_length FROM repros").fetchone()
    assert reproduced == 1 and length <= original
    # a rerun keeps the verified repro instead of redoing it
    r = run_cli("minimize", out, "--budget", "40", env=plugin_env)
    assert "(earlier run)" in r.stdout


@pytest.mark.slow
def test_a_campaign_minimizes_its_new_bucket_while_it_runs(tmp_path, plugin_env):
    """With a minimization budget, the local campaign minimizes, verifies and groups its new
    buckets itself (lanes sharing its workers): the summary lists the root causes, the
    database has the repro with its root cause."""
    out = tmp_path / "c"
    r = run_cli("run", "--seed", "2", "--max-cases", "3", "--workers", "2", "--workloads",
                "test_matmul_off_by_one", "--primitives", "split,reorder", "--no-progress",
                "--target", "llvm", "--out", out, "--minimize-budget", "90", env=plugin_env)
    assert r.returncode == 1, r.stderr
    assert "3 minimized, 3 verified repros → 1 root cause" in r.stdout, r.stdout
    assert "distinct bugs: 1 (1 root causes, from 3 buckets, 3 verified repros)" in r.stdout
    # the distinct bugs lead; the buckets they fold come after
    assert r.stdout.index("distinct bugs:") < r.stdout.index("failures in the campaign:")
    con = sqlite3.connect(out / "results.sqlite")
    rows = con.execute("SELECT reproduced, root_cause FROM repros").fetchall()
    assert len(rows) == 3 and all(ok for ok, _ in rows) and len({rc for _, rc in rows}) == 1
    con.close()
    # the report leads with them too, on the page and in the markdown
    r = run_cli("report", out, "--out", tmp_path / "rep")
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "### Distinct bugs: 1 " in md and md.index("### Distinct bugs") < md.index("### New findings")
    assert page.index(">Distinct bugs: 1 ") < page.index(">New findings")


def relayout_then_reverse_compute_at(sch):
    """transform_layout pads reduce_epilogue's output 1 → (1, 3) with pad value 0; then
    reverse_compute_at shrinks the producer's loop to the one real element, and the two
    padding elements are never written (TVM 0.27; found by a 30-minute campaign, seed 7)."""
    from tvm.script import tirx as T

    b0 = sch.get_sblock("add_0")
    sch.transform_layout(b0, ("write", 0), lambda i: (i // 3, i % 3),
                         pad_value=lambda i, j: (T.float32(0.0),))
    _, l3 = sch.get_loops(sch.get_sblock("red"))
    sch.reverse_compute_at(b0, l3, preserve_unit_loops=True)


@pytest.mark.slow
def test_a_repro_checks_the_padding_transform_layout_promised(tmp_path):
    """The harness calls a padded output whose padding lacks the pad value a wrong result;
    the repro script checks the same padding, so the finding reproduces standalone (it used
    to print "the output is correct" and end as "not reproduced").  Both sides: with the
    producer's loop left whole, the padding is written and the script says fixed."""
    params = {"M": 1, "N": 1, "dtype": "float32", "op": "min",
              "steps": [{"arg": "bias", "op": "add"}]}
    case = scheduled("reduce_epilogue", params, relayout_then_reverse_compute_at)
    verdict, outcome = repro_of(case, tmp_path / "unfilled")
    assert verdict.status is Status.WRONG_RESULT and "padding not filled" in verdict.line()
    assert outcome.reproduced, outcome.problem
    text = (outcome.dir / "repro.py").read_text()
    (tmp_path / "elsewhere.py").write_text(text)
    run = run_script(tmp_path / "elsewhere.py")
    assert run.exit_code == 1, run.output
    assert "transform_layout padding not filled with the pad value: out (2 elements)" in run.output

    assert text.count("sch.reverse_compute_at(") == 1  # the same script without the shrinking
    (tmp_path / "fixed.py").write_text("\n".join(ln for ln in text.splitlines()
                                                 if "sch.reverse_compute_at(" not in ln))
    run = run_script(tmp_path / "fixed.py")
    assert run.exit_code == 0, run.output
    assert "padding not filled" not in run.output and "RESULT: fixed" in run.output


def test_a_reference_of_inf_and_nan_inputs_computes_without_numpy_warnings(tmp_path):
    """Special-value inputs are drawn on purpose (their bound is inf where the model cannot
    judge); the script's float64 definition gives their IEEE results silently, so an issue's
    output shows no "invalid value encountered in matmul" — and the same bits as the harness."""
    import runpy
    import warnings

    from fuzzharness.kinds.tir.reference import expectation

    case = scheduled("batch_matmul", {"K": 3, "M": 8, "N": 4, "batch": 1, "dtype": "float32",
                                      "transpose_a": False, "transpose_b": False},
                     lambda sch: None, oracle="bound", distribution="special_values")
    verdict = execute(case).verdict
    verdict.status = Status.WRONG_RESULT  # only the text is checked here
    s = write_script(case, verdict, bucket="x", signature=None, versions=versions())
    (tmp_path / "repro.py").write_text(s.text)
    ns = runpy.run_path(str(tmp_path / "repro.py"), run_name="imported")
    x = ns["make_inputs"]()
    assert not all(np.isfinite(a).all() for a in x.values())  # the case has inf/nan inputs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ns["reference"](x)
    e = expectation(case)
    assert arrays.same_bits(got["C"][0], e.expected["C"].value)


@pytest.mark.slow
def test_an_issue_too_long_for_github_keeps_what_is_read_first_and_the_rest_beside_it(
        wrong_sum, tmp_path, monkeypatch):
    from fuzzharness.repro import issue as issue_md

    case, verdict, whole = wrong_sum
    full = (whole.dir / "issue.md").read_text()
    script = (whole.dir / "repro.py").read_text().rstrip()
    ir = whole.triage.scheduled_tir.rstrip()
    assert len(full) <= issue_md.GITHUB_BODY_LIMIT and script in full and ir in full
    assert not (whole.dir / issue_md.IR_FILE).exists()
    first_read = ("# [Bug]", "### Expected behavior", "got 1.0, expected 3.0", "### Environment",
                  "sch.loop_partition(", "### Triage", "`loop_partition`")

    def written(limit: int, name: str) -> Path:
        monkeypatch.setattr(issue_md, "GITHUB_BODY_LIMIT", limit)
        _, outcome = repro_of(case, tmp_path / name, triage=True)
        text = (outcome.dir / "issue.md").read_text()
        assert outcome.reproduced and len(text) <= limit
        assert all(part in text for part in first_read)
        return outcome.dir

    # one character too many: the IR is cut, repro.py stays, the IR is whole beside the text
    d = written(len(full) - 1, "ir-cut")
    text = (d / "issue.md").read_text()
    assert script in text and ir not in text and issue_md.IR_FILE in text
    assert ir in (d / issue_md.IR_FILE).read_text()
    # no room for the script either: the text says to attach it (it is in the directory)
    d = written(len(full) - len(ir) - len(script) // 2, "script-out")
    text = (d / "issue.md").read_text()
    assert script not in text and "too long for an issue body: attach the file" in text
    assert (d / "repro.py").read_text().rstrip() == script
