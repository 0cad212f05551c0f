"""False alarms of the whole verdict path: legal schedules of correct programs must all pass.

Every case goes through :func:`fuzzharness.execution.stages.execute` — both input sets, the bound, the
same-order emulation, the baseline policy ``auto`` — so this checks what a campaign reports,
not one oracle in isolation.  The programs are correct (the registered workloads); the
schedules are legal: reassociations of a reduction block (``fuzzharness.testing.schedules.reassociating_schedule``:
drawer: reduction splits, permutations, rfactor, decompose_reduction), order-preserving
random steps (``fuzzharness.testing.schedules.spatial_schedule``: spatial splits, moves, fuses, parallel,
vectorize, unroll, cache_write, decompose), or none.  Targets cycle through plain llvm (no
FMA), ``x86-64-v3`` and the host CPU (both with FMA: fused multiply-adds), with and without
vectorisation; dtypes float16, bfloat16, float32, float16-acc32, float16-acc32-out16; inputs
from every float distribution and the exact-integer mode.  Any status other than pass /
inconclusive is listed: a false alarm of the harness (or, should one ever appear, a TVM bug —
it would then be analysed and named).

    python benchmarks/false_alarm_sweep.py [--cases 2000] [--seed 3]
        [--freedoms reversed,wide,lanes]

``--freedoms``: every case's kernel is also lowered with one of TVM's *legal* freedoms
(``fuzzharness/testing/legal_freedoms.py``: reductions summed in reverse order, a float16
accumulator kept in float32, per-lane partial sums), cycling through them; the declared
program, the references and the order analysis stay the same.  Such kernels are correct, so
they must give no finding either.  For each freedom the sweep also runs the kernel without it
(same case otherwise) and counts how often the freedom changed the output bits — where it
never does, "0 findings" would mean nothing.
"""

from __future__ import annotations

import argparse
import collections
import random
import time

from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import trace_to_json
from fuzzharness.execution.stages import execute
from fuzzharness.generators import draw as draws
from fuzzharness.generators.workloads import GenOptions, workloads

FAMILIES = {"matmul": ("C",), "conv2d": ("conv",), "row_sum": ("B",), "softmax": ("sum", "max"),
            "layer_norm": ("mean", "var"), "pool2d": ("pool_sum",), "reduce": ("sum",),
            "dense": ("dense",), "batch_matmul": ("C",)}
LABELS = ("float16", "bfloat16", "float32", "float16-acc32", "float16-acc32-out16")
FLOAT = ("uniform", "normal", "cancellation", "wide_range")
KINDS = ("reassoc", "reassoc", "order", "none")
OK = ("pass", "inconclusive", "schedule_rejected")
NOTES = ("order_preserving_divergence",)  # recorded, not findings (fail only with --strict-order)


def targets() -> list[dict]:
    from fuzzharness.generators.options import host_cpu

    return [{"kind": "llvm"}, {"kind": "llvm", "mcpu": "x86-64-v3"},
            {"kind": "llvm", "mcpu": host_cpu()}]


def draw_params(name: str, label: str, index: int) -> dict | None:
    wl = workloads[name]
    if label not in wl.dtype_labels:
        return None
    data = draws.for_case(91, index, purpose=f"false-alarm-sweep:{name}:{label}")
    p = wl.draw_params(data, GenOptions(dtypes=(label,), max_reduction=1024))
    if name == "pool2d" and p["kind"] != "avg":
        p = dict(p, kind="avg")
    if name == "reduce" and p["op"] not in ("sum", "mean"):
        p = dict(p, op="sum")
    return p


def schedule(name: str, params: dict, kind: str, rng: random.Random):
    from tvm import s_tir
    from tvm.s_tir.schedule.schedule import ScheduleError

    from fuzzharness.testing.schedules import reassociating_schedule, spatial_schedule

    if kind == "none":
        return None
    func = workloads[name].prim_func(params)
    blocks = [b for b in FAMILIES[name] if _has_block(func, b)]
    for _ in range(10):
        try:
            if kind == "order":
                sch = s_tir.Schedule(func)
                spatial_schedule(sch, rng)
            else:
                sch = reassociating_schedule(func, rng.choice(blocks), rng)
            return trace_to_json(sch.trace)
        except ScheduleError:
            continue
    return None


