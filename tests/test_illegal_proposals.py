"""Proposing the illegal: compute_at / reverse_compute_at between blocks with no dataflow
(``generators/schedules/compute_location.py``, WILD_PERCENT of the proposals), rfactor of
any loop of a reduction block (``generators/schedules/reduction.py``,
RFACTOR_WILD_PERCENT).

Both sides, with the real TVM: a move TVM refuses with a ScheduleError is a rejected step and
never a finding; a move TVM accepts although it breaks a dependence is compiled, run and
judged like any schedule — the finding "TVM accepts an illegal schedule" (here TVM 0.27's
reverse_compute_at of the matmul under the loop of its consumer's consumer, found by a
campaign with these proposals: seed 5, case 811, minimized).
"""

from __future__ import annotations

import pytest

import fuzzharness.generators.schedules.compute_location as location
import fuzzharness.generators.schedules.reduction as reduction
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status
from fuzzharness.engine.pool import WorkerPool
from fuzzharness.execution.stages import execute
from fuzzharness.generators.cases import GenSettings, generate_case
from fuzzharness.generators.workloads import workloads

EPILOGUE = {"K": 1, "M": 1, "N": 1, "dtype": "float32",
            "steps": [{"arg": None, "op": "relu"}, {"arg": "bias", "op": "max"},
                      {"arg": "scale", "op": "mul"}]}


#: the campaign's minimized case, as stored (its id fixes the second run's inputs)
ACCEPTED_ILLEGAL = {
    "format": 1, "inputs": {"distribution": "ones", "seed": 0}, "oracle": {"mode": "exact"},
    "pass_config": {}, "target": {"kind": "llvm"},
    "schedule": {"source": "random", "trace": [[
        ["GetSBlock", [], ["C", "main"], ["b0"]], ["GetSBlock", [], ["max_1", "main"], ["b1"]],
        ["GetLoops", ["b1"], [], ["l2", "l3"]], ["ReverseComputeAt", ["b0", "l2"], [0, -1], []]],
        []]},
    "workload": {"name": "fused_epilogue", "params": EPILOGUE}}


def test_an_illegal_move_tvm_accepts_is_judged_and_fails():
    from tvm import s_tir

    case = Case.from_dict(ACCEPTED_ILLEGAL)
    # the move: C's result is read by relu_0, which stays *before* max_1's loop — TVM accepts
    sch = s_tir.Schedule(workloads["fused_epilogue"].prim_func(EPILOGUE))
    sch.reverse_compute_at(sch.get_sblock("C"), sch.get_loops(sch.get_sblock("max_1"))[0],
                           preserve_unit_loops=False)
    text = sch.mod["main"].script()
    assert text.index('T.sblock("relu_0")') < text.index('T.sblock("C")')
    # in a worker with heap hygiene, as a campaign runs it: the accumulator relu_0 reads is
    # uninitialized (0xFE garbage), which the second run's float inputs show
    with WorkerPool(1, timeout=120) as pool:
        v = next(iter(pool.run([{"task": 0, "case": case.to_dict()}]))).verdict
    assert v.status in (Status.WRONG_RESULT, Status.NAN_INF), v.line()


def _steps(wild_percent, monkeypatch, n=300):
    monkeypatch.setattr(location, "WILD_PERCENT", wild_percent)
    gen = GenSettings(workloads=("fused_epilogue",), dtypes=("float32",),
                      primitives=("compute_at", "reverse_compute_at"), max_steps=8)
    out = []
    for i in range(n):
        case = generate_case(3, i, gen)
        out += [(case, s) for s in case.origin.get("steps", [])
                if s["primitive"] in ("compute_at", "reverse_compute_at")]
    return out


@pytest.mark.slow
def test_illegal_moves_tvm_refuses_are_rejected_steps_not_findings(monkeypatch):
    wild = _steps(100, monkeypatch)
    refused = [(c, s) for c, s in wild if s["outcome"] == "rejected"]
    assert refused, "every proposal drawn among all block pairs: TVM must refuse some"
    for case, _ in refused[:5]:
        v = execute(case).verdict
        assert not v.status.is_finding, v.line()
    tame = _steps(0, monkeypatch)
    assert len([s for _, s in tame if s["outcome"] == "rejected"]) < len(refused)


def _rfactor_steps(wild_percent, monkeypatch, n=400):
    monkeypatch.setattr(reduction, "RFACTOR_WILD_PERCENT", wild_percent)
    gen = GenSettings(workloads=("matmul", "row_sum"), dtypes=("float32",),
                      primitives=("rfactor", "add_unit_loop"), max_steps=4)
    out = []
    for i in range(n):
        case = generate_case(5, i, gen)
        out += [(case, s) for s in case.origin.get("steps", []) if s["primitive"] == "rfactor"]
    return out


@pytest.mark.slow
def test_rfactor_of_a_data_parallel_loop_is_refused_and_not_a_finding(monkeypatch):
    """Drawn among every loop of the block, rfactor meets loops a data-parallel iterator is
    bound to: TVM refuses them (a rejected step, never a finding); drawn among the reduction
    loops only, it is refused less often."""
    wild = _rfactor_steps(100, monkeypatch)
    refused = [(c, s) for c, s in wild if s["outcome"] == "rejected"]
    assert any("data parallel" in s.get("error", "") for _, s in refused), refused
    assert refused, [s for _, s in wild]
    for case, _ in refused[:3]:
        v = execute(case).verdict
        assert not v.status.is_finding, v.line()
    tame = _rfactor_steps(0, monkeypatch)
    assert len([s for _, s in tame if s["outcome"] == "rejected"]) < len(refused)


def _illegal_steps(percent, monkeypatch, primitive, workloads_, n=150):
    import fuzzharness.generators.schedules.base as base

    monkeypatch.setattr(base, "ILLEGAL_PERCENT", percent)
    gen = GenSettings(workloads=workloads_, dtypes=("float32",), primitives=(primitive,),
                      max_steps=3, metaschedule_fraction=0.0)
    out = []
    for i in range(n):
        case = generate_case(9, i, gen)
        out += [(case, s) for s in case.origin.get("steps", []) if s["primitive"] == primitive]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("primitive, refusal", [
    ("parallel", "data parallel"),  # a reduction loop in parallel: a race
    ("reverse_compute_inline", ""),  # an output block, a reduction, two producers
    ("compute_inline", ""),
])
def test_illegal_proposals_tvm_refuses_are_recorded_and_not_findings(monkeypatch, primitive, refusal):
    """With every proposal illegal (base.ILLEGAL_PERCENT = 100), TVM refuses some — rejected
    steps marked ``illegal``, never findings; with none (0), no step is marked and fewer are
    refused."""
    wild = _illegal_steps(100, monkeypatch, primitive, ("row_sum", "softmax", "fused_epilogue"))
    refused = [(c, s) for c, s in wild if s["outcome"] == "rejected"]
    assert refused and all(s.get("illegal") for _, s in wild if s["outcome"] != "no_site")
    if refusal:
        assert any(refusal in s.get("error", "") for _, s in refused), refused[:3]
    for case, _ in refused[:3]:
        v = execute(case).verdict
        assert not v.status.is_finding, v.line()
    tame = _illegal_steps(0, monkeypatch, primitive, ("row_sum", "softmax", "fused_epilogue"))
    assert not any(s.get("illegal") for _, s in tame)
    assert len([s for _, s in tame if s["outcome"] == "rejected"]) < len(refused)
