"""Classification and dedup: real TVM failures → signatures → buckets → known bugs."""

import dataclasses
import io
import json
import sqlite3

import pytest

from fuzzharness.buckets.known_bugs import KnownBugs, KnownBugsError
from fuzzharness.buckets.signatures import normalize_message, signature
from fuzzharness.campaign.db import ResultsDB
from fuzzharness.campaign.progress import Progress
from fuzzharness.core.case import Case
from fuzzharness.core.traces import trace_primitives
from fuzzharness.core.verdict import Stage, Status, Verdict
from fuzzharness.execution.stages import execute
from fuzzharness.generators.cases import GenSettings, generate_case
from tests.conftest import run_cli

# -- normalisation --------------------------------------------------------------------------
OP_REPR = ('InternalError: unknown intrinsic ir.Op(span=None, ty=ir.Type(span=None), name="{}", '
           'description="", arguments=(), attrs_type_key="", num_inputs={}, support_level=10)')


@pytest.mark.parametrize("a, b", [
    ("InternalError: Check failed: lanes > 1 (1 vs. 1) : ",
     "InternalError: Check failed: lanes > 4 (3 vs. 4) : "),
    ("TVMError: variable i0_1 has been used before definition at 0x7f12ab34",
     "TVMError: variable ax3_ax4_fused_0 has been used before definition at 0x55aa00ff"),
    ("InternalError: Check failed: (a.dtype() == b.dtype()) float16 vs float32 in "
     "/project/src/tirx/ir/expr.cc:123",
     "InternalError: Check failed: (a.dtype() == b.dtype()) float32 vs float64 in "
     "/other/build/src/tirx/ir/expr.cc:456"),
    ("ScheduleError: An error occurred in the schedule primitive 'fuse'.\n"
     "The IR with diagnostic is:\n# from tvm.script import tirx as T\n"
     "    for i_0 in range(12):\nError message: The loops 'i_0' and 'j_1' cannot be fused",
     "ScheduleError: An error occurred in the schedule primitive 'fuse'.\n"
     "The IR with diagnostic is:\n    for k_outer in range(7):\n"
     "Error message: The loops 'k_outer' and 'v2' cannot be fused"),
    # compute_at's region analysis quotes whatever index expression it met
    ("ValueError: Check failed: (var.has_value()) is false: TensorRegion pattern match "
     "failed: voh * 2 + vrh", "ValueError: Check failed: (var.has_value()) is false: "
     "TensorRegion pattern match failed: vh + vrh"),
    # PoCL compiles each kernel from a temporary file with a random name
    ("GeneratedCodeError: OpenCL build failed: error: /root/.cache/pocl/kcache/tempfile_FQpgsn.cl:5:7: "
     "cannot take the address of an rvalue of type 'bfloat16'",
     "GeneratedCodeError: OpenCL build failed: error: /root/.cache/pocl/kcache/tempfile_XuCQRC.cl:5:7: "
     "cannot take the address of an rvalue of type 'bfloat16'"),
    # an operator's repr: its name counts, not its other attributes
    (OP_REPR.format("tirx.texture2d_load", -1), OP_REPR.format("tirx.texture2d_load", 3)),
])
def test_instances_of_one_error_normalise_alike(a, b):
    assert normalize_message(a) == normalize_message(b)
    assert normalize_message(a)  # and keep something


@pytest.mark.parametrize("a, b", [
    ("InternalError: Check failed: lanes > 1 (1 vs. 1) : ",
     "InternalError: Check failed: (op->kind != ForKind::kVectorized) is false: x"),
    ("InternalError: Check failed: lanes > 1", "TVMError: Check failed: lanes > 1"),
    ("TVMError: Cannot find buffer", "TVMError: Cannot find variable"),
    ("GeneratedCodeError: OpenCL build failed: error: /root/.cache/pocl/kcache/tempfile_FQpgsn.cl:5:7: "
     "cannot take the address of an rvalue", "GeneratedCodeError: OpenCL build failed: error: "
     "/root/.cache/pocl/kcache/tempfile_FQpgsn.cl:5:7: use of undeclared identifier"),
    # LLVM's "unknown intrinsic" of two operators (a texture load left in host code by an
    # Adreno schedule; another one's) — the repr's name was normalised away before
    (OP_REPR.format("tirx.texture2d_load", -1), OP_REPR.format("tirx.texture2d_store", -1)),
])
def test_different_errors_stay_apart(a, b):
    assert normalize_message(a) != normalize_message(b)


