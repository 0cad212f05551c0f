"""tiled: a hand-rolled GPU tiling of a single reduction (or spatial) block, every choice drawn.

For a block whose loops are spatial loops followed by reduction loops (matmul, row sums,
dot products...):

* every spatial loop is split ``[block, thread, inner]``; block parts fuse into
  ``blockIdx.x``, thread parts into ``threadIdx.x`` (at most the target's thread limit);
* reduction loops split ``[outer, inner]``; or, for a *cross-thread reduction*, the last
  reduction loop's inner part binds ``threadIdx.x`` (spatial threads go to ``threadIdx.y``) and
  TVM's LowerCrossThreadReduction makes the warp/shared-memory reduction;
* optionally a ``local`` accumulator (``cache_write`` + ``reverse_compute_at``), ``shared``
  stages of the inputs at the outer reduction loop with *cooperative fetch* (the copy loops
  fused, split by the thread count, bound to ``threadIdx.x``, optionally vectorised), and
  ``local`` register stages of the inputs;
* optionally *software pipelining* of the outer reduction loop over the shared stages
  (``software_pipeline_stage``/``order``; the shared buffers become double buffered;
  ``double_buffer_scope`` on the copies) with *async copy* (``software_pipeline_async_stages``
  + ``tirx.use_async_copy``) on CUDA ≥ sm_80.

Every split may be non-dividing (predicated tails).  The schedule is valid by construction as
far as the schedule API can tell; what TVM then does with it is what the case tests.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.gpu.base import GpuSchedule, Style, register
from fuzzharness.generators.schedules.base import ScheduleState


def single_block(sch):
    names = ScheduleState(sch, None).block_names()
    return names[0] if len(names) == 1 else None


def loop_pattern(sch, block) -> str:
    return "".join(ScheduleState(sch, None).loop_kinds(block))


def applicable(func) -> bool:
    from tvm import s_tir

    sch = s_tir.Schedule(func)
    name = single_block(sch)
    if name is None:
        return False
    pattern = loop_pattern(sch, sch.get_sblock(name))
    return pattern.startswith("S") and "RS" not in pattern


@register
class Tiled(Style):
    name = "tiled"

    def applies(self, func, target):
        return applicable(func)

    def schedule(self, func, data, target):
        from tvm import s_tir

        d = data.draw
        sch = s_tir.Schedule(func, seed=d(st.integers(1, 2**31 - 1)))
        blk = sch.get_sblock(single_block(sch))
        kinds = loop_pattern(sch, blk)
        loops = sch.get_loops(blk)
        spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == "S"]
        reduce = [lp for lp, k in zip(loops, kinds, strict=True) if k == "R"]
        notes: list[str] = []
        pass_config: dict = {}
        budget = target.max_threads

        cross = bool(reduce) and d(st.booleans()) and d(st.booleans())  # ~1/4 of reductions
        red_threads = d(st.sampled_from([4, 8, 16, 32, 64])) if cross else 1
        budget //= red_threads
        bx, tx, inner, threads = [], [], [], 1
        for lp in spatial:
            t = d(st.sampled_from([1, 2, 4, 8, 16, 32]))
            inn = d(st.sampled_from([1, 1, 2, 4]))
            if threads * t > budget:
                t = 1
            threads *= t
            o, ti, ii = sch.split(lp, [None, t, inn])
            bx.append(o)
            tx.append(ti)
            inner.append(ii)
        r_outer, r_inner = [], []
        for i, lp in enumerate(reduce):
            last = i == len(reduce) - 1
            f = red_threads if (cross and last) else d(st.sampled_from([1, 2, 4, 8, 16]))
            o, ri = sch.split(lp, [None, f])
            r_outer.append(o)
            r_inner.append(ri)
        if cross:
            sch.reorder(*bx, *tx, *inner, *r_outer, *r_inner)
        else:
            sch.reorder(*bx, *tx, *r_outer, *r_inner, *inner)
        b = sch.fuse(*bx) if len(bx) > 1 else bx[0]
        t = sch.fuse(*tx) if len(tx) > 1 else tx[0]
        sch.bind(b, "blockIdx.x")
        sch.bind(t, "threadIdx.y" if cross else "threadIdx.x")
        if cross:
            sch.bind(r_inner[-1], "threadIdx.x")
            notes.append(f"cross-thread reduction over {red_threads} threads")
            return GpuSchedule(sch, self.name, pass_config, notes)
        if not reduce:
            return GpuSchedule(sch, self.name, pass_config, notes)

        if d(st.booleans()):
            wb = sch.cache_write(blk, 0, "local")
            sch.reverse_compute_at(wb, t)
            notes.append("local accumulator")
        reads = [i for i, r in enumerate(sch.get(blk).reads)
                 if not any(r.source.same_as(w.source) for w in sch.get(blk).writes)]
        outer = r_outer[0]
        # loops of the block down to and including the outer reduction loop
        depth = 1 + [sch.get(lp).same_as(sch.get(outer)) for lp in sch.get_loops(blk)].index(True)
        shared = []
        for i in reads:
            if not d(st.booleans()):
                continue
            backup = sch.copy()  # the same random variables, kept by the copy
            cr = sch.cache_read(blk, i, "shared")
            sch.compute_at(cr, outer)
            copy = sch.get_loops(cr)[depth:]
            if not copy:  # one element per iteration: no loop to fetch cooperatively
                sch = backup
                continue
            fused = sch.fuse(*copy) if len(copy) > 1 else copy[0]
            vec = d(st.sampled_from([1, 1, 2, 4]))
            _, ct, cv = sch.split(fused, [None, threads, vec])
            sch.bind(ct, "threadIdx.x")
            if vec > 1:
                sch.vectorize(cv)
            shared.append(cr)
        if shared:
            notes.append(f"{len(shared)} shared stage(s), cooperative fetch")
        for i in reads:
            if d(st.booleans()) and d(st.booleans()):
                cl = sch.cache_read(blk, i, "local")
                sch.compute_at(cl, r_inner[-1])
                notes.append("local read stage")
        if shared and d(st.booleans()):
            sch.decompose_reduction(blk, r_outer[0])
            n = len(shared) + 1
            stage = [0] * len(shared) + [d(st.sampled_from([1, 1, 2]))]
            sch.annotate(outer, "software_pipeline_stage", stage)
            sch.annotate(outer, "software_pipeline_order", list(range(n)))
            for cr in shared:
                sch.annotate(cr, "double_buffer_scope", 0)
            notes.append(f"software pipeline stages {stage}, double-buffered shared")
            if target.is_cuda and target.sm >= 80 and d(st.booleans()):
                sch.annotate(outer, "software_pipeline_async_stages", [0])
                pass_config["tirx.use_async_copy"] = True
                notes.append("async copy (cp.async)")
        return GpuSchedule(sch, self.name, pass_config, notes)
