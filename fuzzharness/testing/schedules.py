"""Schedules that are legal by construction, for the harness's own tests and benchmarks.

:func:`reassociating_schedule` changes only the order in which a reduction sums (splits,
reorders, rfactor, decompose_reduction of its reduction loops): a correct compiler gives a
result within the error bound, never outside it.  :func:`spatial_schedule` never touches an
accumulation order at all: a correct compiler gives the unscheduled program's bits.  The
false-alarm tests and benchmarks draw from both, and the oracle-power benchmark puts its
injected faults under them.
"""

from __future__ import annotations

import random

import numpy as np

#: the reduction block of each workload the reassociating schedules act on
REDUCTION_BLOCK = {"matmul": "C", "row_sum": "B", "conv2d": "conv"}


def reassociating_schedule(func, block_name: str, rng: random.Random):
    """The schedule itself (its trace replays in a Case)."""
    from tvm import s_tir

    sch = s_tir.Schedule(func)
    block = sch.get_sblock(block_name)
    loops = list(sch.get_loops(block))
    kinds = loop_kinds(sch, block, loops)
    reduce = [lp for lp, k in zip(loops, kinds, strict=True) if k == "R"]
    for lp in reduce:
        extent = int(sch.get(lp).extent)
        if extent > 1 and rng.random() < 0.8:
            factor = rng.randint(2, max(2, min(extent, 64)))
            parts = sch.split(lp, factors=[None, factor])
            if rng.random() < 0.3 and int(sch.get(parts[0]).extent) > 2:
                sch.split(parts[0], factors=[None, rng.randint(2, 5)])
    loops = list(sch.get_loops(block))
    order = loops[:]
    rng.shuffle(order)
    sch.reorder(*order)
    kinds = loop_kinds(sch, block, list(sch.get_loops(block)))
    r_loops = [lp for lp, k in zip(sch.get_loops(block), kinds, strict=True) if k == "R"]
    safe = [lp for lp in r_loops if every_slice_has_work(sch, block, lp)]
    if safe and rng.random() < 0.35:
        target = rng.choice(safe)
        n_spatial = sum(1 for k in kinds if k == "S")
        rf = sch.rfactor(target, rng.randint(0, n_spatial))
        if rng.random() < 0.5:
            rf_loops = list(sch.get_loops(rf))
            rng.shuffle(rf_loops)
            sch.reorder(*rf_loops)
    elif r_loops and rng.random() < 0.25:
        loops = list(sch.get_loops(block))
        sch.decompose_reduction(block, rng.choice(loops))
    return sch


def every_slice_has_work(sch, block, loop) -> bool:
    """Whether every value of ``loop`` keeps at least one iteration the block predicate allows.

    TVM 0.27 bug (found by tests/test_false_alarms.py): ``rfactor`` of a loop some of whose values are masked
    entirely by the predicate of a non-divisible split leaves those slices of the rfactor
    buffer uninitialised — the init sits under the predicate — and the final reduction adds
    whatever memory held (garbage, or nan).  Such draws are excluded here: this test is
    about false alarms on *correct* schedules.
    """
    from fuzzharness.oracles import index_eval
    from fuzzharness.oracles.order import block_sites

    site = block_sites(sch.mod["main"])[str(sch.get(block).name_hint)][0]
    loops = site.loops
    target = next(i for i, lp in enumerate(loops) if lp.loop_var.same_as(sch.get(loop).loop_var))
    grids = np.indices([int(lp.extent) for lp in loops]).reshape(len(loops), -1)
    env = {lp.loop_var: grids[i] + int(lp.min) for i, lp in enumerate(loops)}
    valid = np.broadcast_to(index_eval.evaluate(site.realize.predicate, env), grids.shape[1:]).astype(bool)
    hit = np.zeros(int(loops[target].extent), bool)
    hit[grids[target][valid]] = True
    return bool(hit.all())


def loop_kinds(sch, block, loops) -> list[str]:
    from fuzzharness.generators.schedules.base import ScheduleState

    return ScheduleState(sch, None).loop_kinds(block)


def spatial_schedule(sch, rng: random.Random) -> None:
    """Random steps that never touch an accumulation order: spatial splits, fuses, moves across
    reduction loops, parallel/vectorize/unroll, caches, decompose_reduction."""
    from tvm.s_tir.schedule.schedule import ScheduleError

    from fuzzharness.generators.schedules.base import ScheduleState

    state = ScheduleState(sch, None)
    for _ in range(rng.randint(1, 5)):
        state.invalidate()  # the steps below change the function under the cached facts
        name = rng.choice(state.block_names())
        block = sch.get_sblock(name)
        loops = list(sch.get_loops(block))
        kinds = state.loop_kinds(block)
        spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == "S"]
        what = rng.choice(["split", "move", "fuse", "parallel", "vectorize", "unroll", "cache_write",
                           "decompose"])
        try:
            if what == "split" and spatial:
                sch.split(rng.choice(spatial), [None, rng.randint(2, 5)])
            elif what == "move" and spatial and len(loops) > 1:
                lp = rng.choice(spatial)
                others = [x for x in loops if not x.same_as(lp)]
                pos = rng.randint(0, len(others))
                sch.reorder(*(others[:pos] + [lp] + others[pos:]))
            elif what == "fuse" and len(loops) > 1 and kinds[0] == kinds[1] == "S":
                sch.fuse(loops[0], loops[1])
            elif what == "parallel" and kinds and kinds[0] == "S":
                sch.parallel(loops[0])
            elif what == "vectorize" and kinds and kinds[-1] == "S" and sch.get(loops[-1]).extent.value <= 16:
                sch.vectorize(loops[-1])
            elif what == "unroll" and loops and sch.get(loops[-1]).extent.value <= 16:
                sch.unroll(loops[-1])
            elif what == "cache_write":
                sch.cache_write(block, 0, "local")
            elif what == "decompose" and "R" in kinds:
                sch.decompose_reduction(block, loops[kinds.index("R")])
        except ScheduleError:
            pass