def test_salient_line_skips_ir_dumps():
    msg = ("ScheduleError: An error occurred in the schedule primitive 'split'.\n"
           "The IR with diagnostic is:\n@T.prim_func\ndef main(A: T.Buffer((16, 16))):\n"
           "Error message: The split factors do not cover the loop")
    assert normalize_message(msg) == "ScheduleError: The split factors do not cover the loop"


# -- real failures --------------------------------------------------------------------------
def scheduled_case(workload, params, schedule, *, oracle="bound", distribution="uniform",
                   block=None):
    """A case whose trace is ``schedule(sch, block, loops)`` applied with TVM's real Schedule
    (``block``: the block's name; default the workload's reduction block)."""
    from tvm import s_tir

    from fuzzharness.core.tvm_support import trace_to_json
    from fuzzharness.generators.workloads import workloads

    sch = s_tir.Schedule(workloads[workload].prim_func(params))
    block = sch.get_sblock(block or ("C" if workload == "matmul" else "B"))
    schedule(sch, block, sch.get_loops(block))
    return Case(workload={"name": workload, "params": params},
                inputs={"distribution": distribution, "seed": 3},
                schedule={"source": "test", "trace": trace_to_json(sch.trace)},
                oracle={"mode": oracle}, origin={"dtype": params["dtype"]})


def nested_vectorize(sch, block, loops):
    outer, inner = sch.split(loops[0], factors=[None, 2])
    sch.vectorize(outer)
    sch.vectorize(inner)


def fuse_split_reorder(sch, block, loops):
    fused = sch.fuse(loops[0], loops[1])
    a, b = sch.split(fused, factors=[None, 4])
    sch.reorder(b, a)


def unit_vector_with_unroll_pragma(sch, block, loops):
    _, inner = sch.split(loops[0], factors=[None, 1])
    sch.vectorize(inner)
    sch.annotate(inner, "pragma_auto_unroll_max_step", 16)
    sch.annotate(inner, "pragma_unroll_explicit", 1)


def split_reorder_reduction(sch, block, loops):
    a, b = sch.split(loops[-1], factors=[None, 2])
    sch.reorder(b, a)


def run(case):
    v = execute(case).verdict
    return v, signature(case.to_dict(), v)


@pytest.fixture(scope="module")
def known():
    return KnownBugs.load()  # the packaged file


def test_one_compile_error_bug_is_one_bucket_across_workloads_and_dtypes(known):
    cases = [scheduled_case("row_sum", {"M": 4, "N": 3, "dtype": "float32"}, nested_vectorize),
             scheduled_case("row_sum", {"M": 10, "N": 7, "dtype": "float16"}, nested_vectorize),
             scheduled_case("matmul", {"M": 6, "N": 5, "K": 9, "dtype": "float16-acc32"},
                            nested_vectorize)]
    sigs = []
    for c in cases:
        v, sig = run(c)
        assert v.status is Status.COMPILE_ERROR and v.stage is Stage.LOWER, v.line()
        assert "storage_rewrite.cc" in v.details["site"]
        sigs.append(sig)
    assert len({s.key for s in sigs}) == 1
    assert len({(s.workload, s.dtype) for s in sigs}) == 3  # still recorded per failure
    assert known.match(sigs[0], "0.27.0").id == "vectorize-nested-liftstorage"


def test_wrong_results_carry_schedule_facts_and_match_the_known_fuse_bug(known):
    sigs = []
    for m, n in ((4, 3), (9, 5)):
        v, sig = run(scheduled_case("row_sum", {"M": m, "N": n, "dtype": "float32"},
                                    fuse_split_reorder))
        assert v.status is Status.WRONG_RESULT, v.line()
        assert sig.facts == ("loop_mixes_spatial_and_reduction",)
        assert sig.primitives == ("fuse", "reorder", "split")
        assert not sig.has_text
        sigs.append(sig)
    assert sigs[0].key == sigs[1].key  # same workload, dtype and schedule shape
    assert known.match(sigs[0], "0.27.0").id == "fused-spatial-reduction-reorder"
    assert known.match(sigs[0], "0.28.0") is None  # entries are pinned to a TVM version


