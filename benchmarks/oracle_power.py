"""Oracle power: which share of injected faults does the harness's verdict catch?

Faults (``fuzzharness/testing/injected_faults.py``) are real kernels compiled by TVM from a program
that differs from the declared one in one known way — one dropped reduction term, the
accumulator rounded to fp16 at every step, the layer-norm variance divided by N − 1 or its
eps dropped, one exponential missing from a softmax denominator, average pooling divided by
k + 1 or its window shifted by one row, the accumulator initialised to 1 — in the dtypes
float16, bfloat16, float16-acc32 (fp16 inputs, fp32 accumulation) and float32, with
reduction lengths K = 64, 256, 1024 (matmul K, layer-norm and softmax row length N,
pooling window KH×KW = 8×8, 16×16, 32×32).

Every case goes through :func:`fuzzharness.execution.stages.execute` — the harness's real verdict
path, default baseline policy — and counts as caught when the verdict is a finding about the
kernel (``wrong_result``, ``nan_inf``; ``order_preserving_divergence`` is counted in its own
column, since it is not a failure of the case).  The cases mimic what the generator draws:
a quarter of them (where the workload offers it) and every case whose reduction is too long
for its accumulator's error model (``k·u ≥ 1/2``) use the exact-integer input mode, the rest
one of the float distributions; a quarter are unscheduled, a quarter get a random
order-preserving schedule (``fuzzharness.testing.schedules.spatial_schedule``), half a random reassociating one
(``fuzzharness.testing.schedules.reassociating_schedule``: drawer on the reduction block).  The order analysis reads
the schedule applied to the *declared* program, as it would for a real miscompilation.

    python benchmarks/oracle_power.py [--cases 8] [--seed 1] [--json out.json]

Share caught, (fault, dtype) rows, K columns; "n" = cases judged; the "kept"/"reassoc"
columns split the row by whether the schedule kept every element's order.

Before (the oracle of commit 8f4f2ec, `--cases 12 --seed 1`, 2-core machine shared with
four other sessions)::

    share caught (12 cases per cell, seed 1, 167 s)
    fault                         dtype                 K=64      K=256     K=1024       kept    reassoc        all  diverg. inconcl.
    one dropped term              float16            83%  12     8%  12   100%  12    72%  18    56%  18    64%  36        0        0
    one dropped term              bfloat16           42%  12    92%  12     0%  12    44%  18    44%  18    44%  36        0       24
    one dropped term              float16-acc32     100%  12   100%  12   100%  12   100%  18   100%  18   100%  36        0        0
    one dropped term              float32           100%  12   100%  12   100%  12   100%  18   100%  18   100%  36        0        0
    accumulator narrowed to fp16  float16-acc32     100%   6   100%   8   100%   9   100%  18   100%   5   100%  23        0        0
    accumulator narrowed to fp16  float32           100%   8   100%   9   100%   9   100%  18   100%   8   100%  26        0        0
    variance/(N-1)                float16             0%  12     0%  12     0%  12     0%  18     0%  18     0%  36        0       24
    variance/(N-1)                bfloat16            0%  12     0%  12     0%  12     0%  18     0%  18     0%  36        0       66
    variance/(N-1)                float16-acc32     100%  12   100%  12   100%  12   100%  18   100%  18   100%  36        0        0
    variance/(N-1)                float32           100%  12   100%  12   100%  12   100%  18   100%  18   100%  36        0        0
    eps dropped                   float16             0%  12     0%  12     0%  12     0%  18     0%  18     0%  36        0       24
    eps dropped                   bfloat16            0%  12     0%  12     0%  12     0%  18     0%  18     0%  36        0       66
    eps dropped                   float16-acc32     100%  12    50%  12    42%  12    61%  18    67%  18    64%  36        0        0
    eps dropped                   float32           100%  12    50%  12    50%  12    67%  18    67%  18    67%  36        0        0
    softmax: one exp missing      float16            33%  12     0%  12     0%  12    17%  18     6%  18    11%  36        0       20
    softmax: one exp missing      bfloat16            0%  12     0%  12     0%  12     0%  18     0%  18     0%  36        0       48
    softmax: one exp missing      float16-acc32     100%  12   100%  12    92%  12   100%  18    94%  18    97%  36        0        0
    softmax: one exp missing      float32           100%  12   100%  12    83%  12   100%  18    89%  18    94%  36        0        0
    avg-pool/(k+1)                float16            17%  12    25%  12   100%  12    50%  18    44%  18    47%  36        0        0
    avg-pool/(k+1)                bfloat16           25%  12   100%  12     0%  12    44%  18    39%  18    42%  36        0       24
    avg-pool/(k+1)                float16-acc32     100%  12   100%  12    75%  12    89%  18    94%  18    92%  36        0        0
    avg-pool/(k+1)                float32           100%  12   100%  12    67%  12    89%  18    89%  18    89%  36        0        0
    window shifted by one         float16            83%  12    50%  12   100%  12    78%  18    78%  18    78%  36        0        0
    window shifted by one         bfloat16           33%  12   100%  12     0%  12    44%  18    44%  18    44%  36        0       24
    window shifted by one         float16-acc32     100%  12   100%  12   100%  12   100%  18   100%  18   100%  36        0        0
    window shifted by one         float32           100%  12   100%  12   100%  12   100%  18   100%  18   100%  36        0        0
    wrong init value              float16            88%   8    14%   7   100%   9    72%  18    67%   6    71%  24        0        0
    wrong init value              bfloat16           50%  10   100%   9     0%   8    50%  18    56%   9    52%  27        0       16
    wrong init value              float16-acc32     100%   9   100%   6   100%   7   100%  18   100%   4   100%  22        0        0
    wrong init value              float32           100%   9   100%   8   100%   7   100%  18   100%   6   100%  24        0        0
    ALL                                              67% 338    65% 335    59% 337    66% 540    61% 470    64% 1010        0      336
    overall 63.6% of 1010 cases; lowest row 0% (eps dropped, bfloat16)
    statuses: compile_error 1, nan_inf 15, pass 199, wrong_result 627
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import time
from pathlib import Path

from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import trace_to_json
from fuzzharness.execution.stages import execute
from fuzzharness.generators.inputs import EXACT_DISTRIBUTIONS
from fuzzharness.generators.workloads import workloads
from fuzzharness.oracles.program import Numerics
from fuzzharness.testing.injected_faults import FAULTS

SIZES = (64, 256, 1024)
DTYPES = ("float16", "bfloat16", "float16-acc32", "float32")
FLOAT = ("uniform", "normal", "cancellation", "wide_range")
CAUGHT = ("wrong_result", "nan_inf")
REDUCTION_BLOCKS = {"matmul": ("C",), "layer_norm": ("mean", "var"), "softmax": ("sum",),
                    "pool2d": ("pool_sum",)}
SCHEDULE_KINDS = ("none", "order", "reassoc", "reassoc")


def params_for(workload: str, dtype: str, k: int) -> dict:
    if workload == "matmul":
        return {"M": 8, "N": 8, "K": k, "dtype": dtype}
    if workload in ("layer_norm", "softmax"):
        return {"B": 1, "M": 8, "N": k, "dtype": dtype}
    w = {64: 8, 256: 16, 1024: 32}[k]
    return {"kind": "avg", "layout": "NCHW", "N": 1, "C": 4, "H": w + 3, "W": w + 3, "KH": w,
            "KW": w, "stride": 1, "pad": 0, "count_include_pad": True, "dtype": dtype}


def base_workload(fault_workload: str) -> str:
    return next(c.name for c in type(workloads[fault_workload]).__mro__[1:]
                if getattr(c, "name", None) in REDUCTION_BLOCKS)


def draw_schedule(base: str, params: dict, kind: str, rng: random.Random):
    """A trace (JSON) of the given kind for the declared program, or None (unscheduled)."""
    from tvm import s_tir
    from tvm.s_tir.schedule.schedule import ScheduleError

    from fuzzharness.oracles.order import accumulation_order
    from fuzzharness.testing.schedules import reassociating_schedule, spatial_schedule

    if kind == "none":
        return None
    func = workloads[base].prim_func(params)
    for _ in range(20):
        try:
            if kind == "order":
                sch = s_tir.Schedule(func)
                spatial_schedule(sch, rng)
            else:
                sch = reassociating_schedule(func, rng.choice(REDUCTION_BLOCKS[base]), rng)
        except ScheduleError:
            continue
        preserved = accumulation_order(func, sch.mod["main"]).preserved
        if preserved == (kind == "order"):
            return trace_to_json(sch.trace)
    return None


def input_mode(base: str, params: dict, rng: random.Random, i: int) -> tuple[str, str]:
    """(distribution, oracle mode) the way generators/cases.py chooses them."""
    wl = workloads[base]
    exact_ok = all(s.int_max > 0 for s in wl.inputs(params))
    must = bool(Numerics(wl.prim_func(params)).meaningless_reductions())
    if exact_ok and (must or rng.random() < 0.25):
        return sorted(EXACT_DISTRIBUTIONS)[0], "exact"
    return FLOAT[i % len(FLOAT)], "bound"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=8, help="cases per (fault, dtype, size) cell")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--faults", default="", help="comma-separated subset of fault names")
    ap.add_argument("--json", default="", help="write every case's verdict here")
    args = ap.parse_args()
    wanted = [f for f in FAULTS if not args.faults or f in args.faults.split(",")]
    counts: dict = collections.defaultdict(collections.Counter)
    records = []
    t0 = time.perf_counter()
    for fault in wanted:
        name, labels = FAULTS[fault]
        base = base_workload(name)
        for dtype in DTYPES:
            if dtype not in labels:
                continue
            for k in SIZES:
                rng = random.Random(f"{args.seed}:{fault}:{dtype}:{k}")
                p = params_for(base, dtype, k)
                for i in range(args.cases):
                    kind = SCHEDULE_KINDS[i % len(SCHEDULE_KINDS)]
                    trace = draw_schedule(base, p, kind, rng)
                    if kind != "none" and trace is None:
                        continue
                    dist, mode = input_mode(base, p, rng, i)
                    case = Case(workload={"name": name, "params": p},
                                inputs={"distribution": dist, "seed": rng.randrange(2**31)},
                                schedule={"source": "bench", "trace": trace},
                                oracle={"mode": mode})
                    v = execute(case).verdict
                    status = v.status.value
                    if status == "schedule_rejected":
                        continue
                    caught = status in CAUGHT
                    group = "kept" if kind in ("none", "order") else "reassoc"
                    for key in ((fault, dtype, k), (fault, dtype, group), (fault, dtype, "all"),
                                ("ALL", "", k), ("ALL", "", group), ("ALL", "", "all")):
                        c = counts[key]
                        c["n"] += 1
                        c["caught"] += caught
                        c["divergence"] += status == "order_preserving_divergence"
                        c["inconclusive"] += status == "inconclusive"
                        c[status] += 1
                    records.append({"fault": fault, "dtype": dtype, "K": k, "schedule": kind,
                                    "distribution": dist, "mode": mode, "status": status,
                                    "ratio": v.ratio, "message": v.message[:200],
                                    "ms": 1e3 * sum(v.timings.values())})
    dt = time.perf_counter() - t0

    def cell(key) -> str:
        c = counts.get(key)
        if not c or not c["n"]:
            return f"{'n/a':>11}"
        return f"{100 * c['caught'] / c['n']:>6.0f}% {c['n']:>3}"

    cols = [*SIZES, "kept", "reassoc", "all"]
    print(f"share caught ({args.cases} cases per cell, seed {args.seed}, {dt:.0f} s)")
    print(f"{'fault':<30}{'dtype':<15}" + "".join(f"{'K=' + str(c) if isinstance(c, int) else c:>11}"
                                                   for c in cols) + f"{'diverg.':>9}{'inconcl.':>9}")
    rows = [(f, d) for f in wanted for d in DTYPES if d in FAULTS[f][1]] + [("ALL", "")]
    for f, d in rows:
        c = counts[(f, d, "all")]
        print(f"{f:<30}{d:<15}" + "".join(cell((f, d, col)) for col in cols)
              + f"{c['divergence']:>9}{c['inconclusive']:>9}")
    worst = min(((100 * counts[(f, d, 'all')]['caught'] / max(counts[(f, d, 'all')]['n'], 1), f, d)
                 for f, d in rows[:-1]), default=None)
    total = counts[("ALL", "", "all")]
    print(f"overall {100 * total['caught'] / max(total['n'], 1):.1f}% of {total['n']} cases; "
          f"lowest row {worst[0]:.0f}% ({worst[1]}, {worst[2]})" if worst else "")
    print("statuses:", ", ".join(f"{s} {n}" for s, n in sorted(total.items())
                                 if s not in ("n", "caught", "divergence", "inconclusive")))
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
