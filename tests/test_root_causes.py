"""Root causes and known bugs: one bug merges, different bugs stay apart; a known-bug entry
confirms a bucket only by its minimized trigger; every corpus entry is a known bug; the
minimization order is severity first; the options pass keeps only what the bug needs; a
trace TVM cannot print is still written as sch calls."""

from __future__ import annotations

import json

import pytest

from fuzzharness.buckets.known_bugs import KnownBugs, corpus_bugs
from fuzzharness.buckets.priority import minimize_order, severity
from fuzzharness.buckets.root_causes import (
    SCHEDULE_CULPRIT,
    VERSION,
    RootCause,
    culprit_of,
    root_cause,
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


def test_order_and_culprit_do_not_split_one_trigger():
    """The same primitives in another order, or another pass the probe named (several passes
    can each hide one bug), are one root cause: the culprit is recorded, not keyed."""
    def rc(kinds, culprit):
        sig = wrong(*(k.lower() for k in kinds))
        return root_cause(case_with(*kinds), sig, culprit)

    a = rc(("CacheWrite", "Vectorize"), "tirx.VectorizeLoop")
    assert a.key == rc(("Vectorize", "CacheWrite"), "tirx.VectorizeLoop").key
    assert a.key == rc(("CacheWrite", "Vectorize"), "tirx.StorageRewrite").key == rc(("CacheWrite", "Vectorize"), "").key
    assert a.evidence == "trigger" and a.culprit == "tirx.VectorizeLoop"


def test_a_mechanism_fact_merges_every_route_into_one_bug():
    """alloc_in_vectorized_loop reached by compute_at, reverse_compute_at or write_at, on any
    workload, is one root cause (ir_shape); without the fact the routes stay apart, and the
    same routes with another symptom class or another mechanism are other bugs."""
    routes = [("ComputeAt", "Vectorize"), ("Vectorize", "ReverseComputeAt"),
              ("WriteAt", "Split", "Vectorize")]
    alloc = ("alloc_in_vectorized_loop",)
    keys = {root_cause(case_with(*r, workload=w), wrong(*(k.lower() for k in r), facts=alloc, workload=w)).key
            for r in routes for w in ("row_sum", "matmul")}
    assert len(keys) == 1
    rc = root_cause(case_with(*routes[0]), wrong("computeat", "vectorize", facts=alloc))
    assert rc.evidence == "ir_shape" and "alloc_in_vectorized_loop" in rc.title()
    assert len({root_cause(case_with(*r), wrong(*(k.lower() for k in r))).key for r in routes}) == 3
    init = root_cause(case_with(*routes[0]), wrong("computeat", "vectorize", facts=("reduction_init_repeated",)))
    crash = root_cause(case_with(*routes[0]), Signature("crash", "run", kind="SIGSEGV", facts=alloc,
                                                         primitives=("compute_at", "vectorize")))
    hang = root_cause(case_with(*routes[0]), Signature("timeout", "run", facts=alloc,
                                                        primitives=("compute_at", "vectorize")))
    assert len({rc.key, init.key, crash.key, hang.key}) == 4
    assert hang.evidence == "trigger"  # a hang is not what the mechanism explains


def test_a_version_1_record_is_keyed_the_current_way():
    """A root cause stored by version 1 (sequence, unconfirmed culprit) reads back as today's."""
    v1 = {"symptom": "wrong_output", "stage": "verify", "primitives": ["vectorize", "cache_write"],
          "options": [], "facts": [], "culprit": "tirx.StorageRewrite", "detail": "", "site": "",
          "workload": "", "dtype": ""}
    old = RootCause.from_dict(v1)
    assert old.culprit == "" and old.version == VERSION and old.primitives == ("cache_write", "vectorize")
    assert old.key == root_cause(case_with("CacheWrite", "Vectorize"), wrong("cache_write", "vectorize")).key
    assert RootCause.from_dict(old.to_dict()) == old
    assert RootCause.from_dict(v1 | {"culprit": SCHEDULE_CULPRIT}).culprit == SCHEDULE_CULPRIT


def test_a_culprit_step_and_its_site_key_a_schedule_bug_whatever_the_route():
    """reindex on a block that shares its loop: the sibling came from a cache_read +
    compute_at or from a cache_write + reverse_compute_at — one bug.  Another site, another
    step or another symptom class is another root cause."""
    shared = ("site_shares_loop", "site_shares_outer_loop")

    def rc(kinds, step="reindex", site=shared, symptom="wrong_result"):
        sig = wrong(*(k.lower() for k in kinds), symptom=symptom)
        return root_cause(case_with(*kinds), sig, "", step, (), site)

    a = rc(("CacheRead", "ComputeAt", "Reindex"))
    b = rc(("CacheWrite", "ReverseComputeAt", "Reindex"))
    assert a.evidence == b.evidence == "step_site" and a.key == b.key
    assert "sch.reindex" in a.title() and "shares_loop" in a.title()
    assert rc(("Reindex",), site=("site_reduction",)).key != a.key
    assert rc(("CacheRead", "ComputeAt", "Reindex"), step="compute_at").key != a.key
    crash = Signature("crash", "run", kind="SIGSEGV", workload="row_sum", primitives=("reindex",))
    assert root_cause(case_with("Reindex"), crash, "", "reindex", (), shared).key != a.key
    # without a step (not probed) the trigger keys it, as before
    assert root_cause(case_with("Reindex"), wrong("reindex")).evidence == "trigger"


def test_a_placement_misled_by_a_hiding_wrapper_is_keyed_by_the_wrapper():
    """loop_partition's wrappers declare empty regions: a later cache_read, cache_write or
    reindex_cache_write places its copy where the declared regions allow — one bug whatever
    the placing step.  A wrapper nested in a block (relaxed regions: another bug), another
    symptom, a step that is not a placement (merge, loop_partition: bugs of their own) and
    a placement on a site with no hidden dependence keep their own keys."""
    hidden = ("site_dependence_hidden",)

    def rc(step, site=hidden, symptom="wrong_result"):
        sig = wrong("loop_partition", step, symptom=symptom)
        return root_cause(case_with("LoopPartition", "CacheRead"), sig, "", step, (), site)

    a, b, c = rc("cache_read"), rc("cache_write"), rc("reindex_cache_write", hidden + ("site_shares_loop",))
    assert a.key == b.key == c.key and a.evidence == "step_site"
    assert "hide a dependence from sch.cache_write" in b.title()
    nested = rc("cache_write", hidden + ("site_nested",))
    assert nested.key != a.key and nested.key == rc("reindex", hidden + ("site_nested", "site_shares_loop")).key
    assert rc("merge").key != a.key and rc("loop_partition").key != a.key
    assert rc("merge").key != rc("loop_partition").key
    assert rc("cache_write", ()).key != a.key and rc("cache_write", ()).key != rc("cache_read", ()).key
    crash = Signature("crash", "run", kind="SIGSEGV", workload="row_sum", primitives=("cache_write",))
    assert root_cause(case_with("CacheWrite"), crash, "", "cache_write", (), hidden).key != a.key


def test_a_located_defect_is_keyed_by_the_step_that_made_it_whatever_the_symptom():
    """A block left running outside its domain (binding_outside_domain, found on the prefix
    that first has it) by pad_einsum is one bug whether its stores crashed or computed
    garbage and whatever site or route; the same defect made by reindex_cache_write is
    another, and so is pad_einsum without the defect (padding a max with 0).  A route-free
    mechanism of the whole case wins over a located one."""
    made = ("binding_outside_domain",)
    crash = Signature("crash", "run", kind="SIGABRT", primitives=("compute_at", "pad_einsum"))

    def rc(sig, step="pad_einsum", step_facts=made, site=("site_shares_loop",), kinds=("PadEinsum",)):
        return root_cause(case_with(*kinds), sig, "", step, step_facts, site)

    a = rc(crash, kinds=("ComputeAt", "PadEinsum"))
    b = rc(wrong("cache_write", "pad_einsum", "transform_layout"), site=("site_reduction",),
           kinds=("CacheWrite", "PadEinsum", "TransformLayout"))
    c = rc(wrong("pad_einsum", symptom="nan_inf"), site=())
    assert a.evidence == b.evidence == c.evidence == "ir_shape"
    assert a.key == b.key == c.key, (a, b, c)
    assert "sch.pad_einsum leaves a block running outside its domain" in a.title()
    copy = rc(crash, step="reindex_cache_write")
    assert copy.key != a.key and copy.key == rc(crash, step="reindex_cache_read").key
    neutral = rc(wrong("pad_einsum"), step_facts=(), site=("site_reduction",))
    assert neutral.evidence == "step_site" and neutral.key != a.key
    alloc = root_cause(case_with("PadEinsum"), wrong("pad_einsum", facts=("alloc_in_vectorized_loop",)),
                       "", "pad_einsum", made, ())
    assert alloc.mechanism == ("alloc_in_vectorized_loop",) and alloc.key != a.key
    # a hang with the defect is not what the defect explains: keyed by its step and site
    assert rc(Signature("timeout", "run", primitives=("pad_einsum",))).evidence == "step_site"


def test_whether_a_reduction_is_a_sum_keys_only_the_steps_that_depend_on_it():
    """Folding a bias into a max's init and pushing an fp16 cast into a sum's accumulation
    both go wrong at fuse_reduction_epilogue on a reduction: the combiner keeps them apart.
    A merge of a softmax's max and one of a layer norm's sum is one bug: no split there."""
    def rc(step, site):
        sig = wrong(step)
        return root_cause(case_with("Merge"), sig, "", step, (), site)

    red, not_sum = ("site_reduction",), ("site_reduction", "site_reduction_not_sum")
    assert rc("fuse_reduction_epilogue", red).key != rc("fuse_reduction_epilogue", not_sum).key
    assert rc("merge", red).key == rc("merge", not_sum).key


def test_whether_zero_padding_is_neutral_keys_only_the_padding_step():
    """pad_einsum padding a max, or a variance's (x - mean)², with 0 is one bug; padding an
    iterator a transformed output no longer uses is another at the same step and site
    (held-out seed 11 merged them as (pad_einsum, site_reduction)).  The class does not key
    other steps; a stored pad_einsum root cause of a max (before the class) gets it."""
    def rc(step, site):
        return root_cause(case_with("PadEinsum"), wrong(step), "", step, (), site)

    red = ("site_reduction",)
    max_ = ("site_padding_not_neutral", "site_reduction", "site_reduction_not_sum")
    variance = ("site_padding_not_neutral", "site_reduction")
    assert rc("pad_einsum", max_).key == rc("pad_einsum", variance).key
    assert rc("pad_einsum", red).key != rc("pad_einsum", variance).key
    assert rc("merge", red).key == rc("merge", variance).key
    v6 = rc("pad_einsum", ("site_reduction", "site_reduction_not_sum")).to_dict() | {"version": 6}
    assert RootCause.from_dict(v6).key == rc("pad_einsum", max_).key


@pytest.mark.parametrize("case_id, block, neutral", [
    ("seed11/86062fe24a8d6877", "var", False), ("seed11/86062fe24a8d6877", "mean", True),
    ("seed7/b33c1c453ad6f4a0", "max", False), ("seed7/b33c1c453ad6f4a0", "sum", True),
    ("seed11/b334dc25b97951ec", "C", True), ("seed11/21c2e7d2daf5a649", "argmax", False)])
def test_zero_padding_neutral_reads_the_reduction_body(case_id, block, neutral):
    """The site class computed from the program (the labelled benchmark's workloads): a sum
    of terms that vanish at 0 is neutral (a mean, a softmax's sum of exps already computed,
    a batch matmul); a max, an argmax and a variance's (x - mean)² (mean² at x = 0) are not."""
    import tvm_ffi
    from tvm import s_tir

    from fuzzharness.generators.schedules.site_classes import _zero_padding_neutral
    from fuzzharness.generators.workloads import workloads

    records = {r["id"]: r for r in json.loads((ROOT / "benchmarks/dedup/cases.json").read_text())}
    case = Case.from_dict(records[case_id]["case"])
    blocks: list = []
    tvm_ffi.structural_walk(workloads[case.workload_name].prim_func(case.params).body,
                            [(s_tir.SBlock, blocks.append)])
    (b,) = [b for b in blocks if b.name_hint == block]
    assert _zero_padding_neutral(b) is neutral


def test_a_record_from_before_step_sites_stays_a_trigger():
    """A version-2 root cause has a step but never read its site: keyed by the step alone it
    would merge different bugs at one primitive, so it stays a trigger."""
    v2 = {"symptom": "wrong_output", "stage": "verify", "primitives": ["pad_einsum"],
          "options": [], "facts": [], "culprit": "", "version": 2, "evidence": "trigger",
          "step": "pad_einsum", "step_facts": []}
    old = RootCause.from_dict(v2)
    assert old.evidence == "trigger" and old.version == VERSION
    assert old.key == root_cause(case_with("PadEinsum"), wrong("pad_einsum")).key
    new = RootCause.from_dict(v2 | {"version": VERSION, "evidence": "", "step_site": ["site_reduction"]})
    assert new.evidence == "step_site" and RootCause.from_dict(new.to_dict()) == new


def test_a_graph_is_keyed_by_its_schedule_primitives_not_its_operators():
    """merge on a softmax's function and merge on a gelu's: one bug; a graph without a
    schedule keeps its operators (the default pipeline on them is the trigger)."""
    def graph(ops, prims):
        case = {"workload": {"name": "graph", "params": {"nodes": [{"op": o} for o in ops]}}}
        sig = Signature("wrong_result", "verify", workload="graph", primitives=tuple(sorted({*ops, *prims})),
                        facts=("relax",))
        return root_cause(case, sig)

    assert graph(["softmax"], ["merge"]).key == graph(["gelu", "add"], ["merge"]).key
    assert graph(["softmax"], ["merge"]).key != graph(["softmax"], ["loop_partition"]).key
    assert graph(["softmax"], []).primitives == ("softmax",)
    assert graph(["softmax"], []).key != graph(["gelu"], []).key


@pytest.mark.parametrize("other", [
    dict(kinds=("CacheWrite", "Vectorize", "Parallel")),  # one more primitive
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
    # a defect located in the scheduled program: the schedule, whatever pass was implicated
    located = Probe(implicated=["tirx.AnnotateEntryFunc"])
    located.located = ["binding_outside_domain"]
    assert culprit_of(located, "wrong_result") == culprit_of(located, "crash") == SCHEDULE_CULPRIT
    located.raised_in = "tirx.StorageRewrite"  # a pass that raised is its own evidence
    assert culprit_of(located, "compile_error") == "tirx.StorageRewrite"


def test_a_located_defect_counts_only_at_a_culprit_step_and_without_a_route_free_mechanism():
    from fuzzharness.buckets.root_causes import located_mechanisms

    made = ("binding_outside_domain", "reduction_init_missing")
    assert located_mechanisms("pad_einsum", made, ()) == ("binding_outside_domain",)
    assert located_mechanisms("", made, ()) == ()  # no culprit step
    assert located_mechanisms("pad_einsum", made, ("alloc_in_vectorized_loop",)) == ()
    assert located_mechanisms("pad_einsum", ("reduction_init_missing",), ()) == ()


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
    # a trigger entry: the primitive set, a confirmed culprit and the options must be the entry's
    vec = RootCause("wrong_output", "verify", ("cache_write", "vectorize"), culprit="tirx.VectorizeLoop")
    assert known.classify(wrong("cache_write", "vectorize"), None, vec).bug.id == "vec-bug"
    assert known.classify(wrong("cache_write", "vectorize", symptom="nan_inf"), None, vec).bug.id == "vec-bug"
    for same in (dict(primitives=("vectorize", "cache_write")), dict(culprit="")):  # order; unconfirmed
        rc = RootCause(**(vec.to_dict() | same))
        assert known.classify(wrong("cache_write", "vectorize"), None, rc).bug.id == "vec-bug", same
    for changed in (dict(primitives=("cache_write", "parallel", "vectorize")),
                    dict(culprit="tirx.StorageRewrite"), dict(options=("mattr=-fma",))):
        rc = RootCause(**(vec.to_dict() | changed))
        assert known.classify(wrong("cache_write", "vectorize"), None, rc) is None, changed


def test_an_entry_that_names_its_site_claims_no_failure_on_another():
    """An entry for loop_partition of a *reduction* loop (re-run inits) that requires the
    site class ``site_reduction`` still claims that step on a reduction site a route nested
    further, but not a loop_partition on a site without the class (a second partition of a
    spatial loop drops iterations: another bug, loop-partition-of-a-piece-ignores-its-min).  Without the requirement the rule decides
    as before; a malformed requirement is refused."""
    from fuzzharness.buckets.known_bugs import KnownBugsError

    entry = {"id": "lp-init", "title": "t", "match": {
        "symptom": "wrong_result", "stage": "verify", "primitives": ["loop_partition"],
        "facts": ["reduction_init_repeated"]}}
    sig = wrong("loop_partition", facts=("reduction_init_repeated",))

    def rc(site):
        return root_cause(case_with("LoopPartition"), sig, "", "loop_partition",
                          ("reduction_init_repeated",), site)

    spatial = rc(("site_dependence_hidden", "site_nested"))
    assert KnownBugs.from_doc({"bug": [entry]}).classify(sig, None, spatial).bug.id == "lp-init"
    known = KnownBugs.from_doc({"bug": [entry | {"trigger": {"step_site": ["site_reduction"]}}]})
    assert known.classify(sig, None, rc(("site_reduction",))).bug.id == "lp-init"
    nested = rc(("site_dependence_hidden", "site_nested", "site_reduction"))
    assert known.classify(sig, None, nested).bug.id == "lp-init"
    assert known.classify(sig, None, spatial) is None
    with pytest.raises(KnownBugsError, match="site classes"):
        KnownBugs.from_doc({"bug": [entry | {"trigger": {"step_site": ["reduction"]}}]})
    # the packaged entry and the corpus entry that stands for it (known_bug in its meta.json)
    packaged = KnownBugs.load()
    assert packaged.classify(sig, None, rc(("site_reduction",))).bug.id == "loop-partition-reduction-init"
    # the spatial route is the other bug, which has an entry of its own now
    assert packaged.classify(sig, None, spatial).bug.id == "loop-partition-of-a-piece-ignores-its-min"


def test_a_known_mechanism_is_known_by_any_route():
    """An entry that names a mechanism fact knows every route into it; a route without the
    fact, or another mechanism, is not that entry."""
    doc = {"bug": [{"id": "vec-alloc", "title": "alloc in a vectorized loop",
                    "match": {"symptom": "wrong_result", "primitives": ["compute_at", "vectorize"],
                              "facts": ["alloc_in_vectorized_loop"]}}]}
    known = KnownBugs.from_doc(doc)
    alloc = ("alloc_in_vectorized_loop",)
    for prims in (("compute_at", "vectorize"), ("reverse_compute_at", "vectorize"),
                  ("cache_read", "split", "vectorize", "write_at")):
        sig = wrong(*prims, facts=alloc)
        rc = root_cause(case_with(*(p.title().replace("_", "") for p in prims)), sig)
        assert known.classify(sig, None, rc).bug.id == "vec-alloc", prims
    sig = wrong("reverse_compute_at", "vectorize")
    assert known.classify(sig, None, root_cause(case_with("ReverseComputeAt", "Vectorize"), sig)) is None
    sig = wrong("reverse_compute_at", "vectorize", facts=("reduction_init_repeated",))
    assert known.classify(sig, None, root_cause(case_with("ReverseComputeAt", "Vectorize"), sig)) is None


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


def test_the_packaged_known_bugs_know_their_ir_shapes_and_no_more():
    """Today's known-bugs file: the alloc-in-vectorized-loop bug by any route; blockize's
    dropped init with the cache_read that gave it a sibling block; but a write_at that left
    the init on the old buffer is not blockize's bug, and a loop_partition that also needs a
    compute_at is not the plain loop_partition bug."""
    known = KnownBugs.load(corpus=False)

    def which(kinds, symptom="wrong_result", facts=(), workload="dense"):
        sig = wrong(*(k.lower() for k in kinds), symptom=symptom, facts=facts, workload=workload)
        m = known.classify(sig, "0.27.0", root_cause(case_with(*kinds, workload=workload), sig))
        return m.bug.id if m else None

    alloc = ("alloc_in_vectorized_loop",)
    assert which(("compute_at", "vectorize"), facts=alloc) == "alloc-in-vectorized-loop-not-widened"
    assert which(("write_at", "split", "vectorize"), symptom="nan_inf", facts=alloc) == \
        "alloc-in-vectorized-loop-not-widened"
    assert which(("compute_at", "vectorize")) is None  # without the shape: not that bug
    missing = ("reduction_init_missing",)
    assert which(("cache_read", "blockize"), symptom="nan_inf", facts=missing) == "blockize-drops-reduction-init"
    assert which(("loop_partition", "decompose_reduction", "write_at"), facts=missing) is None
    repeated = ("reduction_init_repeated",)
    assert which(("loop_partition",), facts=repeated) == "loop-partition-reduction-init"
    assert which(("loop_partition", "compute_at"), symptom="nan_inf", facts=repeated,
                 workload="row_sum") is None


def test_a_kernel_corrupting_memory_is_one_symptom_whichever_check_caught_it():
    """out_of_bounds (a guard zone), SIGSEGV, SIGBUS, SIGABRT (glibc) from the run on are one
    class, for the root cause and for the minimizer's "same bug"; a compiler that crashes
    (lower) and a hang stay apart, and so do other primitives."""
    from fuzzharness.minimize.predicate import SameBug

    def crash(kind, stage="run", prims=("cache_write", "reindex_cache_write", "split")):
        return Signature("crash", stage, kind=kind, workload="pad", dtype="float32", primitives=prims)

    def key(sig):
        return root_cause(case_with(*(p.title().replace("_", "") for p in sig.primitives), workload="pad"),
                          sig).key

    same = [crash("out_of_bounds"), crash("SIGSEGV"), crash("SIGABRT", "verify"), crash("SIGBUS")]
    assert len({key(s) for s in same}) == 1
    assert root_cause(None, same[0]).symptom == "crash/memory"
    apart = [crash("SIGSEGV", "lower"), Signature("timeout", "run", workload="pad", primitives=same[0].primitives),
             crash("out_of_bounds", prims=("cache_write", "split", "vectorize"))]
    assert len({key(s) for s in apart} | {key(same[0])}) == 4
    target = crash("SIGSEGV", prims=("cache_write", "parallel", "reindex_cache_write", "split"))
    assert SameBug(target).matches(crash("out_of_bounds"))  # parallel dropped, caught by a guard zone
    assert not SameBug(target).matches(crash("SIGSEGV", "lower"))
    # reindex_cache_read is not cache_read in the key (its copy has bugs of its own), but
    # blockize's known entry knows either as the sibling block it needed
    missing = ("reduction_init_missing",)
    a = root_cause(case_with("ReindexCacheRead", "Blockize"), wrong("reindex_cache_read", "blockize", facts=missing))
    b = root_cause(case_with("CacheRead", "Blockize"), wrong("cache_read", "blockize", facts=missing))
    assert a.key != b.key
    known = KnownBugs.load(corpus=False)
    assert {known.classify(wrong("blockize", p, facts=missing), "0.27.0", rc).bug.id
            for p, rc in (("reindex_cache_read", a), ("cache_read", b))} == {"blockize-drops-reduction-init"}


def test_root_causes_of_one_known_bug_are_one_distinct_bug():
    """Distinct bugs: two root causes whose repros are the known loop_partition bug (one with
    a cache_write its culprit step shows was not needed to go wrong) are one bug; a new bug
    stays its own, and so does a root cause no entry claims."""
    known = KnownBugs.load(corpus=False)
    repeated = ("reduction_init_repeated",)
    a = root_cause(case_with("LoopPartition"), wrong("loop_partition", facts=repeated))
    b = root_cause(case_with("LoopPartition", "CacheWrite"), wrong("loop_partition", "cache_write"),
                   "", "loop_partition", repeated, ("site_reduction",))  # the partitioned sum loop
    c = root_cause(case_with("Merge", "Split"), wrong("merge", "split"), "", "split", ())
    rows = [{"key": rc.key, "fields": rc.to_dict(), "signature": sig.to_dict(), "title": t,
             "buckets": [t], "attached": {}, "cases": 2, "repros": 1, "length": 1, "path": ""}
            for rc, sig, t in ((a, wrong("loop_partition", facts=repeated), "a"),
                               (b, wrong("loop_partition", "cache_write"), "b"),
                               (c, wrong("merge", "split"), "c"))]
    assert len({a.key, b.key, c.key}) == 3
    grouped = known.group_root_causes(rows, "0.27.0")
    assert [(g["known"], g["buckets"], g["cases"]) for g in grouped] == [
        ("loop-partition-reduction-init", ["a", "b"], 4), ("", ["c"], 2)]
    from fuzzharness.buckets.distinct import distinct_bugs

    d = distinct_bugs(grouped)
    assert (d["count"], d["root_causes"], d["verified_repros"]) == (2, 3, 3)


def test_an_entry_with_bind_allows_the_loop_steps_that_make_the_thread_loop():
    """A minimized OpenCL case cannot drop the fuse/split/reorder around its bind: an entry
    matching (bind, reverse_compute_inline, transform_block_layout) — the old dlight-epilogue
    entry's rule — knows its bug with them; another extra step (a cache_write) or a trigger
    without reverse_compute_inline is not that bug."""
    known = KnownBugs.from_doc({"bug": [{
        "id": "dlight-epilogue-inlined-into-unit-reduction", "title": "t",
        "match": {"symptom": "wrong_result", "stage": "verify", "tvm": "0.27",
                  "primitives": ["bind", "reverse_compute_inline", "transform_block_layout"]}}]})

    def classify(*prims):
        sig = wrong(*prims, workload="dense")
        rc = RootCause("wrong_output", "verify", prims)
        m = known.classify(sig, "0.27.0", rc)
        return m.bug.id if m else None

    base = ("bind", "reverse_compute_inline", "transform_block_layout")
    assert classify(*base) == "dlight-epilogue-inlined-into-unit-reduction"
    assert classify(*base, "fuse", "split", "reorder") == "dlight-epilogue-inlined-into-unit-reduction"
    assert classify(*base, "fuse", "split", "cache_write") is None
    assert classify("bind", "fuse", "split", "transform_block_layout") is None