def test_an_argmin_that_lost_its_init_to_blockize_and_cache_write_is_the_known_bug(known):
    """An argmax reads its accumulators inside ``T.let`` bindings, so the store's value shows
    no load: the fact ``reduction_init_missing`` was missed and a known bug (blockize +
    cache_write loses the init) was reported as new (seed 7 #1028, minimized).  The fact is
    read from the real scheduled program; the unscheduled argmin and the blockized one whose
    init still writes what the body accumulates do not have it."""
    from tvm import s_tir

    from fuzzharness.execution.facts import schedule_facts
    from fuzzharness.generators.workloads import workloads

    func = workloads["argmax"].prim_func({"kind": "argmin", "shape": [1, 23], "dtype": "float32"})
    scheds = {}
    for steps in ((), ("blockize",), ("blockize", "cache_write")):
        sch = s_tir.Schedule(func)
        block = sch.get_sblock("argmin")
        if "blockize" in steps:
            sch.blockize(sch.get_loops(block)[1])
        if "cache_write" in steps:
            sch.cache_write(block, 1, "global")  # V, the running minimum
        scheds[steps] = schedule_facts(sch.mod)
    assert scheds == {(): [], ("blockize",): [],
                      ("blockize", "cache_write"): ["reduction_init_missing"]}, scheds
    case = {"workload": {"name": "argmax", "params": {"kind": "argmin", "shape": [1, 23],
                                                       "dtype": "float32"}},
            "schedule": {"trace": [[["GetSBlock", [], ["argmin", "main"], ["b0"]],
                                    ["GetLoops", ["b0"], [], ["l1", "l2"]],
                                    ["Blockize", ["l1"], [False], ["b3"]],
                                    ["CacheWrite", ["b0", []], [1, "global"], ["b11"]]], []]},
            "origin": {"dtype": "float32"}}
    wrong = Verdict(Status.WRONG_RESULT, Stage.VERIFY, message="I[0]: got -1, reference 0",
                    details={"facts": scheds[("blockize", "cache_write")]})
    sig = signature(case, wrong)
    assert sig.primitives == ("blockize", "cache_write") and sig.facts == ("reduction_init_missing",)
    assert known.match(sig, "0.27.0").id == "cache-write-of-blockized-reduction-loses-init"
    assert known.match(dataclasses.replace(sig, facts=()), "0.27.0") is None  # new without it


def partition_reduction(sch, block, loops):
    sch.loop_partition(loops[-1], [1, 1, None])


def test_loop_partition_of_a_reduction_is_known_only_with_its_fact(known):
    v, sig = run(scheduled_case("row_sum", {"M": 2, "N": 5, "dtype": "float32"},
                                partition_reduction, oracle="exact", distribution="ones"))
    assert v.status is Status.WRONG_RESULT, v.line()
    assert sig.facts == ("reduction_init_repeated",)
    assert known.match(sig, "0.27.0").id == "loop-partition-reduction-init"
    # another wrong answer after loop_partition, without repeated inits: not masked as known
    other = dataclasses.replace(sig, facts=())
    assert known.match(other, "0.27.0") is None


def test_reference_mismatch_is_one_bucket_whatever_the_schedule(known):
    """bf16 argmax: TVM's *unscheduled* build is already wrong, so the schedule the case
    carries (none, split, fuse) must not split the bug into several buckets."""
    params = {"kind": "argmax", "shape": [4, 9], "dtype": "bfloat16"}

    def with_(how):
        def schedule(sch, block, loops):
            if how == "split":
                sch.split(loops[-1], [None, 3])
            elif how == "fuse":
                sch.fuse(*loops)
        return schedule

    sigs = []
    for how in ("none", "split", "fuse"):
        v, sig = run(scheduled_case("argmax", params, with_(how), block="argmax"))
        assert v.status is Status.REFERENCE_MISMATCH, v.line()
        sigs.append(sig)
    assert len({s.key for s in sigs}) == 1 and sigs[0].primitives == ()
    assert known.match(sigs[0], "0.27.0").id == "bf16-let-storage-legalize"


