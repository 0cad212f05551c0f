"""Fixed rtol/atol pairs versus the error-bound oracle: false alarms and misses on the same cases.

Correct cases (every failure is a false alarm): the reductions under legal, correct,
reassociating random schedules (``fuzzharness.testing.schedules.reassociating_schedule``: reduction splits,
permutations, rfactor, decompose_reduction) and every other workload unscheduled, across the
float dtypes and distributions.  Wrong cases (every pass is a miss): the simulated
miscompilations of fuzzharness/testing/wrong_programs.py (a dropped reduction term, an off-by-one
output column, an fp32 accumulator rounded to fp16 every step) under the same kinds of
schedules, in the float and exact-integer modes; plus, on correct outputs, one element
replaced by the result with one reduction term lost ("lost term" injection).

Each case is judged three ways: ``np.isclose(actual, reference, rtol, atol)`` (nan where nan)
for (1e-3, 1e-3) and (1e-2, 1e-2) — the reference being the float64 value — and the harness's
oracle (bound, exact mode, order-aware baseline).  ``inconclusive`` verdicts of the oracle are
counted apart (neither pass nor fail).

    python benchmarks/oracle_comparison.py [--sets 40] [--seed 1]
"""

from __future__ import annotations

import argparse
import collections
import random
import time

import numpy as np

import fuzzharness.testing.wrong_programs  # noqa: F401  (registers the wrong programs)
from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import trace_to_json
from fuzzharness.execution.stages import execute
from fuzzharness.generators import draw as draws
from fuzzharness.generators.workloads import GenOptions, workloads
from fuzzharness.testing.schedules import REDUCTION_BLOCK, reassociating_schedule

FLOAT = ("uniform", "normal", "cancellation", "wide_range")
PAIRS = ((1e-3, 1e-3), (1e-2, 1e-2))
FAMILIES = ("matmul", "conv2d", "row_sum")
OTHERS = ("batch_matmul", "dense", "depthwise_conv2d", "pool2d", "reduce", "softmax",
          "layer_norm", "elementwise", "fused_epilogue")
LABELS = ("float16", "bfloat16", "float32", "float16-acc32", "float16-acc32-out16")


def allclose(actual: dict, expected: dict, rtol: float, atol: float) -> bool:
    for name, e in expected.items():
        a = np.asarray(actual[name]).astype(np.float64)
        if not np.isclose(a, e.value, rtol=rtol, atol=atol, equal_nan=True).all():
            return False
    return True


def schedules(name: str, params: dict, rng: random.Random, n: int) -> list:
    from tvm.s_tir.schedule.schedule import ScheduleError

    func = workloads[name].prim_func(params)
    out = [None]
    for _ in range(4 * n):
        if len(out) > n:
            break
        try:
            out.append(trace_to_json(reassociating_schedule(func, REDUCTION_BLOCK[name], rng).trace))
        except ScheduleError:
            pass
    return out


def draw_params(name: str, label: str, index: int, max_reduction: int) -> dict | None:
    wl = workloads[name]
    if label not in wl.dtype_labels:
        return None
    data = draws.for_case(77, index, purpose=f"oracle-comparison:{name}:{label}")
    return wl.draw_params(data, GenOptions(dtypes=(label,), max_reduction=max_reduction))


