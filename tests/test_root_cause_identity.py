"""Root causes from real TVM bugs and real processes: two routes into one bug minimize to one
root cause (``fuzzharness minimize CASE.json``), a different bug stays apart; a culprit pass
is named only when the repro, run without it, says fixed."""

from __future__ import annotations

import json

import pytest

from fuzzharness.core.case import Case
from tests.conftest import run_cli
from tests.test_repro import repro_of, scheduled


def alloc_by_compute_at(sch):
    """dense + bias + relu: the bias block moved under relu's inner loop, that loop vectorized:
    TVM plans the bias buffer inside the vectorized loop (one address for every lane)."""
    _, j = sch.get_loops(sch.get_sblock("relu_1"))
    sch.compute_at(sch.get_sblock("add_0"), j, preserve_unit_loops=True)
    sch.vectorize(sch.get_loops(sch.get_sblock("add_0"))[0])


def alloc_by_reverse_compute_at(sch):
    """The same bug by another route: relu moved under the bias block's loop, vectorized."""
    i, _ = sch.get_loops(sch.get_sblock("add_0"))
    sch.reverse_compute_at(sch.get_sblock("relu_1"), i)
    sch.vectorize(sch.get_loops(sch.get_sblock("add_0"))[0])


DENSE = {"K": 1, "M": 2, "N": 3, "dtype": "float32", "relu": True}


def pad_einsum_max(sch):
    """Another bug: pad_einsum pads a max reduction's input with 0 (max of negatives → 0)."""
    sch.pad_einsum(sch.get_sblock("max"), [1, 16, 2])


MAX = {"axes": [1], "dtype": "float32", "op": "max", "shape": [1, 1, 1]}


@pytest.mark.slow
def test_minimizing_two_routes_into_one_bug_gives_one_root_cause(tmp_path):
    keys, fields = {}, {}
    cases = {"compute_at": scheduled("dense", DENSE, alloc_by_compute_at, oracle="bound", distribution="uniform"),
             "reverse_compute_at": scheduled("dense", DENSE, alloc_by_reverse_compute_at, oracle="bound",
                                             distribution="uniform"),
             "pad_einsum": scheduled("reduce", MAX, pad_einsum_max, distribution="uniform", oracle="bound")}
    for name, case in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(case.to_json())
        r = run_cli("minimize", path, "--out", tmp_path / name, "--budget", "40", "--workers", "2",
                    "--no-progress", "--no-triage")
        assert r.returncode == 1, r.stdout + r.stderr
        (finding,) = [json.loads(p.read_text()) for p in (tmp_path / name).glob("*/finding.json")]
        keys[name], fields[name] = finding["root_cause"], finding["root_cause_fields"]
    assert keys["compute_at"] == keys["reverse_compute_at"], fields
    assert fields["compute_at"]["evidence"] == "ir_shape"
    assert "alloc_in_vectorized_loop" in fields["compute_at"]["facts"]
    assert keys["pad_einsum"] != keys["compute_at"] and fields["pad_einsum"]["evidence"] == "trigger"


@pytest.mark.slow
def test_a_culprit_is_named_only_when_a_fix_test_confirms_it(tmp_path):
    """PlanAndUpdateBufferAllocationLocation: disabling it in the repro fixes the alloc bug —
    confirmed, in the title; the same repro with another pass disabled still fails (a probe
    naming that one would be refuted, and not named).  The pad_einsum bug is in the scheduled
    TIR: the probe, running the inputs that decided the verdict as the repro does, finds no
    pass whose removal fixes it — "schedule", and no pass in the title.  (With all-ones
    inputs the probe's run came out right, and it named s_tir.StmtSimplify by chance.)"""
    from fuzzharness.repro.package import fix_test_outcome

    case = scheduled("dense", DENSE, alloc_by_compute_at, oracle="bound", distribution="uniform")
    _, outcome = repro_of(case, tmp_path / "alloc", triage=True)
    finding = json.loads((outcome.dir / "finding.json").read_text())
    assert finding["culprit"] == "s_tir.PlanAndUpdateBufferAllocationLocation", finding
    assert finding["culprit_confirmed"] is True
    assert "PlanAndUpdateBufferAllocationLocation" in finding["title"]
    assert fix_test_outcome(outcome.dir / "repro.py", "s_tir.StmtSimplify", None) == "not confirmed"
    case = scheduled("reduce", MAX, pad_einsum_max, distribution="ones", oracle="exact")
    _, outcome = repro_of(case, tmp_path / "pad", triage=True)
    finding = json.loads((outcome.dir / "finding.json").read_text())
    assert outcome.reproduced and finding["culprit"] == "schedule", finding
    assert "Simplify" not in finding["title"] and "s_tir." not in finding["title"], finding["title"]
    assert finding["root_cause_fields"]["culprit"] == "schedule"


@pytest.mark.slow
def test_the_pass_probe_runs_the_kernel_as_the_harness_does(tmp_path):
    """pad_einsum enlarging a loop the cache_write copy shares stores past C's end (labelled
    benchmark seed7/2f73b77e).  The probe's kernel runs between guard zones, so it sees the
    out-of-bounds write; no single disabled pass removes it: nothing implicated (its old
    unguarded run came out "right", and the first pass that changed the IR was named,
    PlanAndUpdateBufferAllocationLocation, never confirmed).  Probed as a wrong result, the
    run shows no wrong output: no pass is probed, the culprit is unknown."""
    from fuzzharness.buckets.root_causes import culprit_of
    from fuzzharness.execution.stages import execute
    from fuzzharness.kinds.tir.pass_bisect import triage
    from tests.conftest import ROOT

    records = {r["id"]: r for r in json.loads((ROOT / "benchmarks/dedup/cases.json").read_text())}
    case = Case.from_dict(records["seed7/2f73b77e277dae30"]["case"])
    verdict = execute(case).verdict
    assert (verdict.status.value, verdict.details.get("kind")) == ("crash", "out_of_bounds"), verdict
    t = triage(case, symptom="crash", pattern="OutOfBoundsWrite", workdir=tmp_path, verdict=verdict)
    assert t.passes and t.implicated == [] and "did not fail" not in t.note, t
    t = triage(case, symptom="wrong_result", pattern=None, workdir=tmp_path, verdict=verdict)
    assert t.implicated == [] and "did not fail as the campaign's did" in t.note, t
    assert culprit_of(t, "wrong_result") == ""