def test_correct_reorder_passes_and_has_no_bucket():
    v, sig = run(scheduled_case("row_sum", {"M": 4, "N": 8, "dtype": "float32"},
                                split_reorder_reduction))
    assert v.status is Status.PASS and sig is None


def test_vectorized_unit_loop_with_unroll_pragma_is_known(known):
    v, sig = run(scheduled_case("row_sum", {"M": 4, "N": 3, "dtype": "float32"},
                                unit_vector_with_unroll_pragma))
    assert v.status is Status.COMPILE_ERROR, v.line()
    assert sig.detail == "InternalError: Check failed: lanes > N (N vs. N)"
    assert sig.site.startswith("ir/prim/vector_expr.cc:")
    assert sig.primitives == ("split", "unroll", "vectorize")
    assert known.match(sig, "0.27.0").id == "vectorized-unit-loop-unroll-pragma"


def test_an_unknown_failure_is_new(known):
    v = Verdict(Status.CRASH, Stage.CODEGEN, "worker killed by SIGSEGV",
                details={"kind": "signal", "signal": "SIGSEGV"})
    case = Case(workload={"name": "matmul", "params": {"M": 2, "N": 2, "K": 2, "dtype": "float32"}},
                inputs={"distribution": "uniform", "seed": 1})
    sig = signature(case.to_dict(), v)
    assert sig.kind == "SIGSEGV" and known.match(sig, "0.27.0") is None


def test_harness_errors_are_bucketed_but_not_findings():
    v = execute(Case(workload={"name": "matmul", "params": {"M": 2, "N": 2, "K": 2, "dtype": "float32"}},
                     inputs={"distribution": "no_such_distribution", "seed": 1})).verdict
    sig = signature(None, v)
    assert v.status is Status.HARNESS_ERROR and sig is not None and not sig.is_finding


# -- primitives from traces -----------------------------------------------------------------
def test_trace_primitives_name_the_schedule_methods_applied():
    from tvm import s_tir

    from fuzzharness.core.traces import ANNOTATION_PRIMITIVES
    from fuzzharness.core.tvm_support import blame_tvm

    methods = {m for m in dir(s_tir.Schedule) if not m.startswith("_")}
    checked = 0
    for i in range(30):
        try:
            case = generate_case(3, i, GenSettings(metaschedule_fraction=0.0))
        except Exception as e:  # a TVM crash while scheduling: a finding, not this test's business
            assert blame_tvm(e), e
            continue
        checked += 1
        if case.workload_name == "graph":  # its primitives: ops + each fused function's trace
            from fuzzharness.generators.graphs.spec import graph_primitives

            got = set(graph_primitives(case.to_dict()))
            methods |= {str(n["op"]) for n in case.params["nodes"]} | {"convert_layout", "dlight"}
        else:
            got = set(trace_primitives(case.trace))
        applied = {c for s in case.origin["steps"] if s["outcome"] == "accepted"
                   for c in s.get("calls", []) if not c.startswith("sample_")}  # draws, not transforms
        if applied & {"annotate", "unannotate"}:  # named after the annotation key in buckets
            assert got & {"annotate", "unannotate", *ANNOTATION_PRIMITIVES.values()}, (i, got)
        assert applied - {"annotate", "unannotate"} <= got, (i, applied, got)
        assert got <= methods | set(ANNOTATION_PRIMITIVES.values()), got
    assert checked >= 20


# -- known-bugs files -----------------------------------------------------------------------
def test_packaged_known_bugs_file_is_valid(known):
    assert len(known) >= 3
    for bug in known.bugs:
        assert bug.link == "" or bug.link.startswith("https://github.com/apache/tvm/issues/")
        assert bug.link or bug.status == "not yet reported"


def test_a_float16_gelu_tanh_graph_build_timeout_is_the_known_jit_compile_time(known):
    """The hang of a float16 graph with gelu_tanh at build (TVM's JIT of it takes ~15 s, more
    than the 30 s timeout on a loaded machine: README campaign seed 1565835716, case 316) is
    probably that known bug; a timeout without gelu_tanh, in float32, or a wrong result of
    the same graph is not."""
    from fuzzharness.buckets.signatures import Signature

    def matched(symptom, dtype, prims):
        m = known.classify(Signature(symptom, "build", workload="graph", dtype=dtype,
                                     primitives=prims), "0.27.0.post1")
        return m.bug.id if m else None

    bug = "relax-float16-gelu-tanh-jit-compile-time"
    assert matched("timeout", "float16", ("add", "gelu_tanh", "relu", "transpose")) == bug
    assert matched("timeout", "float16", ("add", "relu", "transpose")) != bug
    assert matched("timeout", "float32", ("gelu_tanh",)) != bug
    assert matched("wrong_result", "float16", ("gelu_tanh",)) != bug