class Tally:
    def __init__(self):
        self.counts = collections.Counter()

    def add(self, kind: str, correct: bool, verdict_status: str, outcome, label: str = "") -> None:
        self.counts[(kind, "cases")] += 1
        for rtol, atol in PAIRS:
            ok = allclose(outcome.outputs, outcome.expected, rtol, atol)
            key = f"rtol={rtol:g}/atol={atol:g}"
            if correct and not ok:
                self.counts[(kind, key)] += 1
            if not correct and ok:
                self.counts[(kind, key)] += 1
        failed = verdict_status in ("wrong_result", "nan_inf", "order_preserving_divergence",
                                    "reference_mismatch")
        if verdict_status == "inconclusive":
            self.counts[(kind, "inconclusive")] += 1
        elif correct and failed:
            self.counts[(kind, "error bound")] += 1
        elif not correct and not failed:
            self.counts[(kind, "error bound")] += 1
            self.counts[("bound misses by dtype", label)] += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", type=int, default=40, help="parameter sets per group")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    tally = Tally()
    t0 = time.perf_counter()
    unexpected = []

    # -- correct: reassociating schedules of the reductions --------------------------------
    for i in range(args.sets):
        name = FAMILIES[i % len(FAMILIES)]
        label = LABELS[i % len(LABELS)]
        p = draw_params(name, label, i, 1024)
        if p is None:
            continue
        for j, trace in enumerate(schedules(name, p, rng, 4)):
            dist = FLOAT[(i + j) % len(FLOAT)]
            out = execute(Case(workload={"name": name, "params": p},
                               inputs={"distribution": dist, "seed": i * 10 + j},
                               schedule={"source": "bench", "trace": trace}))
            if out.outputs is None:
                continue
            if out.verdict.status.value not in ("pass", "inconclusive"):
                unexpected.append(out.verdict.line())
            tally.add("correct: reassociated reductions", True, out.verdict.status.value, out)

    # -- correct: every other workload, unscheduled ----------------------------------------
    for i in range(args.sets * 2):
        name = OTHERS[i % len(OTHERS)]
        label = LABELS[(i // len(OTHERS)) % len(LABELS)]
        p = draw_params(name, label, i, 512)
        if p is None:
            continue
        out = execute(Case(workload={"name": name, "params": p},
                           inputs={"distribution": FLOAT[i % 4], "seed": i}))
        if out.outputs is None:
            continue
        if out.verdict.status.value not in ("pass", "inconclusive"):
            unexpected.append(out.verdict.line())
        tally.add("correct: other workloads", True, out.verdict.status.value, out)

    # -- wrong: simulated miscompilations ------------------------------------------------------
    wrongs = ("test_matmul_drops_term", "test_matmul_off_by_one", "test_matmul_rounds_accumulator")
    for i in range(args.sets * 2):
        wrong = wrongs[i % 3]
        label = "float16-acc32" if wrong == "test_matmul_rounds_accumulator" else LABELS[i % len(LABELS)]
        p = draw_params("matmul", label, 1000 + i, 1024)
        # with N = 1 the off-by-one column is column 0 itself, with K = 1 nothing is left:
        # those programs are not wrong
        p["N"], p["K"] = max(p["N"], 2), max(p["K"], 2)
        exact = wrong != "test_matmul_rounds_accumulator" and i % 4 == 3
        trace = schedules("matmul", p, rng, 1)[-1] if i % 2 else None
        out = execute(Case(workload={"name": wrong, "params": p},
                           inputs={"distribution": "small_ints" if exact else FLOAT[i % 4], "seed": i},
                           schedule={"source": "bench", "trace": trace},
                           oracle={"mode": "exact" if exact else "bound"}))
        if out.outputs is None:
            continue
        kind = wrong.replace("test_matmul_", "wrong: ") + (" (exact mode)" if exact else "")
        tally.add(kind, False, out.verdict.status.value, out, label)

    # -- wrong: one element with one lost reduction term -------------------------------------
    for i in range(args.sets * 2):
        label = LABELS[i % len(LABELS)]
        p = draw_params("matmul", label, 2000 + i, 1024)
        trace = schedules("matmul", p, rng, 1)[-1]
        out = execute(Case(workload={"name": "matmul", "params": p},
                           inputs={"distribution": FLOAT[i % 4], "seed": i},
                           schedule={"source": "bench", "trace": trace}))
        if out.outputs is None or out.verdict.status.value != "pass":
            continue
        a, b = out.inputs["A"].astype(np.float64), out.inputs["B"].astype(np.float64)
        r, c, k = i % p["M"], (3 * i) % p["N"], (7 * i) % p["K"]
        c_out = out.outputs["C"].copy()
        c_out[r, c] = np.asarray(c_out[r, c].astype(np.float64) - a[r, k] * b[k, c]).astype(c_out.dtype)
        from fuzzharness.oracles.compare import judge

        j = judge(out.expected, {"C": c_out})
        if c_out[r, c] == out.outputs["C"][r, c]:
            continue  # the lost term vanished in the output rounding: not a wrong output
        out.outputs = {"C": c_out}
        tally.add("wrong: lost term injected", False, j.status.value, out, label)

    dt = time.perf_counter() - t0
    kinds = sorted({k for k, _ in tally.counts if k != "bound misses by dtype"})
    cols = [f"rtol={r:g}/atol={a:g}" for r, a in PAIRS] + ["error bound", "inconclusive"]
    print(f"{'cases':<44}{'n':>6}" + "".join(f"{c:>22}" for c in cols))
    for k in kinds:
        what = "false alarms" if k.startswith("correct") else "misses"
        print(f"{k + ' (' + what + ')':<44}{tally.counts[(k, 'cases')]:>6}"
              + "".join(f"{tally.counts[(k, c)]:>22}" for c in cols))
    for side in ("correct", "wrong"):
        n = sum(tally.counts[(k, "cases")] for k in kinds if k.startswith(side))
        print(f"{'TOTAL ' + side:<44}{n:>6}" + "".join(
            f"{sum(tally.counts[(k, c)] for k in kinds if k.startswith(side)):>22}" for c in cols))
    misses = {lb: n for (k, lb), n in tally.counts.items() if k == "bound misses by dtype"}
    print("error-bound misses by dtype label:", ", ".join(f"{k} {v}" for k, v in sorted(misses.items())))
    print(f"\n{dt:.0f} s; unexpected verdicts on correct cases: {len(unexpected)}")
    for line in unexpected[:10]:
        print("  ", line)


if __name__ == "__main__":
    main()
