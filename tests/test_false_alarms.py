"""Zero false alarms: thousands of legal reassociations of fp16/bf16 reductions all pass.

Random *legal and correct* schedules — splits of reduction loops (non-divisible factors
included), arbitrary permutations of all loops, rfactor at a random loop and factor axis,
decompose_reduction — of the reductions where low-precision accumulation makes reassociation
visible: matmul with K up to 1024, conv2d with 7×7×C windows, row sums.  Each scheduled
kernel runs on inputs from every float distribution and is judged by the workload's float64
reference and error bound.  The test fails on any ratio > 1 (a false alarm of the oracle —
or, should one ever appear, a TVM miscompilation, which would then be analysed and named
here), and it also checks that the schedules really reassociate (many outputs differ bitwise
from the unscheduled build): a test that never changes the rounding proves nothing.

Speed (it runs in the normal suite): the kernels of one parameter set are compiled together
as one module (one LLVM JIT), at LLVM ``opt-level`` 0 for most batches and the default level
for every eighth.  The optimisation level cannot change the evaluation order — TVM emits no
fast-math flags, so LLVM may not reassociate — and the generic CPU has no FMA, so
``llvm.fmuladd`` is never fused at either level.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from fuzzharness.backends.llvm import codegen_tir, lower_tir
from fuzzharness.generators.inputs import make_inputs
from fuzzharness.generators.workloads import workloads
from fuzzharness.oracles.compare import judge
from fuzzharness.oracles.program import Numerics
from fuzzharness.testing.schedules import REDUCTION_BLOCK, reassociating_schedule

DISTRIBUTIONS = ("uniform", "normal", "cancellation", "wide_range")
SCHEDULES_PER_SET = 25
TARGET_SCHEDULES = 2000

pytestmark = pytest.mark.differential


def param_sets(rng: random.Random) -> list[tuple[str, dict]]:
    """Small shapes with long reductions, fp16 and bf16 (and fp16 inputs, fp32 accumulators
    stored to fp16).  bf16 keeps k·u < 1 (k ≤ 200 of u = 2^-8)."""
    sets = []
    for _ in range(TARGET_SCHEDULES // SCHEDULES_PER_SET):
        family = rng.choice(["matmul", "matmul", "conv2d", "conv2d", "row_sum"])
        dtype = rng.choice(["float16", "float16", "bfloat16", "float16-acc32-out16"])
        if family == "row_sum" and dtype == "float16-acc32-out16":
            dtype = "float16"
        bf16 = dtype == "bfloat16"
        if family == "matmul":
            k = rng.choice([7, 61, 127, 200]) if bf16 else rng.choice([31, 97, 256, 509, 1021, 1024])
            sets.append((family, {"M": rng.randint(1, 4), "N": rng.randint(1, 3), "K": k, "dtype": dtype}))
        elif family == "row_sum":
            n = rng.choice([13, 100, 199]) if bf16 else rng.choice([63, 257, 1000, 1024])
            sets.append((family, {"M": rng.randint(1, 4), "N": n, "dtype": dtype}))
        else:
            c = rng.choice([1, 2]) if bf16 else rng.choice([1, 3, 4, 8])
            layout = rng.choice(["NHWC", "NCHW"])
            h = rng.choice([7, 8, 9])
            sets.append((family, {"N": 1, "H": h, "W": rng.choice([7, 9]), "C": c, "KH": 7, "KW": 7,
                                  "stride": rng.choice([1, 2]), "pad": rng.choice([0, 3]),
                                  "dilation": 1, "stem": False, "F": rng.randint(1, 2),
                                  "layout": layout, "dtype": dtype}))
    return sets




def random_schedule(func, block_name: str, rng: random.Random):
    """A legal reassociating schedule's PrimFunc (raises ScheduleError when TVM refuses)."""
    return reassociating_schedule(func, block_name, rng).mod["main"]


def compile_batch(funcs, opt_default: bool):
    import tvm

    mod = tvm.IRModule({f"f{i}": f.with_attr("global_symbol", f"f{i}") for i, f in enumerate(funcs)})
    target = {"kind": "llvm"} if opt_default else {"kind": "llvm", "opt-level": 0}
    rt = codegen_tir(lower_tir(mod, target, {}))
    return [rt[f"f{i}"] for i in range(len(funcs))]