def test_dlight_gemv_failures_in_the_rules_own_code_are_the_known_bugs(known):
    """The two ways dlight's GEMV rule fails in its own Python on depthwise conv2d for Adreno
    (seen as one README campaign's NEW bucket) match their entries; the unpack bug of the
    same file keeps its own, and an assertion elsewhere, or the same message from another
    site, matches neither."""
    from fuzzharness.buckets.signatures import Signature

    def matched(detail, site):
        m = known.classify(Signature("compile_error", "schedule", detail=detail, site=site),
                           "0.27.0.post1")
        return m.bug.id if m else None

    gpu, analysis = "tvm/s_tir/dlight/gpu/gemv.py:apply", "tvm/s_tir/dlight/analysis/gemv.py:normalize"
    attr = "AttributeError: 'ID' object has no attribute 'ID'"
    assert matched("AssertionError", analysis) == "dlight-gemv-normalize-no-reduction-loop"
    assert matched(attr, gpu) == "dlight-gemv-symbolic-tile-extent"
    assert matched("ValueError: too many values to unpack (expected N)", gpu) == \
        "dlight-gemv-outer-reduction-unpack"
    assert matched("AssertionError", "tvm/s_tir/dlight/gpu/reduction.py:apply") is None
    assert matched(attr, "tvm/s_tir/schedule/schedule.py:split") is None


def test_the_predicate_dropping_entries_stay_on_their_own_crashes(known):
    """The two out-of-bounds bugs of the README campaign (seed 783516988): a cross-thread
    reduction's write-back without its predicate (texture matmul, bind) and rfactor's
    write-back without the split's T.where.  An out-of-bounds crash of another workload with
    bind, a texture matmul crash without bind, or a wrong result with rfactor is neither."""
    from fuzzharness.buckets.signatures import Signature

    def matched(workload, prims, symptom="crash", stage="run"):
        m = known.classify(Signature(symptom, stage, kind="out_of_bounds" if symptom == "crash"
                                     else "", workload=workload, dtype="float32",
                                     primitives=prims), "0.27.0.post1")
        return m.bug.id if m else None

    cross = "cross-thread-reduction-writeback-drops-predicate"
    assert matched("matmul_texture", ("bind", "fuse", "reorder", "split")) == cross
    assert matched("matmul", ("bind", "fuse", "reorder", "split")) != cross
    assert matched("matmul_texture", ("fuse", "reorder", "split")) != cross
    assert matched("conv2d", ("rfactor", "split")) == "rfactor-write-back-drops-split-predicate"
    assert matched("conv2d", ("rfactor", "split"), "wrong_result", "verify") != \
        "rfactor-write-back-drops-split-predicate"


def test_the_texel_and_partition_block_errors_are_their_entries_only(known):
    """Two NEW error buckets of the README campaign (seed 1541360059), read by hand: a
    vectorized texture read wider than a texel (VectorizeLoop's check) and transform_layout on
    a loop_partition piece (GetRootPrimFunc).  VectorizeLoop's other checks, another texture
    lowering error and the same IndexError thrown elsewhere are neither."""
    from fuzzharness.buckets.signatures import Signature

    def matched(stage, detail, site):
        m = known.classify(Signature("compile_error", stage, detail=detail, site=site,
                                     workload="matmul_texture", dtype="float32"), "0.27.0.post1")
        return m.bug.id if m else None

    texel = ("InternalError: Check failed: (lane * dtype.bits() <= op->args[N].as<IntImmNode>()"
             "->value) is false: Expected Data to be Read is lesser than or equal to Texture Load "
             "length")
    vectorizer = "tirx/transform/vectorize_loop.cc:tvm::tirx::Vectorizer::Mutate_"
    assert matched("lower", texel, vectorizer) == "texture-load-vectorized-past-texel"
    assert matched("lower", "InternalError: Check failed: (lanes == N) is false", vectorizer) \
        != "texture-load-vectorized-past-texel"
    assert matched("lower", "InternalError: Expect no tvm_stack_make_shape outside of CallNodes",
                   "tirx/transform/lower_tvm_builtin.cc:tvm::tirx::BuiltinLower::Mutate") \
        == "texture-intermediate-lower-builtin"
    root = "IndexError: Could not get the corresponding function in the schedule state of the statement"
    assert matched("schedule", root, "s_tir/schedule/analysis/analysis.cc:tvm::s_tir::GetRootPrimFunc") \
        == "loop-partition-block-transform-layout-no-root-func"
    assert matched("schedule", root, "s_tir/schedule/state.cc:tvm::s_tir::ScheduleState::Replace") \
        != "loop-partition-block-transform-layout-no-root-func"


