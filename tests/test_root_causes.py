"""Root causes and known bugs: one bug merges, different bugs stay apart; a known-bug entry
confirms a bucket only by its minimized trigger; every corpus entry is a known bug; the
minimization order is severity first; the options pass keeps only what the bug needs; a
trace TVM cannot print is still written as sch calls."""

from __future__ import annotations

import json

import pytest

from fuzzharness.buckets.known_bugs import KnownBugs, corpus_bugs
from fuzzharness.buckets.root_causes import (
    SCHEDULE_CULPRIT,
    RootCause,
    culprit_of,
    minimize_order,
    root_cause,
    severity,
)
from fuzzharness.buckets.signatures import Signature
from fuzzharness.core.case import Case
from fuzzharness.core.traces import primitive_sequence
from tests.conftest import ROOT


def trace(*kinds: str) -> list:
    """A trace-shaped list applying these instruction kinds in order (lookups omitted)."""
    insts = [["GetSBlock", [], ["B", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2"]]]
    for k in kinds:
        if k.startswith("pragma"):
            insts.append(["Annotate", ["l1", 16], [k], []])
        else:
            insts.append([k, ["l1"], [], []])
    return [insts, []]


def case_with(*kinds: str, target=None, pass_config=None, workload="row_sum") -> dict:
    return Case(workload={"name": workload, "params": {"M": 1, "N": 3, "dtype": "float32"}},
                inputs={"distribution": "ones", "seed": 0},
                schedule={"source": "test", "trace": trace(*kinds)},
                target=target or {"kind": "llvm"}, pass_config=pass_config or {}).to_dict()


def wrong(*prims: str, symptom="wrong_result", facts=(), workload="row_sum") -> Signature:
    return Signature(symptom, "verify", workload=workload, dtype="float32",
                     primitives=tuple(sorted(set(prims))), facts=tuple(facts))


# -- root causes ------------------------------------------------------------------------------------
def test_the_primitive_sequence_keeps_the_order_and_names_annotations():
    t = trace("CacheWrite", "Vectorize", "pragma_auto_unroll_max_step", "pragma_unroll_explicit")
    assert primitive_sequence(t) == ("cache_write", "vectorize", "unroll")
    assert primitive_sequence(trace("Vectorize", "CacheWrite")) == ("vectorize", "cache_write")


def test_one_trigger_is_one_root_cause_whatever_the_workload_and_the_bystanders():
    """Two buckets of one bug (raw traces with different bystanders, another workload, one
    nan twin) minimize to one trigger: one root cause."""
    a = root_cause(case_with("LoopPartition"), wrong("loop_partition"), SCHEDULE_CULPRIT)
    b = root_cause(case_with("LoopPartition", workload="matmul"),
                   wrong("loop_partition", workload="matmul"), SCHEDULE_CULPRIT)
    c = root_cause(case_with("LoopPartition"), wrong("loop_partition", symptom="nan_inf"),
                   SCHEDULE_CULPRIT)
    assert a.key == b.key == c.key
    assert a.title() == "wrong output (the scheduled program is already wrong) after loop_partition"


@pytest.mark.parametrize("other", [
    dict(kinds=("Vectorize", "CacheWrite")),  # the same primitives in another order
    dict(kinds=("CacheWrite", "Vectorize", "Parallel")),  # one more primitive
    dict(culprit="tirx.StorageRewrite"),  # another culprit pass
    dict(culprit=SCHEDULE_CULPRIT),
    dict(pass_config={"tirx.disable_storage_rewrite": True}),  # an option the bug needs
    dict(target={"kind": "llvm", "mattr": ["-fma"]}),
    dict(symptom="crash", kind="SIGSEGV", stage="run"),  # another symptom
    dict(facts=("reduction_init_repeated",)),
])
def test_different_triggers_are_different_root_causes(other):
    base = dict(kinds=("CacheWrite", "Vectorize"), culprit="tirx.VectorizeLoop", pass_config=None,
                target=None, symptom="wrong_result", kind="", stage="verify", facts=())

    def rc(kinds, culprit, pass_config, target, symptom, kind, stage, facts):
        sig = Signature(symptom, stage, kind=kind, workload="row_sum", dtype="float32",
                        primitives=tuple(sorted({p.lower() for p in kinds})), facts=facts)
        return root_cause(case_with(*kinds, target=target, pass_config=pass_config), sig, culprit)

    assert rc(**base).key == rc(**base).key
    assert rc(**base).key != rc(**(base | other)).key


def test_an_error_is_its_own_root_cause_keyed_by_its_message():
    sig = Signature("compile_error", "lower", detail="InternalError: Check failed: x", site="a.cc:f",
                    workload="row_sum", primitives=("split",))
    a = root_cause(case_with("Split"), sig)
    b = root_cause(case_with("Split", "Reorder", workload="matmul"), sig)
    c = root_cause(case_with("Split"), Signature("compile_error", "lower", detail="other", site="a.cc:f"))
    assert a.key == b.key != c.key and a.has_text


def test_the_culprit_a_pass_probe_names():
    class Probe:  # the fields of fuzzharness.kinds.tir.pass_bisect.Triage
        def __init__(self, raised_in=None, implicated=(), passes=("a", "b")):
            self.raised_in, self.implicated, self.passes = raised_in, list(implicated), list(passes)

    assert culprit_of(Probe(implicated=["tirx.VectorizeLoop", "x"]), "wrong_result") == "tirx.VectorizeLoop"
    assert culprit_of(Probe(), "wrong_result") == SCHEDULE_CULPRIT  # nothing makes it right
    assert culprit_of(Probe(passes=()), "wrong_result") == ""  # the probe could not run
    assert culprit_of(Probe(raised_in="tirx.StorageRewrite"), "compile_error") == "tirx.StorageRewrite"
    assert culprit_of(Probe(), "compile_error") == "" and culprit_of(None, "wrong_result") == ""


def test_severity_first_then_new_before_probably_known_then_frequency():
    rows = [dict(key="ce", signature=Signature("compile_error", "lower", detail="x"), count=50, example_idx=1),
            dict(key="rm", signature=Signature("reference_mismatch", "verify"), count=90, example_idx=2),
            dict(key="hang", signature=Signature("timeout", "codegen"), count=1, example_idx=3),
            dict(key="wr", signature=wrong("split"), count=1, example_idx=9),
            dict(key="pk", signature=wrong("merge"), count=7, example_idx=4),
            dict(key="run", signature=Signature("crash", "run", kind="SIGSEGV"), count=2, example_idx=5),
            dict(key="nan", signature=wrong("merge", symptom="nan_inf"), count=3, example_idx=6)]
    order = [b["key"] for b in minimize_order(rows, probably_known={"pk"})]
    assert order == ["nan", "run", "wr", "pk", "hang", "ce", "rm"]
    assert [severity(Signature("crash", "lower", kind="SIGSEGV")),
            severity(Signature("order_preserving_divergence", "verify"))] == [1, 3]


# -- known bugs: confirmed by the minimized trigger ------------------------------------------------
DOC = {"bug": [
    {"id": "merge-bug", "title": "merge", "match": {"symptom": "wrong_result", "stage": "verify",
                                                     "primitives": ["merge"]}},
    {"id": "vec-bug", "title": "vectorize", "match": {"symptom": "wrong_result", "primitives": ["cache_write", "vectorize"]},
     "trigger": {"primitives": ["cache_write", "vectorize"], "culprit": "tirx.VectorizeLoop", "options": []}},
    {"id": "ice", "title": "check", "match": {"symptom": "compile_error", "detail": "Check failed: x"}},
]}


def test_a_raw_wrong_answer_that_shares_a_primitive_is_only_probably_known():
    known = KnownBugs.from_doc(DOC)
    m = known.classify(wrong("merge", "split", "parallel"))
    assert m is not None and m.bug.id == "merge-bug" and not m.confirmed
    # an error matched by its message is certain
    assert known.classify(Signature("compile_error", "lower", detail="InternalError: Check failed: x")).confirmed
    assert known.classify(wrong("split")) is None


def test_a_minimized_case_confirms_or_refutes_the_known_bug():
    known = KnownBugs.from_doc(DOC)
    merge_only = RootCause("wrong_output", "verify", ("merge",), culprit=SCHEDULE_CULPRIT)
    assert known.classify(wrong("merge"), None, merge_only).bug.id == "merge-bug"
    # another miscompile whose raw trace used merge: minimized, merge is gone or not alone
    other = RootCause("wrong_output", "verify", ("merge", "loop_partition"), culprit=SCHEDULE_CULPRIT)
    assert known.classify(wrong("merge", "loop_partition"), None, other) is None
    # a trigger entry: the sequence, the culprit and the options must all be the entry's
    vec = RootCause("wrong_output", "verify", ("cache_write", "vectorize"), culprit="tirx.VectorizeLoop")
    assert known.classify(wrong("cache_write", "vectorize"), None, vec).bug.id == "vec-bug"
    assert known.classify(wrong("cache_write", "vectorize", symptom="nan_inf"), None, vec).bug.id == "vec-bug"
    for changed in (dict(primitives=("vectorize", "cache_write")), dict(culprit="tirx.StorageRewrite"),
                    dict(options=("mattr=-fma",))):
        rc = RootCause(**(vec.to_dict() | changed))
        assert known.classify(wrong("cache_write", "vectorize"), None, rc) is None, changed


def test_no_corpus_entry_is_ever_new():
    """Each entry of the regression corpus is a known bug: its own minimized signature is
    known for sure, and the raw bucket of a campaign that finds it again with a bystander is
    at least probably known (its minimization then confirms it)."""
    known = KnownBugs.load()
    entries = [d for d in sorted((ROOT / "corpus").iterdir()) if d.is_dir()]  # RELEASES.md beside them
    assert len(corpus_bugs(ROOT / "corpus")) == len([d for d in entries if (d / "meta.json").exists()])
    for d in entries:
        meta = json.loads((d / "meta.json").read_text())
        case = json.loads((d / "case.json").read_text())
        sig = Signature.from_dict(meta["signature"])
        rc = root_cause(case, sig, meta.get("culprit", ""))
        m = known.classify(sig, meta["tvm"], rc)
        assert m is not None and m.confirmed, d.name
        raw = Signature(**(sig.to_dict() | {"primitives": tuple(sorted({*sig.primitives, "parallel"}))}
                           if not sig.has_text else sig.to_dict()))
        assert known.classify(raw, meta["tvm"]) is not None, d.name


def test_committed_corpus_entries_name_one_bucket_and_one_title():
    from fuzzharness.repro.corpus import entries, inconsistencies

    for e in entries(ROOT / "corpus"):
        assert inconsistencies(e) == [], e.name


# -- the options pass ---------------------------------------------------------------------------------
def test_the_options_pass_drops_every_option_the_bug_does_not_need():
    from fuzzharness.minimize.passes import greedy, propose_options

    case = Case.from_dict(case_with(
        "Split", target={"kind": "llvm", "mcpu": "x86-64-v2", "mattr": ["-fma"]},
        pass_config={"tirx.disable_vectorize": True, "tirx.disable_cse_tir": True,
                     "tirx.UnrollLoop": {"auto_max_step": 16, "explicit_unroll": True}}))

    def first_needing(pred):
        return lambda cands: next((c for c in cands if pred(c)), None)

    # the bug needs mattr and the unroll budget: mcpu, the other entries, explicit_unroll go
    got = greedy(case, propose_options, first_needing(
        lambda c: "mattr" in c.target and "auto_max_step" in c.pass_config.get("tirx.UnrollLoop", {})),
        lambda: False)
    assert got.target == {"kind": "llvm", "mattr": ["-fma"]}
    assert got.pass_config == {"tirx.UnrollLoop": {"auto_max_step": 16}}
    # the other side: a bug that needs nothing loses everything, one that needs all keeps all
    assert greedy(case, propose_options, first_needing(lambda c: True), lambda: False).target == {"kind": "llvm"}
    assert greedy(case, propose_options, first_needing(lambda c: c == case), lambda: False) == case


# -- printing a trace TVM cannot print -----------------------------------------------------------------
def test_decompose_padding_is_written_as_a_schedule_call():
    """TVM 0.27's printer for DecomposePadding is broken (it is handed the loop's name where
    it declares a LoopRV); the repro still gets sch calls that rebuild the same module."""
    from tvm import s_tir

    from fuzzharness.core.tvm_support import trace_to_json
    from fuzzharness.generators.workloads import workloads
    from fuzzharness.repro.kit import schedule_calls

    params = {"dtype": "float32", "pads": [[1, 2]], "shape": [5], "value": 0.0}
    func = workloads["pad"].prim_func(params)
    sch = s_tir.Schedule(func)
    block = sch.get_sblock("pad")
    (loop,) = sch.get_loops(block)
    sch.decompose_padding(block, loop)
    with pytest.raises(Exception):  # noqa: B017 - TVM's own printer fails (the reason for this)
        sch.trace.as_python()
    lines, why = schedule_calls(func, trace_to_json(sch.trace))
    assert lines is not None, why
    assert any(ln.startswith("b2 = sch.decompose_padding(block=b0, loop=l1)") for ln in lines), lines


def test_a_memory_bug_names_its_buffer_and_index_when_the_run_reported_them():
    """The guard zones around kernel buffers report ``out_of_bounds`` with the buffer and the
    offset; the issue title and hints say it, and say nothing when the run did not."""
    from fuzzharness.core.verdict import Stage, Status, Verdict
    from fuzzharness.repro.issue import out_of_bounds, title

    oob = Verdict(Status.CRASH, Stage.RUN, "out of bounds",
                  details={"kind": "out_of_bounds", "buffer": "B", "offset": 12,
                           "access": "writes"})
    assert out_of_bounds(oob) == "writes out of bounds of buffer B at offset 12"
    nested = Verdict(Status.CRASH, Stage.RUN, "", details={
        "kind": "signal", "signal": "SIGSEGV", "out_of_bounds": {"buffer": "A_global", "index": 3}})
    assert out_of_bounds(nested) == "accesses out of bounds of buffer A_global at element 3"
    plain = Verdict(Status.CRASH, Stage.RUN, "", details={"kind": "signal", "signal": "SIGSEGV"})
    assert out_of_bounds(plain) == ""
    case = Case.from_dict(case_with("CacheWrite"))
    assert "writes out of bounds of buffer B at offset 12" in title(case, oob)
    assert "out of bounds" not in title(case, plain)