def _has_block(func, name: str) -> bool:
    from fuzzharness.oracles.program import blocks

    return name in blocks(func)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--kinds", default=",".join(dict.fromkeys(KINDS)),
                    help="schedule kinds to draw: reassoc, order, none (comma-separated)")
    ap.add_argument("--freedoms", default="",
                    help="legal freedoms to apply, cycling (comma-separated; see the module doc)")
    args = ap.parse_args()
    freedoms = [f for f in args.freedoms.split(",") if f]
    if freedoms:
        import fuzzharness.testing.legal_freedoms as legal

        unknown = set(freedoms) - set(legal.FREEDOMS)
        if unknown:
            ap.error(f"unknown freedom(s) {sorted(unknown)}; known: {', '.join(legal.FREEDOMS)}")
    per_freedom: dict[str, collections.Counter] = {f: collections.Counter() for f in freedoms}
    kinds = [k for k in KINDS if k in args.kinds.split(",")] or list(KINDS)
    rng = random.Random(args.seed)
    tgts = targets()
    counts: collections.Counter = collections.Counter()
    alarms: list[str] = []
    tvm_failures: list[str] = []
    judged_by = collections.Counter()
    t0 = time.perf_counter()
    names = sorted(FAMILIES)
    i = 0
    while counts["cases"] < args.cases:
        name = names[i % len(names)]
        label = LABELS[(i // len(names)) % len(LABELS)]
        kind = kinds[(i // (len(names) * len(LABELS))) % len(kinds)]
        target = tgts[i % len(tgts)]
        i += 1
        p = draw_params(name, label, i)
        if p is None:
            continue
        exact_ok = all(s.int_max > 0 for s in workloads[name].inputs(p))
        exact = exact_ok and i % 5 == 0
        case = Case(workload={"name": name, "params": p},
                    inputs={"distribution": "small_ints" if exact else FLOAT[i % 4], "seed": i},
                    schedule={"source": "sweep", "trace": schedule(name, p, kind, rng)},
                    target=target, pass_config={"tirx.disable_vectorize": True} if i % 7 == 0 else {},
                    oracle={"mode": "exact" if exact else "bound"})
        freedom = None
        if freedoms:
            freedom = freedoms[counts["cases"] % len(freedoms)]
            if freedom == "lanes" and kind == "reassoc":
                # lanes restructures the reduction (split + rfactor): a reassociating trace
                # drawn for the declared program then schedules another program
                freedom = next((f for f in freedoms if f != "lanes"), None)
                if freedom is None:
                    continue
            if legal.transform(freedom, workloads[name].source(p)) == workloads[name].source(p):
                continue  # the freedom does not apply to this program
            plain = case
            case = Case(workload={"name": legal.workload_name(freedom, name), "params": p},
                        inputs=case.inputs, schedule=case.schedule, target=case.target,
                        pass_config=case.pass_config, oracle=case.oracle)
        v = execute(case).verdict
        status = v.status.value
        if status == "schedule_rejected":
            continue
        if freedom is not None:
            pf = per_freedom[freedom]
            pf["cases"] += 1
            pf[status] += 1
            base = execute(plain).verdict  # the untransformed kernel: judged like every case
            counts[f"plain {base.status.value}"] += 1
            if base.status.value not in OK + NOTES:
                alarms.append(f"{base.status.value}: {name} (without the freedom) {p} "
                              f"{case.inputs} {target} {kind}\n    {base.message[:300]}")
            if base.digest and v.digest:
                pf["compared"] += 1
                pf["bits changed"] += base.digest != v.digest
        counts["cases"] += 1
        counts[status] += 1
        counts[f"{kind}:{'fma' if target.get('mcpu') else 'plain'}"] += 1
        for c in v.details.get("checks", []):
            if c["reference"] == "emulation":
                judged_by[f"emulation ({c['run']} run, {'all' if c['complete'] else 'some'} elements)"] += 1
        if freedom is not None and status in ("compile_error", "crash", "timeout"):
            # TVM failing on the transformed program (lanes restructures the reduction, and
            # the case's trace then schedules another program): a TVM finding, not a verdict
            per_freedom[freedom]["tvm failures"] += 1
            tvm_failures.append(f"{status}: {case.workload_name} {v.message[:160]}")
        elif status not in OK + NOTES:
            alarms.append(f"{status}: {case.workload_name} {p} {case.inputs} {target} {kind}\n    {v.message[:300]}")
    dt = time.perf_counter() - t0
    print(f"{counts['cases']} cases in {dt:.0f} s; statuses: "
          + ", ".join(f"{k} {counts[k]}" for k in ("pass", "inconclusive") + NOTES + tuple(
              s for s in counts if s not in OK + NOTES and ":" not in s and s != "cases"
              and not s.startswith("plain "))))
    if freedoms:
        print("the same cases without the freedom:", ", ".join(
            f"{k[6:]} {n}" for k, n in sorted(counts.items()) if k.startswith("plain ")))
    print("schedules × targets:", ", ".join(f"{k} {n}" for k, n in sorted(counts.items()) if ":" in k))
    print("bitwise checks made:", ", ".join(f"{k} {n}" for k, n in sorted(judged_by.items())))
    for f, pf in per_freedom.items():
        print(f"freedom {f}: {pf['cases']} cases, output bits changed in {pf['bits changed']} of "
              f"{pf['compared']} compared; statuses: "
              + ", ".join(f"{k} {n}" for k, n in sorted(pf.items())
                          if k not in ("cases", "compared", "bits changed", "tvm failures")))
    if tvm_failures:
        print(f"TVM failures on transformed programs (not verdicts of the oracle): {len(tvm_failures)}")
        for line, n in collections.Counter(tvm_failures).most_common(5):
            print(f"   {n}× {line}")
    print(f"false alarms: {len(alarms)}")
    for a in alarms[:20]:
        print("  ", a)


if __name__ == "__main__":
    main()
