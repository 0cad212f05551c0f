"""The end-to-end loop on llvm: correct programs pass, wrong programs fail."""

import numpy as np
import pytest

import fuzzharness.testing.wrong_programs  # noqa: F401  (registers the wrong programs)
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Stage, Status
from fuzzharness.execution.stages import execute

SPLIT_REORDER = None  # filled lazily: a real trace from TVM


def case(workload, params, *, distribution="uniform", seed=1, trace=None, oracle="bound"):
    return Case(workload={"name": workload, "params": params},
                inputs={"distribution": distribution, "seed": seed},
                schedule={"source": "test", "trace": trace}, oracle={"mode": oracle})


def split_reorder_trace(workload, params):
    """A legal schedule: split the reduction loop and move its outer part outermost."""
    from tvm import s_tir

    from fuzzharness.core.tvm_support import trace_to_json
    from fuzzharness.generators.workloads import workloads

    func = workloads[workload].prim_func(params)
    sch = s_tir.Schedule(func)
    block = sch.get_sblock(sch.mod["main"].body.block.body.block.name_hint
                           if False else ("C" if workload == "matmul" else "B"))
    loops = sch.get_loops(block)
    ko, ki = sch.split(loops[-1], factors=[None, 4])
    sch.reorder(ko, *loops[:-1], ki)
    return trace_to_json(sch.trace)


MATMUL = {"M": 16, "N": 12, "K": 37}
ROWSUM = {"M": 9, "N": 301}


@pytest.mark.parametrize("dtype", ["float32", "float16", "float16-acc32"])
@pytest.mark.parametrize("workload, params", [("matmul", MATMUL), ("row_sum", ROWSUM)])
def test_scheduled_programs_pass(workload, params, dtype):
    p = dict(params, dtype=dtype)
    out = execute(case(workload, p, trace=split_reorder_trace(workload, p)))
    v = out.verdict
    assert v.status is Status.PASS, v.line()
    assert v.stage is Stage.DONE
    assert 0 <= v.ratio <= 1
    assert set(v.timings) >= {"generate", "schedule", "lower", "codegen", "build", "run", "verify"}
    assert v.digest and v.worst_index is not None
    # the reference saw exactly the rounded inputs the kernel saw
    name = next(iter(out.outputs))
    assert out.outputs[name].dtype == np.dtype("float16" if dtype == "float16" else "float32")


def test_exact_integer_mode_is_bitwise():
    p = dict(MATMUL, dtype="float16")
    v = execute(case("matmul", p, distribution="small_ints", oracle="exact",
                     trace=split_reorder_trace("matmul", p))).verdict
    assert v.status is Status.PASS and v.ratio == 0.0


@pytest.mark.parametrize("wrong", ["test_matmul_drops_term", "test_matmul_off_by_one"])
@pytest.mark.parametrize("dtype", ["float32", "float16-acc32"])
def test_wrong_programs_fail(wrong, dtype):
    v = execute(case(wrong, dict(MATMUL, dtype=dtype))).verdict
    assert v.status is Status.WRONG_RESULT, v.line()
    assert v.ratio > 1
    assert v.worst_output == "C"
    if wrong == "test_matmul_off_by_one":
        assert v.worst_index[1] == MATMUL["N"] - 1


def test_wrong_program_fails_in_exact_mode_too():
    v = execute(case("test_matmul_drops_term", dict(MATMUL, dtype="float16"),
                     distribution="small_ints", oracle="exact")).verdict
    assert v.status is Status.WRONG_RESULT and v.ratio == float("inf")


def test_rejected_trace_is_schedule_rejected_not_a_finding():
    # vectorize on a reduction loop: TVM refuses with a ScheduleError
    trace = [[["GetSBlock", [], ["C", "main"], ["b0"]],
              ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
              ["Vectorize", ["l3"], [], []]], []]
    v = execute(case("matmul", dict(MATMUL, dtype="float32"), trace=trace)).verdict
    assert v.status is Status.SCHEDULE_REJECTED and v.stage is Stage.SCHEDULE
    assert not v.is_finding