def test_transform_layout_dropping_the_producer_is_known_on_its_site_only(known):
    """transform_layout with padding of a reverse_compute_at'ed copy's output drops the
    producer under the shared loop (README campaign seed 1871757730; five labelled repros of
    the dedup benchmark): known when the minimized failure's culprit step is transform_layout
    on a block sharing the producer's outer loop, after the copy's cache_write and
    reverse_compute_at (the route of every repro seen).  transform_layout going wrong on
    another site, or a raw bucket that has not been minimized, is not (the last only
    probably); nor is a raw wrong result that merely has a transform_layout."""
    from fuzzharness.buckets.root_causes import RootCause
    from fuzzharness.buckets.signatures import Signature

    entry = "transform-layout-pad-drops-producer-block"
    prims = ("cache_write", "reverse_compute_at", "transform_layout")
    sig = Signature("wrong_result", "verify", workload="reduce", dtype="float16", primitives=prims)

    def classify(step, site, extra=()):
        rc = RootCause("wrong_output", "verify", prims + extra, step=step, step_site=site)
        m = known.classify(sig, "0.27.0", rc)
        return m.bug.id if m else None

    assert classify("transform_layout", ("site_shares_outer_loop",)) == entry
    # the graph route (seed11/420c86f1): one more site class, the same three steps
    assert classify("transform_layout", ("site_shares_loop", "site_shares_outer_loop")) == entry
    assert classify("transform_layout", ("site_reduction",)) != entry
    raw = known.classify(sig, "0.27.0")
    assert raw is not None and raw.bug.id == entry and not raw.confirmed
    # a raw wrong result that merely has a transform_layout (the pytest plugin's deliberately
    # wrong matmul did) is not even probably this bug
    other = Signature("wrong_result", "verify", workload="matmul", dtype="float32",
                      primitives=("split", "transform_layout"))
    m = known.classify(other, "0.27.0")
    assert m is None or m.bug.id != entry, m


def test_a_padding_block_moved_under_its_inputs_copy_is_known_on_padded_workloads(known):
    """reverse_compute_at of a pad block under its input copy's loop computes only the
    copied region (README campaign seed 1871757730; four labelled dedup repros): known when
    the minimized culprit step is that reverse_compute_at on pad, conv2d or depthwise_conv2d.
    pool2d's moved sum (the re-run init, another bug) and a dense epilogue's move are not."""
    from fuzzharness.buckets.root_causes import RootCause
    from fuzzharness.buckets.signatures import Signature

    entry = "reverse-compute-at-padding-consumer-drops-region"

    def classify(workload, prims=("cache_read", "reverse_compute_at"), symptom="nan_inf",
                 site=()):
        sig = Signature(symptom, "verify", workload=workload, dtype="float32", primitives=prims)
        rc = RootCause("wrong_output", "verify", prims, step="reverse_compute_at", step_site=site)
        m = known.classify(sig, "0.27.0", rc)
        return m.bug.id if m else None

    assert classify("depthwise_conv2d", ("cache_read", "cache_write", "reverse_compute_at")) == entry
    assert classify("pad") == classify("conv2d") == classify("pad", symptom="wrong_result") == entry
    # the moved block is a reduction (the labelled pool2d repros' site): another bug
    assert classify("pool2d", ("reverse_compute_at",), "wrong_result", ("site_reduction",)) != entry
    assert classify("conv2d", site=("site_reduction",)) != entry
    # another reverse_compute_at going wrong on a padded workload, on a shared loop
    assert classify("conv2d", ("reverse_compute_at", "split"), site=("site_shares_loop",)) != entry