def partition_then_cache(sch):
    """mean: loop_partition of the reduction loop (each piece re-inits), then cache_write of
    one piece — which hides the shape (the inits now write two buffers)."""
    _, k = sch.get_loops(sch.get_sblock("sum"))
    sch.loop_partition(k, [1, None])
    sch.cache_write(sch.get_sblock("sum_l10"), 0, "local")


@pytest.mark.slow
def test_the_culprit_step_recognizes_a_known_bug_by_a_longer_route_and_no_other():
    """The first step after which a case fails: loop_partition here, so it is the known
    loop_partition bug although its minimized trigger also has a cache_write (which hides the
    repeated init).  The other side: a blockize + cache_write whose culprit step is the
    cache_write (blockize alone is right: it keeps the init, cache_write leaves it on the old
    buffer) is not blockize's known bug, though it has blockize and the missing-init shape."""
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.root_causes import root_cause
    from fuzzharness.buckets.signatures import Signature, signature
    from fuzzharness.execution.stages import execute
    from fuzzharness.minimize.step_bisect import culprit_step
    from tests.test_root_causes import case_with

    known = KnownBugs.load(corpus=False)
    case = scheduled("reduce", {"axes": [1], "dtype": "float32", "op": "mean", "shape": [1, 2]},
                     partition_then_cache)
    sig = signature(case.to_dict(), execute(case).verdict)
    step, facts, site = culprit_step(case, sig)
    assert (step, facts) == ("loop_partition", ("reduction_init_repeated",)) and "site_reduction" in site
    assert known.classify(sig, "0.27.0", root_cause(case.to_dict(), sig)) is None
    m = known.classify(sig, "0.27.0", root_cause(case.to_dict(), sig, "", step, facts, site))
    assert m is not None and m.bug.id == "loop-partition-reduction-init"
    # blockize + cache_write (its uninitialized cache makes a real run nondeterministic)
    missing = ("reduction_init_missing",)
    sig = Signature("wrong_result", "verify", workload="matmul", primitives=("blockize", "cache_write"),
                    facts=missing)
    rc = root_cause(case_with("Blockize", "CacheWrite", workload="matmul"), sig, "", "cache_write", missing)
    assert known.classify(sig, "0.27.0", rc).bug.id == "cache-write-of-blockized-reduction-loses-init"
    sig = Signature("wrong_result", "verify", workload="matmul", primitives=("blockize", "cache_read"),
                    facts=missing)
    rc = root_cause(case_with("Blockize", "CacheRead", workload="matmul"), sig, "", "blockize", missing)
    assert known.classify(sig, "0.27.0", rc).bug.id == "blockize-drops-reduction-init"


def test_the_step_probe_sees_a_fault_the_minimized_inputs_hide():
    """A max over all-ones inputs (the minimizer's simplest inputs) is one however many
    partitions reset it, so loop_partition's prefix passes on those inputs; the probe also
    runs each prefix on small integers, where it fails: the culprit step is loop_partition
    and the case is the known loop_partition bug.  On its own inputs only, the step would be
    the cache_write and the bug NEW (benchmarks/dedup: seed7/7d8e851893ced94c)."""
    import json

    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.root_causes import root_cause
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.case import Case
    from fuzzharness.execution.stages import execute
    from fuzzharness.minimize import step_bisect
    from tests.conftest import ROOT

    cases = json.loads((ROOT / "benchmarks" / "dedup" / "cases.json").read_text())
    d = dict(next(r["case"] for r in cases if r["id"] == "seed7/7d8e851893ced94c"))
    d.pop("id", None)
    case = Case.from_dict(d)
    assert case.inputs["distribution"] == "ones"
    sig = signature(d, execute(case).verdict)
    step, facts, site = step_bisect.culprit_step(case, sig)
    assert (step, facts) == ("loop_partition", ("reduction_init_repeated",)) and "site_reduction" in site
    m = KnownBugs.load(corpus=False).classify(sig, "0.27.0", root_cause(d, sig, "", step, facts, site))
    assert m is not None and m.bug.id == "loop-partition-reduction-init"
    # the other side: on the case's own inputs alone the fault does not show at that step
    only_own = [(s, c) for s, c in step_bisect.prefixes(case) if c.inputs == case.inputs]
    from fuzzharness.engine.pool import WorkerPool

    with WorkerPool(1, timeout=60) as pool:
        vs = {r.task["task"]: r.verdict for r in pool.run(
            [{"task": i, "case": c.to_dict()} for i, (_, c) in enumerate(only_own)])}
    own_step, _, _ = step_bisect.first_failing(sig, only_own, [vs[i] for i in range(len(only_own))],
                                            "cache_write")
    assert own_step == "cache_write"