def run(kernel, specs, out_specs, inputs):
    import tvm

    from fuzzharness.oracles.numerics import numpy_dtype

    args = [tvm.runtime.tensor(inputs[s.name].copy()) for s in specs]
    outs = [tvm.runtime.tensor(np.full(o.shape, np.nan, dtype=numpy_dtype(o.dtype))) for o in out_specs]
    kernel(*args, *outs)
    return {o.name: t.numpy() for o, t in zip(out_specs, outs, strict=True)}


@pytest.mark.slow
def test_no_false_alarm_over_2000_legal_reassociations():
    from tvm.s_tir.schedule.schedule import ScheduleError

    rng = random.Random(20261121)
    judged = reassociated = 0
    worst = (0.0, "")
    failures: list[str] = []
    for set_index, (name, params) in enumerate(param_sets(rng)):
        wl = workloads[name]
        func = wl.prim_func(params)
        specs, out_specs = wl.inputs(params), wl.outputs(params)
        numerics = Numerics(func)
        funcs, tries = [], 0
        while len(funcs) < SCHEDULES_PER_SET and tries < 4 * SCHEDULES_PER_SET:
            tries += 1
            try:
                funcs.append(random_schedule(func, REDUCTION_BLOCK[name], rng))
            except ScheduleError:
                continue
        kernels = compile_batch([func, *funcs], opt_default=set_index % 8 == 0)
        per_dist = {}
        for d_index, dist in enumerate(DISTRIBUTIONS):
            inputs = make_inputs(specs, dist, seed=set_index * 10 + d_index)
            per_dist[dist] = (inputs, wl.reference(params, inputs, numerics),
                              run(kernels[0], specs, out_specs, inputs))
        for i, kernel in enumerate(kernels[1:]):
            dist = DISTRIBUTIONS[i % len(DISTRIBUTIONS)]
            inputs, expected, unscheduled = per_dist[dist]
            outputs = run(kernel, specs, out_specs, inputs)
            j = judge(expected, outputs)
            judged += 1
            assert j.status.value in ("pass", "wrong_result", "nan_inf"), j
            if j.status.value != "pass":
                failures.append(f"{name} {params} {dist} schedule #{i}: {j.message}\n"
                                f"{funcs[i].script()}")
            if j.ratio > worst[0]:
                worst = (j.ratio, f"{name} {params['dtype']} {dist}")
            if any(not np.array_equal(outputs[k].view(np.uint8), unscheduled[k].view(np.uint8))
                   for k in outputs):
                reassociated += 1
    print(f"\n{judged} schedules judged, {reassociated} bitwise different from the unscheduled "
          f"build, worst error/bound {worst[0]:.3g} ({worst[1]})")
    assert judged >= TARGET_SCHEDULES
    assert not failures, f"{len(failures)} false alarm(s); first:\n{failures[0]}"
    # the schedules must actually change the rounding, or the test proves nothing
    assert reassociated >= judged // 4, (reassociated, judged)
    # and the bound must not be vacuous: correct kernels use a visible part of it
    assert worst[0] > 0.01


@pytest.mark.parametrize("name", sorted(REDUCTION_BLOCK))
def test_schedule_drawer_reassociates(name):
    """The drawer produces rfactor and reduction-loop permutations, not only spatial moves."""
    from tvm.s_tir.schedule.schedule import ScheduleError

    from fuzzharness.oracles.order import accumulation_order

    rng = random.Random(5)
    params = next(p for n, p in param_sets(random.Random(1)) if n == name)
    func = workloads[name].prim_func(params)
    reasons = []
    for _ in range(60):
        try:
            reasons.append(accumulation_order(func, random_schedule(func, REDUCTION_BLOCK[name], rng)).reason)
        except ScheduleError:
            pass
    assert any("computes something else" in r for r in reasons)  # rfactor
    assert any("another order" in r for r in reasons)  # reduction loops permuted
