"""The minimizer: trace edits and ddmin on a synthetic interestingness predicate, Hypothesis'
shrinker on real generated cases, and a real TVM 0.27 miscompile minimized end to end."""

from __future__ import annotations

import json

import pytest

from fuzzharness.buckets.signatures import Signature, signature
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Stage, Status, Verdict
from fuzzharness.minimize import trace_edit
from fuzzharness.minimize.ddmin import ddmin, split
from fuzzharness.minimize.predicate import SameBug


# -- trace edits (plain data) ---------------------------------------------------------------------
def synthetic_trace():
    """A trace-shaped list: two blocks, loops, a split whose loops feed later steps."""
    insts = [
        ["GetSBlock", [], ["B", "main"], ["b0"]],  # 0
        ["GetLoops", ["b0"], [], ["l1", "l2"]],  # 1
        ["SamplePerfectTile", ["l1"], [2, 64], ["v3", "v4"]],  # 2
        ["Split", ["l1", "v3", "v4"], [1, 0], ["l5", "l6"]],  # 3
        ["Annotate", ["l5", 16], ["pragma_auto_unroll_max_step"], []],  # 4
        ["Parallel", ["l5"], [], []],  # 5
        ["GetSBlock", [], ["C", "main"], ["b7"]],  # 6
        ["GetLoops", ["b7"], [], ["l8"]],  # 7
        ["Vectorize", ["l8"], [], []],  # 8
        ["Reorder", ["l6", "l2"], [], []],  # 9
    ]
    return [insts, [[2, [4, 8]]]]


def defined_before_use(trace) -> bool:
    defined: set[str] = set()
    for inst in trace_edit.instructions(trace):
        names = {s for s in json.dumps(inst[1]).replace('"', " ").replace(",", " ")
                 .replace("[", " ").replace("]", " ").split() if s[:1] in "blv" and s[1:].isdigit()}
        if not names <= defined:
            return False
        defined.update(trace_edit.outputs(inst))
    return True


def test_removing_an_instruction_removes_everything_that_uses_its_outputs():
    t = synthetic_trace()
    # the split defines l5/l6: the annotate, parallel and reorder that use them go with it
    new = trace_edit.remove(t, [3])
    assert trace_edit.kinds(new) == ["GetSBlock", "GetLoops", "SamplePerfectTile", "GetSBlock",
                                     "GetLoops", "Vectorize"]
    assert defined_before_use(new)
    # the sampling decision keeps following its instruction
    assert trace_edit.decisions(new) == [[2, [4, 8]]]
    assert trace_edit.decisions(trace_edit.remove(t, [0])) == []
    # the input is not modified
    assert t == synthetic_trace()


def test_dead_lookups_are_dropped_like_trace_simplified():
    t = trace_edit.remove(synthetic_trace(), [8])  # the vectorize was the only user of b7/l8
    t = trace_edit.drop_dead_lookups(t)
    assert "Vectorize" not in trace_edit.kinds(t)
    assert trace_edit.kinds(t).count("GetSBlock") == 1 and trace_edit.kinds(t).count("GetLoops") == 1
    assert defined_before_use(t)


def test_dead_lookups_match_tvm_trace_simplified():
    """On a real trace: our plain-data DCE leaves what TVM's Trace.simplified leaves."""
    from tvm import s_tir

    from fuzzharness.core.tvm_support import replay_trace, trace_to_json
    from fuzzharness.generators.workloads import workloads

    func = workloads["matmul"].prim_func({"M": 8, "N": 8, "K": 8, "dtype": "float32"})
    sch = s_tir.Schedule(func)
    b = sch.get_sblock("C")
    i, j, k = sch.get_loops(b)
    sch.get_loops(sch.get_sblock("C"))  # unused lookups
    sch.get_child_blocks(i)
    sch.split(j, [None, 4])
    ours = trace_edit.drop_dead_lookups(trace_to_json(sch.trace))
    theirs = trace_to_json(sch.trace.simplified(remove_postproc=False))
    assert trace_edit.kinds(ours) == trace_edit.kinds(theirs)
    assert trace_to_json(replay_trace(func, ours).trace) == theirs