def _labelled(ids: list[str]) -> dict:
    """Root causes of labelled repros (benchmarks/dedup/) as a campaign keys a minimized case:
    its real verdict, then its culprit step and that step's site (step_bisect, step_site)."""
    from fuzzharness.buckets.root_causes import root_cause
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.case import Case
    from fuzzharness.execution.stages import execute
    from fuzzharness.minimize import step_bisect
    from tests.conftest import ROOT

    records = {r["id"]: r for r in json.loads((ROOT / "benchmarks/dedup/cases.json").read_text())}
    out = {}
    for i in ids:
        d = {k: v for k, v in records[i]["case"].items() if k != "id"}
        case = Case.from_dict(d)
        sig = signature(d, execute(case).verdict)
        assert sig is not None, i
        out[i] = root_cause(d, sig, "", *step_bisect.culprit_step(case, sig))
    return out


@pytest.mark.slow
def test_routes_into_one_schedule_bug_share_a_step_and_site_and_other_bugs_stay_apart():
    """reindex after a cache_read + compute_at, after a cache_write + reverse_compute_at and
    after a read_at (each gives reindex a sibling under its loop: its copy is misplaced) is
    one root cause; so is decompose_padding after a merge and after a cache_read +
    compute_at.  pad_einsum of a max (padding not neutral) and pad_einsum of a reduction
    whose loop a write-back shares (out-of-bounds stores, seen as a wrong output) fail at
    the same step with the same symptom and stay apart by their site."""
    rc = _labelled(["seed7/d3093380dd357a82", "seed7/b04dae30936c53a8", "seed7/48321b9fb3da4acf",
                    "seed7/4a2b1e80e64964bb", "seed11/a221856cdf9dbe75",
                    "seed7/ccdf60266346c221", "seed11/81372621b8836f8c"])
    reindex = {rc[i].key for i in ("seed7/d3093380dd357a82", "seed7/b04dae30936c53a8", "seed7/48321b9fb3da4acf")}
    assert len(reindex) == 1, {i: r.title() for i, r in rc.items()}
    assert rc["seed7/d3093380dd357a82"].evidence == "step_site"
    assert rc["seed7/4a2b1e80e64964bb"].key == rc["seed11/a221856cdf9dbe75"].key
    assert rc["seed7/4a2b1e80e64964bb"].key not in reindex
    pad_max, pad_shared = rc["seed7/ccdf60266346c221"], rc["seed11/81372621b8836f8c"]
    assert (pad_max.symptom, pad_max.step) == (pad_shared.symptom, pad_shared.step) == ("wrong_output", "pad_einsum")
    assert pad_max.key != pad_shared.key
    assert "site_shares_outer_loop" in pad_shared.step_site and "site_shares_outer_loop" not in pad_max.step_site


@pytest.mark.slow
def test_loop_partition_wrappers_key_the_placements_they_mislead_and_reduction_loops_stay_apart():
    """Relaxed regions of partition wrappers nested in a block: a reindex and a cache_write
    that copy too much are one root cause (the wrapper's); empty regions of top-level
    wrappers (a reindex_cache_write placed too late) another; the crash of a write-back
    over a partitioned split another.  A second loop_partition of a *reduction* loop (its
    init re-run) and of a spatial loop (iterations dropped) stay apart by the site class of
    the partitioned loop."""
    rc = _labelled(["seed7/3435c238e4fdef93", "seed7/71c500575af5673b", "seed7/5504ffc3076f62d4",
                    "seed7/63f86d5930dbcfc7", "seed7/b48229d24f5cf12b", "seed7/2d633aaa8d7e489a"])
    relaxed = rc["seed7/3435c238e4fdef93"]
    assert relaxed.key == rc["seed7/71c500575af5673b"].key, {i: r.title() for i, r in rc.items()}
    assert len({relaxed.key, rc["seed7/5504ffc3076f62d4"].key, rc["seed7/63f86d5930dbcfc7"].key}) == 3
    init, dropped = rc["seed7/b48229d24f5cf12b"], rc["seed7/2d633aaa8d7e489a"]
    assert init.step == dropped.step == "loop_partition"
    assert "site_reduction" in init.step_site and "site_reduction" not in dropped.step_site
    assert init.key != dropped.key


@pytest.mark.slow
def test_a_graph_that_reaches_a_schedule_bug_shares_the_kernels_root_cause():
    """The culprit step is probed on a graph's one scheduled function too: a reindex
    misplacing its copy in a Relax graph and in a reduce kernel are one root cause; a
    reverse_compute_at misled by a loop_partition wrapper in a graph and a
    reindex_cache_write misled the same way in a kernel are another; transform_layout
    dropping sibling blocks in a graph is a third."""
    rc = _labelled(["seed7/37a0d211573debb9", "seed7/d3093380dd357a82", "seed11/3db8aecd980342bd",
                    "seed7/5504ffc3076f62d4", "seed11/76fff1f654668916"])
    reindex, hidden = rc["seed7/37a0d211573debb9"], rc["seed11/3db8aecd980342bd"]
    assert (reindex.step, hidden.step) == ("reindex", "reverse_compute_at"), {i: r.title() for i, r in rc.items()}
    assert reindex.key == rc["seed7/d3093380dd357a82"].key
    assert hidden.key == rc["seed7/5504ffc3076f62d4"].key
    assert len({reindex.key, hidden.key, rc["seed11/76fff1f654668916"].key}) == 3