@pytest.mark.parametrize("doc, needle", [
    ({"bug": [{"id": "x", "title": "t", "match": {"symptom": "wrong_answer"}}]}, "match.symptom"),
    ({"bug": [{"id": "x", "title": "t", "match": {"symptom": "crash", "detail": "("}}]},
     "not a regular expression"),
    ({"bug": [{"id": "x", "title": "t", "match": {"symptom": "crash", "stages": "lower"}}]},
     "unknown match key"),
    ({"bug": [{"id": "x", "title": "t", "match": {"symptom": "crash"}},
              {"id": "x", "title": "t", "match": {"symptom": "crash"}}]}, "duplicate id"),
    ({"bug": [{"id": "x", "title": "t", "link": "tvm#12", "match": {"symptom": "crash"}}]},
     "'link' must be a URL"),
    ({"bug": [{"id": "x", "title": "t"}]}, "needs a [bug.match] table"),
    ({"bugs": []}, "unknown top-level key"),
])
def test_bad_known_bugs_entries_are_refused(doc, needle):
    with pytest.raises(KnownBugsError, match=needle.replace("[", r"\[")):
        KnownBugs.from_doc(doc)


def test_bad_known_bugs_file_is_a_usage_error(tmp_path):
    bad = tmp_path / "known.toml"
    bad.write_text('[[bug]]\nid = "x"\n')
    r = run_cli("run", "--max-cases", "1", "--known-bugs", bad, "--out", tmp_path / "o")
    assert r.returncode == 2 and "known-bugs" not in r.stdout
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "'title' must be a non-empty string" in lines[0], r.stderr
    assert not (tmp_path / "o").exists()