# -- ddmin on a synthetic predicate -------------------------------------------------------------
def test_split_makes_n_nonempty_nearly_equal_chunks():
    assert split(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert split([1], 4) == [[1]]


def test_ddmin_finds_the_one_minimal_trace_for_a_synthetic_predicate():
    """Interesting: the trace still parallelizes the split's outer loop and vectorizes C.
    The minimum keeps exactly the instructions those two need (with their definitions)."""
    calls = []

    def interesting(t) -> bool:
        kinds = trace_edit.kinds(t)
        return "Parallel" in kinds and "Vectorize" in kinds

    def first(cands):
        calls.append(len(cands))
        return next((c for c in cands if interesting(c)), None)

    def remove(t, chunk):
        new = trace_edit.drop_dead_lookups(trace_edit.remove(t, chunk))
        return None if new == t else new

    result = ddmin(synthetic_trace(), lambda t: range(trace_edit.length(t)), remove, first)
    assert trace_edit.kinds(result) == ["GetSBlock", "GetLoops", "SamplePerfectTile", "Split",
                                        "Parallel", "GetSBlock", "GetLoops", "Vectorize"]
    assert defined_before_use(result) and interesting(result)
    # 1-minimal: no single remaining instruction can go
    for i in range(trace_edit.length(result)):
        smaller = remove(result, [i])
        assert smaller is None or not interesting(smaller)
    assert calls  # rounds handed their candidates over in batches


def test_ddmin_ends_with_the_single_unit_round_so_the_result_is_1_minimal():
    """Interesting: every even unit is still there.  Each chunk of two or more units holds an
    even one, so only removing single units makes progress: ddmin must end with the round
    that tries every unit alone, or the odd units stay."""
    def interesting(state) -> bool:
        return all(u in state for u in range(0, 12, 2))

    def first(cands):
        return next((c for c in cands if interesting(c)), None)

    def remove(state, chunk):
        return [u for u in state if u not in chunk]

    result = ddmin(list(range(12)), lambda s: s, remove, first)
    assert result == [0, 2, 4, 6, 8, 10]
    for u in result:  # 1-minimal, checked by brute force
        assert not interesting(remove(result, [u]))
    # the other side: a predicate a big chunk satisfies is reached without single removals
    assert ddmin(list(range(12)), lambda s: s, remove,
                 lambda cands: next((c for c in cands if 3 in c), None)) == [3]


def test_trace_minimization_removes_steps_that_only_go_together():
    """An annotate and its unannotate: without the annotate the unannotate fails (no
    candidate), without the unannotate the annotation hides the bug.  ddmin alone keeps both
    (1-minimal); the pair round removes them together.  The other side: a pair the bug needs
    stays, and so does a single step it needs."""
    from fuzzharness.minimize.passes import ddmin_trace

    insts = [
        ["GetSBlock", [], ["B", "main"], ["b0"]],  # 0
        ["GetLoops", ["b0"], [], ["l1", "l2"]],  # 1
        ["Annotate", ["l1", 1], ["pragma_hide"], []],  # 2
        ["LoopPartition", ["l2"], [], ["l3", "l4"]],  # 3
        ["Unannotate", ["l1"], ["pragma_hide"], []],  # 4
        ["Parallel", ["l1"], [], []],  # 5
    ]

    def replays(t) -> bool:  # an unannotate of an annotation that is not there fails
        kinds = trace_edit.kinds(t)
        return "Unannotate" not in kinds or "Annotate" in kinds

    def put(_, t):
        return t if replays(t) else None

    def run(interesting):
        first = lambda cands: next((c for c in cands if interesting(c)), None)  # noqa: E731
        ddmin_only = ddmin([insts, []], lambda t: range(trace_edit.length(t)),
                           lambda t, chunk: put(t, trace_edit.drop_dead_lookups(trace_edit.remove(t, chunk))),
                           first)
        return trace_edit.kinds(ddmin_only), trace_edit.kinds(ddmin_trace([insts, []], lambda t: t, put, first, lambda: False))

    def bug(t) -> bool:  # the partition, without the hiding annotation left on
        kinds = trace_edit.kinds(t)
        return "LoopPartition" in kinds and not ("Annotate" in kinds and "Unannotate" not in kinds)

    alone, paired = run(bug)
    assert "Annotate" in alone and "Unannotate" in alone  # what ddmin alone leaves
    assert paired == ["GetSBlock", "GetLoops", "LoopPartition"]
    # a bug that needs the parallel and the partition keeps both, and nothing else
    _, paired = run(lambda t: bug(t) and "Parallel" in trace_edit.kinds(t))
    assert paired == ["GetSBlock", "GetLoops", "LoopPartition", "Parallel"]
    # a bug that needs the annotation pair keeps it
    _, paired = run(lambda t: bug(t) and "Unannotate" in trace_edit.kinds(t))
    assert paired == ["GetSBlock", "GetLoops", "Annotate", "LoopPartition", "Unannotate"]


def test_ddmin_stops_when_told():
    result = ddmin(synthetic_trace(), lambda t: range(trace_edit.length(t)),
                   lambda t, c: trace_edit.remove(t, c), lambda cands: cands[0],
                   should_stop=lambda: True)
    assert result == synthetic_trace()


# -- the predicate --------------------------------------------------------------------------------
def sig(**kw) -> Signature:
    base = dict(symptom="wrong_result", stage="verify", workload="row_sum", dtype="float16",
                primitives=("loop_partition", "parallel", "split"))
    base.update(kw)
    return Signature(**base)


def test_same_bug_allows_fewer_primitives_and_another_dtype_for_textless_failures():
    same = SameBug(sig())
    assert same.matches(sig(primitives=("loop_partition",)))
    assert same.matches(sig(dtype="float32", primitives=("loop_partition",)))
    assert not same.matches(sig(primitives=("loop_partition", "vectorize")))  # a new primitive
    assert not same.matches(sig(workload="matmul"))
    assert not same.matches(sig(facts=("loop_mixes_spatial_and_reduction",)))
    assert same.matches(sig(symptom="nan_inf"))  # one symptom class: a nan is a wrong value
    assert not same.matches(sig(symptom="crash", kind="SIGSEGV"))
    assert not SameBug(sig(), strict=True).matches(sig(primitives=("loop_partition",)))


def test_same_bug_keeps_the_stage():
    """The same symptom and message at another stage is another bug (a check failing while
    lowering is not the one failing in code generation; a crash of the compiler is not one of
    the generated code): the bucket key holds the stage, and so does the predicate."""
    lowering = Signature("compile_error", "lower", detail="InternalError: Check failed: x",
                         site="a.cc:f")
    codegen = Signature("compile_error", "codegen", detail=lowering.detail, site=lowering.site)
    assert lowering.key != codegen.key
    assert not SameBug(lowering).matches(codegen)
    run_crash = sig(symptom="crash", kind="SIGSEGV", stage="run")
    build_crash = sig(symptom="crash", kind="SIGSEGV", stage="build")
    assert run_crash.key != build_crash.key
    assert not SameBug(run_crash).matches(build_crash)
    assert SameBug(run_crash).matches(sig(symptom="crash", kind="SIGSEGV", stage="run",
                                          primitives=("split",)))
    # except where the stage is noise: glibc aborts on a corrupted heap at the next allocation
    abort = sig(symptom="crash", kind="SIGABRT", stage="verify")
    assert SameBug(abort).matches(sig(symptom="crash", kind="SIGABRT", stage="baseline"))
    assert not SameBug(abort).matches(sig(symptom="crash", kind="SIGABRT", stage="lower"))


def test_same_bug_with_error_text_is_key_equality():
    t = Signature("compile_error", "lower", detail="InternalError: Check failed: lanes > N",
                  site="vector_expr.cc:tvm::Ramp", workload="matmul", primitives=("vectorize",))
    same = SameBug(t)
    assert same.matches(Signature("compile_error", "lower", detail=t.detail, site=t.site,
                                  workload="row_sum", dtype="float32"))
    assert not same.matches(Signature("compile_error", "lower", detail="InternalError: other",
                                      site=t.site))
    v = Verdict(Status.SCHEDULE_REJECTED, Stage.SCHEDULE, "ScheduleError: no")
    assert not same(None, v)  # never a non-finding


# -- Hypothesis' shrinker on real generated cases -------------------------------------------------
@pytest.mark.slow
def test_hypothesis_shrinks_the_choice_sequence_of_a_generated_case():
    """Interesting (synthetic, no TVM build): a matmul case whose schedule splits a loop.
    Hypothesis shrinks its choices; the result still generates such a case, from fewer or
    simpler choices, and regenerates identically from the shrunk choices."""
    import time

    from fuzzharness.generators.cases import GenSettings, generate_case
    from fuzzharness.minimize.hypothesis_shrink import draw, shrink_choices

    settings = GenSettings(workloads=("matmul", "row_sum"), primitives=("split", "reorder", "fuse"),
                           metaschedule_fraction=0.0)
    found = None
    for index in range(40):
        case = generate_case(11, index, settings)
        if case.workload_name == "matmul" and "Split" in trace_edit.kinds(case.trace):
            found = case
            break
    assert found is not None
    verdict = Verdict(Status.WRONG_RESULT, Stage.VERIFY)  # stands in for a real run

    def interesting(case_dict, v) -> bool:
        return bool(case_dict) and case_dict["workload"]["name"] == "matmul" and \
            "Split" in trace_edit.kinds(case_dict["schedule"]["trace"])

    r = shrink_choices(found.origin["choices"], settings, evaluate=lambda c: verdict,
                       interesting=interesting, deadline=time.monotonic() + 20)
    assert r is not None and r.improved and r.case is not None
    assert interesting(r.case.to_dict(), verdict)
    assert r.choices != found.origin["choices"]  # improved: a simpler choice sequence
    assert len(r.choices) <= len(found.origin["choices"])
    again, _, _ = draw(r.choices, settings)
    assert again is not None and again.id == r.case.id
    assert trace_edit.length(r.case.trace) <= trace_edit.length(found.trace)


def test_a_crash_while_drawing_shrinks_and_never_kills_the_minimizer(monkeypatch):
    """A TVM abort inside a schedule primitive (played by ``os.abort`` in ``reorder``: TVM's
    own aborts are not reachable on purpose) kills the forked child that draws each
    candidate, never this process: the draws it made are replayed, the death is the
    candidate's verdict (as a worker's death is), and the choices shrink.  Both sides: the
    same choices without the abort generate a case; capturing the failing call of a
    crashing draw says why there is no script instead of dying."""
    import os
    import time

    from tvm import s_tir

    from fuzzharness.generators import draw as draws
    from fuzzharness.generators.cases import GenSettings, generate_case
    from fuzzharness.kinds.tir.generation_failure import capture_isolated
    from fuzzharness.minimize.hypothesis_shrink import draw_events, drawn_values, shrink_choices
    from fuzzharness.repro.kit import NotReproducible

    settings = GenSettings(workloads=("matmul",), primitives=("split", "reorder", "fuse"),
                           metaschedule_fraction=0.0, option_fraction=0.0)
    found = next(c for c in (generate_case(5, i, settings) for i in range(60))
                 if "Reorder" in trace_edit.kinds(c.trace) and trace_edit.length(c.trace) >= 3)
    choices = found.origin["choices"]
    died, events = draw_events(draws.from_choices(choices), settings)
    assert died is None and drawn_values(events) == choices  # TVM as it is: the draw lives

    def aborting_reorder(self, *loops):
        os.abort()

    monkeypatch.setattr(s_tir.Schedule, "reorder", aborting_reorder)

    def crash(case_dict, v) -> bool:
        return v.status is Status.CRASH and v.details.get("signal") == "SIGABRT"

    r = shrink_choices(choices, settings, evaluate=lambda c: None, interesting=crash,
                       deadline=time.monotonic() + 60)
    assert r is not None and r.case is None and crash(None, r.verdict), r
    assert r.verdict.stage is Stage.GENERATE and "killed by SIGABRT" in r.verdict.message
    assert len(r.choices) <= len(choices)
    died, events = draw_events(draws.from_choices(r.choices), settings)
    assert died is not None and died.returncode == -6 and events  # still the crash
    with pytest.raises(NotReproducible, match="kills the process"):
        capture_isolated(r.choices, settings)


# -- a real TVM 0.27 miscompile, minimized end to end ------------------------------------------------
def loop_partition_case() -> Case:
    """row_sum with loop_partition of its reduction loop plus bystanders (split, unroll
    annotation, parallel, unroll): TVM 0.27 re-runs the init in every partition."""
    from tvm import s_tir

    from fuzzharness.core.tvm_support import trace_to_json
    from fuzzharness.generators.workloads import workloads

    params = {"M": 6, "N": 20, "dtype": "float16"}
    sch = s_tir.Schedule(workloads["row_sum"].prim_func(params))
    i, _ = sch.get_loops(sch.get_sblock("B"))
    io, _ = sch.split(i, [None, 2])
    sch.annotate(io, "pragma_auto_unroll_max_step", 16)
    loops = sch.get_loops(sch.get_sblock("B"))
    sch.loop_partition(loops[2], [3, 5, None])
    sch.parallel(loops[0])
    sch.unroll(sch.get_loops(sch.get_sblock("B_j1"))[-1])
    return Case(workload={"name": "row_sum", "params": params},
                inputs={"distribution": "uniform", "seed": 7},
                schedule={"source": "test", "trace": trace_to_json(sch.trace)},
                target={"kind": "llvm", "mcpu": "x86-64-v2"},
                pass_config={"tirx.disable_cse_tir": True}, origin={"dtype": "float16"})


@pytest.fixture(scope="module")
def minimized_loop_partition():
    from fuzzharness.execution.stages import execute
    from fuzzharness.minimize.minimizer import minimize

    case = loop_partition_case()
    verdict = execute(case).verdict
    assert verdict.status is Status.WRONG_RESULT, verdict.line()
    target = signature(case.to_dict(), verdict)
    return case, verdict, target, minimize(case, verdict, target, budget=60, workers=2)


@pytest.mark.slow
def test_real_miscompile_minimizes_to_a_third_and_stays_the_same_bug(minimized_loop_partition):
    case, _, target, m = minimized_loop_partition
    assert m.reproduced and m.case is not None
    assert m.original_length == trace_edit.length(case.trace) == 11
    assert m.length * 3 <= m.original_length, m.phases
    assert SameBug(target).matches(m.signature)
    assert m.signature.primitives == ("loop_partition",)
    # simplified everything else too: smallest shape, all-ones exact inputs, no options
    assert m.case.params["M"] == 1 and m.case.params["N"] <= 3
    assert m.case.inputs["distribution"] == "ones" and m.case.oracle["mode"] == "exact"
    assert m.case.target == {"kind": "llvm"} and m.case.pass_config == {}
    assert m.verdict.status is Status.WRONG_RESULT
    assert m.case.origin["minimized_from"] == case.id
    # every pass is a named object with counters, in its order; the ones that simplified
    # this case say so, and the last round changed nothing (each pass ran once more)
    by_name = {p["name"]: p for p in m.passes}
    assert [p["name"] for p in m.passes][:3] == ["options", "target", "trace"] and "params" in by_name
    assert by_name["target"]["runs"] == 0  # an llvm case has no CPU-target candidate
    assert all(p["improved"] <= p["calls"] and p["runs"] >= 0 for p in m.passes)
    assert by_name["trace"]["improved"] >= 1 and by_name["params"]["improved"] >= 1
    assert by_name["options"]["improved"] >= 1  # the case had options; the repro has none
    assert all(p["calls"] > p["improved"] for p in m.passes)  # a last round of no change
    assert sum(p["runs"] for p in m.passes) <= m.runs
    assert "trace " in m.phases[-1] and "runs," in m.phases[-1], m.phases


def test_a_known_bug_sharing_a_primitive_does_not_mask_another_miscompile(minimized_loop_partition):
    """An entry for a bug triggered by ``parallel`` (like the packaged merge entries, one
    primitive) matches the raw loop_partition miscompile, whose trace also parallelizes: only
    *probably* known.  Minimized, the case no longer parallelizes: it is not that bug, it is
    the loop_partition one (an entry whose trigger it is)."""
    from fuzzharness.buckets.known_bugs import KnownBugs
    from fuzzharness.buckets.root_causes import root_cause

    case, _, target, m = minimized_loop_partition
    assert "parallel" in target.primitives
    known = KnownBugs.from_doc({"bug": [
        {"id": "parallel-bug", "title": "p", "match": {"symptom": "wrong_result", "primitives": ["parallel"]}},
        {"id": "partition-bug", "title": "lp", "match": {"symptom": "wrong_result", "primitives": ["loop_partition"]},
         "trigger": {"primitives": ["loop_partition"]}},
    ]})
    raw = known.classify(target)
    assert raw is not None and raw.bug.id == "parallel-bug" and not raw.confirmed
    rc = root_cause(m.case.to_dict(), m.signature)
    assert rc.primitives == ("loop_partition",)
    confirmed = known.classify(m.signature, None, rc)
    assert confirmed is not None and confirmed.confirmed and confirmed.bug.id == "partition-bug"
    only_parallel = KnownBugs.from_doc({"bug": [
        {"id": "parallel-bug", "title": "p", "match": {"symptom": "wrong_result", "primitives": ["parallel"]}}]})
    assert only_parallel.classify(m.signature, None, rc) is None  # new, not masked


def test_a_gpu_case_whose_bug_is_not_the_gpus_own_moves_to_the_cpu():
    """The CPU-target candidate of a GPU case: llvm, its binds dropped (and the lookups only
    they used).  dlight's epilogue inlined into a unit reduction (the scheduled program is
    wrong) is the same bug there; a float literal OpenCL prints with 7 digits (OpenCL's
    codegen) passes there, so that candidate is refused.  A CPU case, or a GPU case without
    a trace, has none."""
    import json

    from fuzzharness.buckets.known_identities import witness_case
    from fuzzharness.buckets.signatures import Signature
    from fuzzharness.core.traces import primitive_sequence
    from fuzzharness.execution.stages import execute
    from fuzzharness.minimize.passes import propose_cpu_target
    from fuzzharness.minimize.predicate import SameBug
    from tests.conftest import ROOT

    def witness(name):
        doc = json.loads((ROOT / "fuzzharness/known_witnesses" / f"{name}.json").read_text())
        return Case.from_dict(witness_case(doc))

    outcomes = {}
    for name in ("dlight-epilogue-inlined-into-unit-reduction", "opencl-float-literal-7-digits"):
        gpu = witness(name)
        (cpu,) = propose_cpu_target(gpu)
        kinds = [inst[0] for inst in cpu.trace[0]]
        assert cpu.target == {"kind": "llvm"} and "Bind" not in kinds, kinds
        assert "Bind" in [inst[0] for inst in gpu.trace[0]]
        assert cpu.workload == gpu.workload and cpu.inputs == gpu.inputs
        # the bucket the GPU case failed in (a wrong result at verify: both witnesses)
        target = Signature("wrong_result", "verify", workload=gpu.workload_name,
                           dtype=gpu.origin.get("dtype", ""),
                           primitives=primitive_sequence(gpu.trace))
        v = execute(cpu).verdict
        outcomes[name] = (v.status.value, SameBug(target)(cpu.to_dict(), v), cpu, gpu)
    assert outcomes["dlight-epilogue-inlined-into-unit-reduction"][:2] == ("wrong_result", True)
    assert outcomes["opencl-float-literal-7-digits"][:2] == ("pass", False)
    assert propose_cpu_target(outcomes["dlight-epilogue-inlined-into-unit-reduction"][2]) == []
    no_trace = outcomes["opencl-float-literal-7-digits"][3].replace(schedule={"source": "none"})
    assert propose_cpu_target(no_trace) == []


def test_smaller_params_stay_inside_what_the_workload_can_draw():
    """A texture matmul's N and K are multiples of 4 (its texture pixels): shrinking K to 1
    once gave a 'repro' of a program that cannot be drawn, with empty inputs.  Other
    parameters still shrink, and an unconstrained workload's K does shrink to 1."""
    from fuzzharness.minimize.passes import propose_params

    texture = Case.from_dict({"workload": {"name": "matmul_texture", "params": {
        "M": 3, "N": 8, "K": 8, "dtype": "float32", "scope_A": "global.texture",
        "scope_B": "global"}}, "inputs": {"distribution": "normal", "seed": 1},
        "schedule": {"trace": None}, "target": {"kind": "opencl", "device": "adreno"}})
    proposed = [c.params for c in propose_params(texture)]
    assert proposed and all(p["K"] % 4 == 0 and p["N"] % 4 == 0 for p in proposed)
    assert {"K": 4} .items() <= next(p for p in proposed if p["K"] != 8).items()
    assert any(p["M"] < 3 for p in proposed)
    plain = Case.from_dict({"workload": {"name": "matmul", "params": {
        "M": 3, "N": 8, "K": 8, "dtype": "float32"}}, "inputs": {"distribution": "normal",
        "seed": 1}, "schedule": {"trace": None}, "target": {"kind": "llvm"}})
    assert any(c.params["K"] == 1 for c in propose_params(plain))


def test_smaller_params_keep_every_tensor_and_window_drawable():
    """A 30-minute campaign minimized a pool2d (H 18, KH 4) to H 3: an empty output, which
    TVM built and ran into a crash, and a 'repro' no script could be written for.  Shrinking
    stops where a tensor would lose its last element, and where a workload's own draw
    constraints end (a window of padding alone, a layer-norm row of one element); what the
    workloads draw is never refused."""
    from fuzzharness.generators import draw as draws
    from fuzzharness.generators.workloads import GenOptions, workloads
    from fuzzharness.minimize.passes import propose_params

    def case(name, **params):
        return Case.from_dict({"workload": {"name": name, "params": params},
                               "inputs": {"distribution": "normal", "seed": 1},
                               "schedule": {"trace": None}, "target": {"kind": "llvm"}})

    pool = case("pool2d", C=1, H=5, KH=4, KW=3, N=1, W=17, count_include_pad=False,
                dtype="float32", kind="max", layout="NHWC", pad=1, stride=1)
    proposed = [c.params for c in propose_params(pool)]
    assert proposed and all(p["H"] + 2 * p["pad"] >= p["KH"] for p in proposed)
    assert all(p["pad"] < min(p["KH"], p["KW"]) for p in proposed)
    assert any(p["H"] == 2 for p in proposed)  # still shrinks as far as the window allows
    assert workloads["pool2d"].params_problem({**pool.params, "H": 3, "pad": 0})
    conv = case("conv2d", N=1, H=6, W=6, C=2, F=2, KH=3, KW=3, stride=1, pad=2, dilation=1,
                stem=False, layout="NHWC", dtype="float32")
    assert all(p["pad"] <= (min(p["KH"], p["KW"]) - 1) * p["dilation"]
               for p in (c.params for c in propose_params(conv)))
    norm = case("layer_norm", B=1, M=2, N=3, dtype="float32")
    assert {c.params["N"] for c in propose_params(norm)} == {2, 3}  # 3: M shrinks instead
    drawn = 0
    for name in workloads.names():
        for i in range(25):
            params = workloads[name].draw_params(draws.for_case(0, i, "params"), GenOptions())
            assert workloads[name].params_problem(params) is None, (name, params)
            drawn += 1
    assert drawn >= 250


@pytest.mark.slow
def test_a_campaign_minimizes_a_bucket_whose_schedule_draw_kills_the_process(tmp_path):
    """End to end, real processes: workers die drawing a schedule (the bucket: a crash at
    ``generate``, no case stored); the lane that minimizes it draws in forked children, so it
    shrinks the choices and records why there is no script — it is never "the minimizing
    process died"."""
    import os
    import re
    import sqlite3

    from fuzzharness.generators.cases import GenSettings, generate_case
    from tests.conftest import ROOT, run_cli

    gen = GenSettings(workloads=("matmul",), primitives=("split", "reorder"))
    seed = next(s for s in range(100)  # the first whose 6 cases reorder (then abort) at least twice
                if sum("Reorder" in trace_edit.kinds(generate_case(s, i, gen).trace)
                       for i in range(6)) >= 2)
    env = dict(os.environ, FUZZHARNESS_PLUGINS="tests.plugins.aborting_schedule",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = tmp_path / "run"
    r = run_cli("run", "--seed", seed, "--max-cases", 6, "--workers", 2, "--target", "llvm",
                "--workloads", "matmul", "--primitives", "split,reorder", "--timeout", 60,
                "--no-progress", "--out", out, "--minimize-budget", 90, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    con = sqlite3.connect(out / "results.sqlite")
    crashes = con.execute("SELECT count(*) FROM results WHERE status = 'crash' AND stage = "
                          "'generate' AND bucket IS NOT NULL").fetchone()[0]
    rows = con.execute("SELECT r.notes FROM repros r "
                       "JOIN buckets b ON b.key = r.bucket WHERE b.stage = 'generate'").fetchall()
    con.close()
    assert crashes > 0 and len(rows) == 1, (crashes, rows)
    notes = rows[0][0]
    assert "kills the process (killed by SIGABRT)" in notes, notes
    assert "process died" not in notes
    log = "".join(p.read_text(errors="replace") for p in (out / "logs").glob("lane-*.log"))
    assert re.search(r"hypothesis: \d+ → \d+ choices in \d+ calls", log), log[-2000:]