def _bench():
    import importlib.util

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("dedup_precision", ROOT / "benchmarks" / "dedup_precision.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    records = {r["id"]: r for r in json.loads((ROOT / "benchmarks/dedup/cases.json").read_text())}
    return bench, records


#: a slice of the labelled benchmark (benchmarks/dedup/): pairs of one bug by two routes, and
#: different bugs that share a primitive (pad_einsum, blockize+cache_write) or the pass the
#: probe names (PlanAndUpdateBufferAllocationLocation: the alloc bug and read_at's region)
SLICE = ["seed7/8160bbbd0643abb9", "seed7/8720da6566d450cd",  # alloc: compute_at / reverse_compute_at
         "seed7/546758db47ed05f4",  # read_at of a padding block: unclamped region
         "seed7/ccdf60266346c221", "seed7/dace47273e820abb",  # pad_einsum: max padded with 0 / OOB
         "seed7/60c88ad6ea325989", "seed7/962fdc44be6d82cb",  # loop_partition's init, + cache_write
         "seed7/6fc025b3380a7e81", "seed7/801ce62645a2cb0f",  # blockize drops init (two siblings)
         "seed7/33fd161d8b1cfe7f"]  # cache_write after blockize: another bug


@pytest.mark.slow
def test_a_labelled_slice_keeps_different_bugs_apart_and_routes_together():
    from tests.conftest import ROOT

    bench, records = _bench()
    labels = json.loads((ROOT / "benchmarks/dedup/labels.json").read_text())["labels"]
    now = bench.rekey([records[i] for i in SLICE], 2)
    bug = {i: f"known:{now[i]['known']}" if now[i]["known"] else now[i]["rc"].key for i in SLICE}
    by_bug: dict[str, set] = {}
    for i in SLICE:
        by_bug.setdefault(bug[i], set()).add(labels[i]["bug"])
    assert all(len(b) == 1 for b in by_bug.values()), by_bug  # no false merge
    assert len(by_bug) == len({labels[i]["bug"] for i in SLICE}) == 7  # and no split
    assert now["seed7/8160bbbd0643abb9"]["rc"].evidence == "ir_shape"
    assert now["seed7/962fdc44be6d82cb"]["known"] == "loop-partition-reduction-init"
    assert now["seed7/33fd161d8b1cfe7f"]["known"] == "cache-write-of-blockized-reduction-loses-init"


@pytest.mark.slow
def test_both_reindex_cache_copies_are_one_step_and_cache_write_another():
    """reindex_cache_write and reindex_cache_read make their copy with one TVM function
    (MakeReindexCacheStage): a copy that drops a split's predicate and stores out of bounds is
    one root cause whichever side made it.  A cache_write copy over a partitioned split that
    crashes the same way is another bug and stays apart."""
    bench, records = _bench()
    ids = ["seed7/cb397ccec87e71c4", "seed7/cbd51bceb381485f", "seed7/63f86d5930dbcfc7"]
    now = bench.rekey([records[i] for i in ids], 2)
    write, read = now["seed7/cb397ccec87e71c4"]["rc"], now["seed7/cbd51bceb381485f"]["rc"]
    assert (write.step, read.step) == ("reindex_cache_write", "reindex_cache_read"), (write, read)
    assert write.symptom == read.symptom == "crash/memory"
    assert write.key == read.key
    other = now["seed7/63f86d5930dbcfc7"]["rc"]
    assert (other.step, other.symptom) == ("cache_write", "crash/memory"), other
    assert other.key != write.key


@pytest.mark.slow
def test_a_memory_crash_first_seen_as_garbage_is_the_step_that_made_the_garbage():
    """read_at of a padding block copies an unclamped region: after read_at the output is
    nan, after the cache_index that follows the kernel segfaults — the known read_at bug,
    recognized by its step.  A merge that computes garbage (another bug) before a pad_einsum
    whose stores crash is not blamed: the pad_einsum's own prefix crashes."""
    bench, records = _bench()
    read_at, pad = "seed11/6236bdd3c0b879a6", "seed11/26c22a5e6ff1a76b"
    now = bench.rekey([records[read_at], records[pad]], 2)
    assert now[read_at]["rc"].symptom == now[pad]["rc"].symptom == "crash/memory"
    assert now[read_at]["rc"].step == "read_at", now[read_at]["rc"]
    assert now[read_at]["known"] == "read-at-padding-block-unclamped-region"
    assert now[pad]["rc"].step == "pad_einsum", now[pad]["rc"]
    assert now[pad]["known"] == "pad-einsum-enlarges-shared-loop"


@pytest.mark.slow
def test_a_graph_with_two_scheduled_functions_is_probed_in_the_one_that_fails_alone():
    """A softmax + subtract graph whose minimized schedule kept a bystander vectorize of the
    subtract: the softmax schedule alone gives the same nan, so its trace is probed — a
    cache_read misled by a loop_partition wrapper, the known bug.  Asked about a failure
    neither function shows alone (a memory crash), the probe names no function and no step."""
    import dataclasses

    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.case import Case
    from fuzzharness.engine.pool import WorkerPool
    from fuzzharness.minimize import step_bisect

    bench, records = _bench()
    rid = "seed11/f5f6428f4f61edfc"
    now = bench.rekey([records[rid]], 2)
    assert now[rid]["rc"].evidence == "step_site", now[rid]["rc"]
    assert now[rid]["rc"].step == "cache_read"
    assert now[rid]["known"] == "loop-partition-empty-regions-compute-at"
    d = {k: v for k, v in records[rid]["case"].items() if k != "id"}
    case = Case.from_dict(d)
    assert len(step_bisect.one_function_cases(case)) == 2
    with WorkerPool(1, timeout=60) as pool:
        sig = signature(d, next(iter(pool.run([{"task": 0, "case": d}]))).verdict)
    assert step_bisect.the_failing_function(case, sig) is not None
    crash = dataclasses.replace(sig, symptom="crash", stage="run", kind="SIGSEGV")
    assert step_bisect.the_failing_function(case, crash) is None
    assert step_bisect.culprit_step(case, crash) == ("", (), ())


@pytest.mark.slow
def test_the_alloc_shape_is_a_mechanism_only_where_it_explains_the_failure():
    """Two cases of the labelled benchmark with a buffer planned inside a vectorized loop: one
    is right with vectorization off (the mechanism: alloc_in_vectorized_loop), the other still
    fails that way — it also re-runs a partitioned reduction's init — so its fact says the
    shape is not alone, and it is not keyed (or attached) by the mechanism."""
    from fuzzharness.buckets.root_causes import mechanism_key
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.case import Case
    from fuzzharness.execution.stages import execute
    from tests.conftest import ROOT

    records = {r["id"]: r for r in json.loads((ROOT / "benchmarks/dedup/cases.json").read_text())}
    facts = {}
    for rid in ("seed7/8160bbbd0643abb9", "seed11/f05a4de70228fdc4"):
        c = dict(records[rid]["case"])
        c.pop("id", None)
        case = Case.from_dict(c)
        v = execute(case).verdict
        facts[rid] = (tuple(v.details.get("facts") or ()), mechanism_key(signature(case.to_dict(), v)))
    assert facts["seed7/8160bbbd0643abb9"][0] == ("alloc_in_vectorized_loop",)
    assert facts["seed7/8160bbbd0643abb9"][1] is not None
    assert facts["seed11/f05a4de70228fdc4"][0] == ("alloc_in_vectorized_loop_not_alone", "reduction_init_repeated")
    assert facts["seed11/f05a4de70228fdc4"][1] is None


def test_raw_matches_pick_the_narrowest_entry_and_entries_list_their_other_symptoms():
    """Two entries raw-match a blockize + cache_write failure with a missing init: the one that
    names cache_write is the bug (its nan twin included), a blockize + cache_read one stays
    blockize's.  An entry that lists a runaway loop as its bug's other symptom knows both; a
    timeout without its primitive is not it."""
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.signatures import Signature

    known = KnownBugs.load(corpus=False)
    missing = ("reduction_init_missing",)
    for symptom in ("wrong_result", "nan_inf"):
        sig = Signature(symptom, "verify", workload="batch_matmul",
                        primitives=("blockize", "cache_write", "parallel"), facts=missing)
        assert known.match(sig, "0.27.0").id == "cache-write-of-blockized-reduction-loses-init"
    sig = Signature("wrong_result", "verify", workload="softmax", primitives=("blockize", "cache_read"),
                    facts=missing)
    assert known.match(sig, "0.27.0").id == "blockize-drops-reduction-init"
    for symptom in ("crash", "timeout"):
        sig = Signature(symptom, "run", kind="heap_damage" if symptom == "crash" else "",
                        workload="pad", primitives=("fuse", "read_at", "split"))
        assert known.match(sig, "0.27.0").id == "read-at-padding-block-unclamped-region"
    assert known.match(Signature("timeout", "run", workload="pad", primitives=("fuse", "split")),
                       "0.27.0") is None


@pytest.mark.slow
def test_a_step_before_which_the_program_cannot_run_is_no_culprit():
    """An OpenCL kernel exists only after its ``bind``: the prefix before it does not
    compile, so the first failing prefix ends with the bind whatever the bug.  Two different
    OpenCL bugs (a float literal printed with 7 digits; dlight's epilogue inlined into a
    unit reduction) would share the key "wrong output at sch.bind": the probe names no step
    there.  The float literal keeps its trigger; the dlight route has a defect the
    scheduled program shows (init_without_reduction_iterator), located at the
    transform_block_layout that made it — the key of the same defect's llvm route, which
    needs no bind (pad_einsum resetting the sum)."""
    from fuzzharness.buckets.root_causes import root_cause
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.case import Case
    from fuzzharness.execution.stages import execute
    from fuzzharness.minimize import step_bisect
    from tests.conftest import ROOT, need
    from tests.test_graphs import _opencl_images

    need(_opencl_images())
    rcs = {}
    for name in ("opencl-float-literal-7-digits", "dlight-epilogue-inlined-into-unit-reduction",
                 "transform-block-layout-keeps-init-without-reduction"):
        d = json.loads((ROOT / "fuzzharness/known_witnesses" / f"{name}.json").read_text())
        d = {k: v for k, v in d.items() if k not in ("id", "root_cause")}
        case = Case.from_dict(d)
        sig = signature(d, execute(case).verdict)
        assert sig is not None and sig.symptom == "wrong_result", name
        rcs[name] = root_cause(d, sig, "", *step_bisect.culprit_step(case, sig))
    literal, dlight, pad = rcs.values()
    assert (literal.step, literal.evidence) == ("", "trigger"), literal
    assert "bind" in dlight.primitives and "bind" not in pad.primitives
    for rc in (dlight, pad):
        assert (rc.step, rc.evidence) == ("transform_block_layout", "ir_shape"), rc
        assert rc.located == ("init_without_reduction_iterator",), rc
    assert dlight.key == pad.key != literal.key


def test_a_reduction_iterator_made_spatial_under_an_init_is_located_at_its_step():
    """init_without_reduction_iterator: transform_block_layout of a dense block with K = 1
    retypes the unit reduction iterator as spatial and keeps the init (the fact appears at
    that step, before pad_einsum makes the output wrong).  K = 2 keeps a reduction iterator,
    and neither the unscheduled program nor decompose_reduction (which moves the init out)
    has the fact."""
    from fuzzharness.buckets.known_identities import witness_case
    from fuzzharness.core.tvm_support import replay_trace
    from fuzzharness.execution.facts import located_facts
    from fuzzharness.generators.workloads import workloads
    from fuzzharness.minimize.located import located_step
    from tests.conftest import ROOT

    def dense(k):
        sch = replay_trace(workloads["dense"].prim_func(
            {"M": 1, "N": 1, "K": k, "relu": False, "dtype": "float32"}), None)
        return sch, sch.get_sblock("dense")

    for k, expected in ((1, ["init_without_reduction_iterator"]), (2, [])):
        sch, block = dense(k)
        assert located_facts(sch.mod) == []
        sch.transform_block_layout(block, lambda i, j, r: (i, j, r))
        assert located_facts(sch.mod) == expected, k
    sch, block = dense(1)
    sch.decompose_reduction(block, sch.get_loops(block)[0])
    assert located_facts(sch.mod) == []
    d = json.loads((ROOT / "fuzzharness/known_witnesses"
                    / "transform-block-layout-keeps-init-without-reduction.json").read_text())
    found = located_step(Case.from_dict(witness_case(d)))
    assert found is not None and found[1:3] == ("transform_block_layout",
                                                ("init_without_reduction_iterator",)), found


def test_a_defect_is_located_at_the_step_that_makes_it_on_real_tvm():
    """binding_outside_domain, read from the scheduled program: pad_einsum of a reduce block
    whose producer was compute_at'ed into its loop leaves the producer iterating over the
    padded extent — the fact appears after pad_einsum, not after compute_at.  A split (its
    T.where guards the padded iterations) and the unscheduled program do not have it, nor
    does a case whose bug is another (the alloc witness)."""
    from fuzzharness.buckets.known_identities import witness_case
    from fuzzharness.core.case import Case
    from fuzzharness.core.tvm_support import replay_trace
    from fuzzharness.execution.facts import located_facts
    from fuzzharness.generators.workloads import workloads
    from fuzzharness.minimize.located import located_step, located_step_isolated
    from tests.conftest import ROOT

    def witness(name):
        doc = json.loads((ROOT / "fuzzharness/known_witnesses" / f"{name}.json").read_text())
        return Case.from_dict(witness_case(doc))

    pad = witness("pad-einsum-enlarges-shared-loop")
    found = located_step(pad)
    assert found is not None and found[:3] == (2, "pad_einsum", ("binding_outside_domain",))
    assert found[3] is None  # pad_einsum is the last step: the whole trace
    assert located_step_isolated(pad)[:3] == found[:3]  # the same answer from a child process
    func = workloads[pad.workload_name].prim_func(pad.params)
    sch = replay_trace(func, None)
    assert located_facts(sch.mod) == []
    sch.split(sch.get_loops(sch.get_sblock("sum"))[-1], [None, 4])  # padded, guarded:
    assert "T.where" in sch.mod.script()
    assert located_facts(sch.mod) == []
    assert located_step(witness("alloc-in-vectorized-loop-not-widened")) is None


@pytest.mark.slow
def test_a_defect_made_before_the_first_failing_step_is_blamed_on_its_step():
    """pad_einsum of a decomposed dense pads a loop the update block shares: its out-of-domain
    iterations store into padding (that prefix passes) until transform_layout folds them onto
    row 0 (wrong output).  The culprit is pad_einsum, and the repro is the known
    pad_einsum bug, as are a crash and a nan of the same defect by other routes.  A
    reindex_cache_write copy that loses its split's predicate (the same defect, another
    primitive) and pad_einsum padding a max with 0 (another bug of pad_einsum, no defect, an
    entry of its own) stay apart."""
    bench, records = _bench()
    late, crash, nan = "seed7/e3898692b063e13b", "seed7/dace47273e820abb", "seed11/81372621b8836f8c"
    copy, pad_max = "seed7/cb397ccec87e71c4", "seed7/ccdf60266346c221"
    now = bench.rekey([records[i] for i in (late, crash, nan, copy, pad_max)], 2)
    rc = {i: n["rc"] for i, n in now.items()}
    assert rc[late].step == "pad_einsum" and "binding_outside_domain" in rc[late].step_facts, rc[late]
    assert (rc[late].symptom, rc[crash].symptom) == ("wrong_output", "crash/memory")
    assert rc[late].key == rc[crash].key == rc[nan].key
    assert {now[i]["known"] for i in (late, crash, nan)} == {"pad-einsum-enlarges-shared-loop"}
    assert rc[copy].step == "reindex_cache_write" and rc[copy].evidence == "ir_shape"
    assert len({rc[late].key, rc[copy].key, rc[pad_max].key}) == 3
    # the max padded with 0 is its own known bug (found NEW in a README campaign since)
    assert now[copy]["known"] is None and now[pad_max]["known"] == "pad-einsum-pads-max-with-zero"


def reindex_copy_outside_domain(sch):
    """batch_matmul (README campaign, bucket 8483dbb9, minimized): C's layout flattened, a
    cache_write copy split by 7 (5 x 7 over 32 elements: guarded by a T.where), then
    reindex_cache_read of that copy — whose new block runs over all 35 positions with no
    T.where, reading and writing past the end of its buffers."""
    c = sch.get_sblock("C")
    sch.transform_layout(c, ("write", 0), lambda b, i, j: (b, i * 4 + j))
    copy = sch.cache_write(c, 0, "global")
    sch.split(sch.get_loops(copy)[1], [None, 7])
    sch.reindex_cache_read(sch.get_sblock("C_global"), 0, "local", lambda a, b: (b, a))


@pytest.mark.slow
def test_a_located_defect_makes_the_schedule_the_culprit_not_the_pass_a_probe_implicates(tmp_path):
    """The pass probe finds this output right with tirx.LowerTVMBuiltin disabled (the README
    campaign's title blamed it), but the scheduled program is already wrong: disabling a pass
    only moves where the out-of-domain stores land.  The repro names the schedule: the title
    says which step left which defect, the hints say why no pass is blamed, no fix test runs,
    and no "IR given to <pass>" is shown.  (The other side, a pass named when no defect is
    located: test_a_culprit_is_named_only_when_a_fix_test_confirms_it.)"""
    params = {"K": 3, "M": 8, "N": 4, "batch": 1, "dtype": "float32",
              "transpose_a": False, "transpose_b": False}
    case = scheduled("batch_matmul", params, reindex_copy_outside_domain)
    _, outcome = repro_of(case, tmp_path / "copy", triage=True)
    finding = json.loads((outcome.dir / "finding.json").read_text())
    t = outcome.triage
    assert outcome.reproduced and t.culprit_step == "reindex_cache_read", t
    assert t.located == ["binding_outside_domain"], t
    assert t.implicated, t  # the probe did implicate a pass: the case this guards against
    assert finding["culprit"] == "schedule" and finding["root_cause_fields"]["culprit"] == "schedule"
    assert not any("fix test" in n for n in outcome.record["notes"]), outcome.record["notes"]
    assert finding["title"].startswith("[Bug] [TIR][Schedule] sch.reindex_cache_read leaves a "
                                       "block running outside its domain"), finding["title"]
    assert t.implicated[0].rsplit(".", 1)[-1] not in finding["title"], finding["title"]
    issue = (outcome.dir / "issue.md").read_text()
    assert "the scheduled program is already wrong: after `sch.reindex_cache_read`" in issue
    assert f"`{t.implicated[0]}` disabled, which only moves" in issue
    assert "IR given to" not in issue


#: camp16 (seed 17) bucket 746e6258, minimized: pad_einsum of a cache_read block compute_at'ed
#: under pool2d's pad loop that also carries a software pipeline (two annotate instructions)
PIPELINED_PAD_EINSUM = {
    "format": 1, "inputs": {"distribution": "small_ints", "seed": 79564}, "oracle": {"mode": "exact"},
    "pass_config": {"tirx.UnrollLoop": {"auto_max_step": 16}}, "target": {"kind": "llvm"},
    "schedule": {"source": "random", "trace": [[
        ["GetSBlock", [], ["pad", "main"], ["b0"]], ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4"]],
        ["CacheRead", ["b0", []], [0, "local"], ["b9"]], ["ComputeAt", ["b9", "l3"], [0, -1], []],
        ["Annotate", ["l3", [0, 1]], ["software_pipeline_stage"], []],
        ["Annotate", ["l3", [1, 0]], ["software_pipeline_order"], []],
        ["GetSBlock", [], ["I_local", "main"], ["b10"]], ["PadEinsum", ["b10"], [[4, 1, 1, 4]], []]], []]},
    "workload": {"name": "pool2d", "params": {
        "C": 1, "H": 1, "KH": 1, "KW": 1, "N": 2, "W": 15, "count_include_pad": True,
        "dtype": "float16", "kind": "avg", "layout": "NHWC", "pad": 1, "stride": 3}}}


@pytest.mark.slow
def test_a_located_step_is_compared_by_instructions_not_primitives():
    """The located step (the 5th schedule instruction: the pipeline is two annotations) and
    the first failing one (the last, pad_einsum) are one step: the campaign that found this
    case compared 5 with a primitive count of 4 and kept the step_site key, a second root
    cause for the known pad_einsum bug."""
    from fuzzharness.buckets.root_causes import root_cause
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.case import Case
    from fuzzharness.engine.pool import WorkerPool
    from fuzzharness.minimize import step_bisect

    case = Case.from_dict(PIPELINED_PAD_EINSUM)
    with WorkerPool(1, timeout=120) as pool:
        v = next(iter(pool.run([{"task": 0, "case": case.to_dict()}]))).verdict
    sig = signature(case.to_dict(), v)
    assert sig is not None and sig.symptom == "crash", v.line()
    step, facts, site = step_bisect.culprit_step(case, sig)
    assert step == "pad_einsum" and "binding_outside_domain" in facts, (step, facts)
    rc = root_cause(case.to_dict(), sig, "", step, facts, site)
    assert rc.evidence == "ir_shape" and rc.located == ("binding_outside_domain",)


@pytest.mark.slow
def test_a_device_kernels_failure_gets_its_culprit_step_in_a_repro(tmp_path):
    """The pass probe runs kernels on the CPU, so a device kernel's run-stage failure is not
    pass-probed; its culprit step still is (the step probe runs the prefixes on the device),
    as ``known check`` does for a witness.  Without the step, a campaign keyed an argmax
    route of the cross-thread write-back bug by its primitive set (split, reorder, fuse,
    bind — the plainest GPU schedule there is) and reported it new while the entry's witness
    knew the bug by its step.  The other side: an OpenCL codegen bug whose first failing
    prefix is only the bind that makes a kernel exist is named by no step, and stays apart."""
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.known_identities import witness_case
    from fuzzharness.buckets.root_causes import RootCause
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.core.tvm_support import versions
    from fuzzharness.execution.stages import execute
    from fuzzharness.repro.package import write_repro
    from tests.conftest import ROOT, need
    from tests.test_graphs import _opencl_images

    need(_opencl_images())
    known = KnownBugs.load()
    found = {}
    for name in ("cross-thread-reduction-writeback-drops-predicate-argmax-route",
                 "opencl-float-literal-7-digits"):
        doc = json.loads((ROOT / "fuzzharness/known_witnesses" / f"{name}.json").read_text())
        case = Case.from_dict(witness_case(doc))
        verdict = execute(case).verdict
        sig = signature(case.to_dict(), verdict)
        outcome = write_repro(tmp_path / name, case, verdict, bucket=sig.key, signature=sig,
                              versions=versions(), triage=True)
        assert outcome.reproduced, outcome.problem
        issue = (outcome.dir / "issue.md").read_text()
        assert "lowering passes: not probed (the pass probe runs kernels on the CPU" in issue
        found[name] = (verdict, outcome.root_cause, known.classify(sig, None, outcome.root_cause))
    (v, rc, m) = found["cross-thread-reduction-writeback-drops-predicate-argmax-route"]
    assert (v.stage.value, v.details.get("kind")) == ("run", "out_of_bounds"), v.line()
    assert (rc.step, rc.evidence) == ("bind", "step_site") and "site_reduction" in rc.step_site, rc
    witness = json.loads((ROOT / "fuzzharness/known_witnesses"
                          / "cross-thread-reduction-writeback-drops-predicate.json").read_text())
    assert witness["workload"]["name"] == "matmul_texture" and witness["target"]["device"] == "adreno"
    assert rc.key == RootCause.from_dict(witness["root_cause"]).key  # matmul_texture's, on Adreno
    assert m is not None and m.bug.id == "cross-thread-reduction-writeback-drops-predicate"
    (v2, rc2, m2) = found["opencl-float-literal-7-digits"]
    assert v2.stage.value == "verify" and (rc2.step, rc2.evidence) == ("", "trigger"), rc2
    assert rc2.key != rc.key and (m2 is None or m2.bug.id != m.bug.id)


def test_a_block_reading_what_its_regions_omit_is_located_at_cache_index():
    """read_undeclared_buffer: cache_index rewrites conv to load through index buffers and
    keeps conv's old read regions; the fact appears at cache_index.  The unscheduled conv2d,
    and decompose_reduction + cache_read (regions kept right), do not have it."""
    from fuzzharness.core.tvm_support import replay_trace
    from fuzzharness.execution.facts import located_facts
    from fuzzharness.generators.workloads import workloads

    def conv():
        sch = replay_trace(workloads["conv2d"].prim_func(
            {"N": 1, "H": 4, "W": 4, "C": 2, "KH": 3, "KW": 3, "stride": 1, "pad": 1,
             "dilation": 1, "F": 2, "dtype": "float32", "layout": "NCHW"}), None)
        return sch, sch.get_sblock("conv")

    sch, block = conv()
    assert located_facts(sch.mod) == []
    sch.cache_index(block, "global")
    assert located_facts(sch.mod) == ["read_undeclared_buffer"]
    sch, block = conv()
    sch.decompose_reduction(block, sch.get_loops(block)[0])
    sch.cache_read(sch.get_sblock("conv_update"), 1, "local")
    assert located_facts(sch.mod) == []


def test_a_defect_the_unscheduled_program_has_is_no_steps():
    """The step probe locates a defect at the first step whose program has it — never at a
    step when the program had it before any step (a frontend's, say): a plugin workload
    whose block declares fewer reads than it loads, then one split, is located nowhere."""
    from fuzzharness.core.tvm_support import replay_trace, trace_to_json
    from fuzzharness.execution.facts import located_facts
    from fuzzharness.generators.workloads import workloads
    from fuzzharness.minimize.located import located_step

    base = workloads["elementwise"]
    undeclared = type("Undeclared", (type(base),), {"name": "undeclared_read", "source": lambda self, p: (
        "@T.prim_func(s_tir=True)\n"
        "def main(A: T.Buffer((8,), \"float32\"), B: T.Buffer((8,), \"float32\"), "
        "C: T.Buffer((8,), \"float32\")):\n"
        "    for i in range(8):\n"
        "        with T.sblock(\"C\"):\n"
        "            vi = T.axis.remap(\"S\", [i])\n"
        "            T.reads(A[vi])\n"
        "            T.writes(C[vi])\n"
        "            C[vi] = A[vi] + B[vi]\n")})()
    workloads.add("undeclared_read", undeclared)
    try:
        func = undeclared.prim_func({})
        assert located_facts(replay_trace(func, None).mod) == ["read_undeclared_buffer"]
        sch = replay_trace(func, None)
        sch.split(sch.get_loops(sch.get_sblock("C"))[0], [None, 4])
        case = Case(workload={"name": "undeclared_read", "params": {}},
                    inputs={"distribution": "ones", "seed": 0},
                    schedule={"source": "test", "trace": trace_to_json(sch.trace)},
                    oracle={"mode": "exact"}, origin={"dtype": "float32"})
        assert located_step(case) is None
    finally:
        workloads.remove("undeclared_read")


@pytest.mark.slow
def test_cache_index_routes_are_one_root_cause_whatever_the_symptom():
    """Garbage indices (cache_index's stale regions, a write-back misplaced after the reader)
    give a wrong output or a SIGSEGV depending on the memory read: the known entry's two
    witnesses (conv2d: wrong output; with a parallel loop: SIGSEGV) and the dedup
    benchmark's pool2d route (cache_index, merge, cache_write) have one root-cause key,
    located at cache_index.  The other side: the benchmark's read_at + cache_index repro (a
    read_at bug; cache_index is a bystander) keeps its own key.  The verdicts come from
    worker processes (the benchmark's rekey): a SIGSEGV must not take the test with it."""
    from fuzzharness.buckets.known_identities import witness_case
    from tests.conftest import ROOT

    bench, records = _bench()
    routes = {n: {"id": n, "case": witness_case(json.loads(
        (ROOT / "fuzzharness/known_witnesses" / f"{n}.json").read_text()))}
        for n in ("cache-index-keeps-stale-read-regions",)}
    routes["pool2d"] = records["seed7/2ef895d3627c5761"]
    routes["read_at"] = records["seed11/6236bdd3c0b879a6"]
    now = bench.rekey(list(routes.values()), 2)  # the campaign's verdict, step probe and key
    keys = {n: now[r["id"]]["rc"] for n, r in routes.items()}
    names = list(routes)
    for name in names[:2]:  # a wrong output, nan or a SIGSEGV: it varies run to run
        assert (keys[name].step, keys[name].located) == ("cache_index", ("read_undeclared_buffer",)), name
    assert len({keys[n].key for n in names[:2]}) == 1, {n: now[r["id"]]["line"] for n, r in routes.items()}
    assert keys["read_at"].step == "read_at" and keys["read_at"].key != keys["pool2d"].key