def test_a_pipeline_annotation_that_did_not_fit_when_written_is_our_request_not_a_finding():
    """A minimizer that drops the cache_read + compute_at a software pipeline was built on
    leaves a 2-stage annotation over a one-block loop: TVM's refusal of it is our own invalid
    request (``schedule_rejected``), not a bug (campaign seed 13's minimized reduce_epilogue
    repro, a "false" InjectSoftwarePipeline bug).  An annotation that fit when written and a
    later step made stale stays TVM's bug: the known witness still fails to compile."""
    import json

    from tests.conftest import ROOT

    stale_when_written = [[["GetSBlock", [], ["mul_1", "main"], ["b0"]],
                           ["GetLoops", ["b0"], [], ["l1"]],
                           ["Annotate", ["l1", [0, 1]], ["software_pipeline_stage"], []],
                           ["Annotate", ["l1", [0, 1]], ["software_pipeline_order"], []]], []]
    params = {"M": 1, "N": 1, "dtype": "float32", "op": "min",
              "steps": [{"arg": "bias", "op": "add"}, {"arg": "scale", "op": "mul"}]}
    v = execute(case("reduce_epilogue", params, distribution="ones", trace=stale_when_written,
                     oracle="exact")).verdict
    assert v.status is Status.SCHEDULE_REJECTED and not v.is_finding, v.line()
    assert v.details["rejection_kind"] == "pipeline_annotation_mismatch"
    witness = json.loads((ROOT / "fuzzharness/known_witnesses/"
                          "software-pipeline-stage-count-after-cache-read.json").read_text())
    witness = {k: x for k, x in witness.items() if k not in ("id", "root_cause")}
    v = execute(Case.from_dict(witness)).verdict
    assert v.status is Status.COMPILE_ERROR and v.stage is Stage.LOWER, v.line()
    assert "pipeline_stages.size() == original_order.size()" in v.message


def test_a_graph_function_whose_pipeline_annotation_did_not_fit_is_our_request_too():
    """The same check on a graph's scheduled function (a labelled layer_norm graph whose
    merge bug computes nan): with a 2-stage annotation written over a one-statement loop
    instead, the case is ``schedule_rejected``; as labelled, it is still the finding."""
    import json

    from tests.conftest import ROOT

    records = {r["id"]: r for r in json.loads((ROOT / "benchmarks/dedup/cases.json").read_text())}
    d = {k: v for k, v in records["seed7/5a28e0a25ccfe2d6"]["case"].items() if k != "id"}
    assert execute(Case.from_dict(d)).verdict.is_finding
    entry = d["schedule"]["functions"]["layer_norm"]
    insts = entry["trace"][0][:2] + [["Annotate", ["l2", [0, 1]], ["software_pipeline_stage"], []]]
    d["schedule"]["functions"]["layer_norm"] = dict(entry, trace=[insts, []])
    v = execute(Case.from_dict(d)).verdict
    assert v.status is Status.SCHEDULE_REJECTED, v.line()
    assert v.details["rejection_kind"] == "pipeline_annotation_mismatch"


def test_harness_bug_is_a_harness_error():
    v = execute(case("matmul", dict(MATMUL, dtype="float32"), distribution="no_such_dist")).verdict
    assert v.status is Status.HARNESS_ERROR and v.stage is Stage.GENERATE
    assert not v.is_finding


def test_public_execute_stays_callable_after_the_execution_modules_load():
    """``fuzzharness.execute`` is the public function, called any number of times — it was
    once shadowed by a module of the same name after its first call (issue 14)."""
    import subprocess
    import sys

    code = ("import fuzzharness\n"
            "case = fuzzharness.generate_case(3, 0)\n"
            "first = fuzzharness.execute(case).verdict\n"
            "second = fuzzharness.execute(case).verdict\n"
            "assert callable(fuzzharness.execute)\n"
            "assert first.status == second.status and first.digest == second.digest\n"
            "print(second.status)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