# -- the database ---------------------------------------------------------------------------
V1_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE campaign(id INTEGER PRIMARY KEY CHECK (id = 1), seed INTEGER NOT NULL,
    settings TEXT NOT NULL, versions TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE sessions(id INTEGER PRIMARY KEY AUTOINCREMENT, started REAL NOT NULL, ended REAL,
    cases INTEGER NOT NULL DEFAULT 0, argv TEXT);
CREATE TABLE results(idx INTEGER PRIMARY KEY, case_id TEXT, workload TEXT, dtype TEXT,
    target TEXT, status TEXT NOT NULL, stage TEXT NOT NULL, ratio REAL, worst_error REAL,
    digest TEXT, elapsed REAL, finished REAL NOT NULL, worker INTEGER, session INTEGER,
    case_json TEXT, verdict_json TEXT NOT NULL);
INSERT INTO meta VALUES ('application', 'tvm-fuzzharness'), ('schema', '1');
INSERT INTO campaign VALUES (1, 5, '{}', '{}', 0);
"""


def test_a_version_1_database_is_migrated_with_its_buckets(tmp_path):
    failing = [scheduled_case("row_sum", {"M": m, "N": 3, "dtype": "float32"}, nested_vectorize)
               for m in (4, 6)]
    passing = scheduled_case("row_sum", {"M": 4, "N": 8, "dtype": "float32"}, split_reorder_reduction)
    con = sqlite3.connect(tmp_path / "results.sqlite")
    con.executescript(V1_SCHEMA)
    for idx, case in enumerate([passing, *failing]):
        v = execute(case).verdict
        con.execute("INSERT INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (idx, case.id, case.workload_name, "float32", "llvm", v.status.value,
                     v.stage.value, None, None, v.digest, 0.1, 100.0 + idx, 0, 1,
                     case.to_json(), json.dumps(v.to_dict())))
    con.commit()
    con.close()
    db = ResultsDB(tmp_path)
    (bucket,) = db.buckets()
    assert bucket["count"] == 2 and bucket["example_idx"] == 1
    assert bucket["signature"].symptom == "compile_error"
    assert db.count() == 3
    db.close()
    db = ResultsDB(tmp_path)  # reopening does not migrate or count again
    assert [b["count"] for b in db.buckets()] == [2]
    db.close()


def test_progress_line_shows_rate_failures_buckets_and_time_left():
    out = io.StringIO()
    p = Progress(total=None, deadline=None, enabled=True, stream=out)
    p.start -= 10.0  # ten seconds in
    p.deadline = p.start + 60.0
    for _ in range(25):
        p.done += 1
    line = p.line({"pass": 20, "wrong_result": 3, "crash": 2}, restarts=1, buckets=3, new=1)
    assert "25 cases" in line and "2.5/s" in line and "5 failures" in line
    assert "3 buckets (1 new)" in line and "50s left" in line and "1 restarts" in line


def test_the_stage_count_check_is_one_known_bug_whatever_the_body_and_another_check_is_not():
    """InjectSoftwarePipeline's stage-count check fails for bodies of any length (an
    annotation a later cache_read, a loop_partition or lowering's flattening of a unit-extent
    block made stale — campaign seed 13: four error texts, one known bug); its check of a
    double_buffer_scope index is another bug."""
    from fuzzharness.buckets.signatures import Signature

    site = ("s_tir/transform/inject_software_pipeline.cc:"
            "tvm::s_tir::software_pipeline::PipelineInjector::Mutate_")
    check = ('InternalError: Check failed: pipeline_stages.size() == original_order.size() '
             '(N vs. N) : PrimFunc "ID" has original order ({}), but pipeline annotation is '
             '(N, N) with different size')
    known = KnownBugs.load()

    def bug(detail):
        sig = Signature.from_dict({"symptom": "compile_error", "stage": "lower", "detail": detail,
                                   "site": site, "kind": "", "workload": "argmax",
                                   "dtype": "float32", "primitives": ["software_pipeline"],
                                   "facts": []})
        m = known.classify(sig, "0.27.0")
        return m.bug.id if m is not None else None

    for order in ('"", "ID", "", "ID"', '"ID", "", "", "", ""', '"", "", "", ""'):
        assert bug(check.format(order)) == "software-pipeline-stage-count-after-cache-read", order
    assert bug(check.format('"", "ID", "ID", "", ""')[:200]) is not None  # cut short
    assert bug("ValueError: Check failed: (buffer_index >= N && static_cast<size_t>(buffer_index) "
               "< op->writes.size()) is false: Index of the buffer exceeds the size of the write "
               "regions of the block. (N vs. N)") is None


def test_a_fused_function_that_declares_fewer_reads_than_it_loads_is_its_own_mechanism():
    """FuseTIR merging concat(n0, x0, x0)'s two x0 parameters keeps one read region (labelled
    benchmark seed11/97166dad): the fused function, before any schedule step, loads x0 outside
    what it declares — the frontend fact ``read_region_incomplete``, a mechanism, so the
    wrong output its read_at schedule gives is not taken for the known read_at bug.  The
    other side: no other labelled graph's scheduled functions have the fact."""
    from fuzzharness.buckets.root_causes import root_cause
    from fuzzharness.core.relax_pipeline import graph_target, legalize, prim_functions
    from fuzzharness.execution.facts import frontend_facts
    from fuzzharness.generators.graphs.program import build_module
    from fuzzharness.generators.graphs.spec import Graph
    from tests.conftest import ROOT

    def facts(case):
        mod = legalize(build_module(Graph.from_dict(case.params)), graph_target(case.target),
                       case.schedule.get("layout"))
        funcs = prim_functions(mod)
        return frontend_facts([funcs[n] for n in case.schedule.get("functions") or {}])

    records = json.loads((ROOT / "benchmarks/dedup/cases.json").read_text())
    graphs = {r["id"]: Case.from_dict(r["case"]) for r in records if r["case"]["workload"]["name"] == "graph"}
    fused = graphs.pop("seed11/97166dad97da6e41")
    assert facts(fused) == ["read_region_incomplete"]
    assert len(graphs) >= 20 and not any(facts(c) for c in graphs.values())
    verdict = execute(fused).verdict
    sig = signature(fused.to_dict(), verdict)
    assert "read_region_incomplete" in sig.facts
    rc = root_cause(fused.to_dict(), sig, "", "read_at", (), ())
    assert rc.evidence == "ir_shape" and rc.mechanism == ("read_region_incomplete",), rc
    assert KnownBugs.load().classify(sig, "0.27.0", rc) is None  # not the known read_at bug
