"""Cache stages: cache_read / cache_write (with compute_at / reverse_compute_at), cache_inplace,
cache_index, reindex_cache_read / reindex_cache_write.

A cache stage alone only copies; the interesting code comes from moving it under a loop of
the block it serves, so ``cache_read`` is followed (optionally) by ``compute_at`` of the new
block under one of the consumer's loops — at a drawn loop or at a ``sample_compute_location``
decision, as MetaSchedule does — and ``cache_write`` by ``reverse_compute_at`` under one of
the producer's loops.  The follow-up is attempted on a copy: when TVM refuses it the cache
stage alone is kept and the step still counts as accepted.

Scopes: ``global`` and ``local`` (both plain memory on llvm; ``local`` moves the allocation
next to its use).  ``shared``/``warp`` are GPU scopes and belong to the GPU generators.

Known TVM bugs, proposed only in ``KNOWN_SITE_PERMILLE`` ‰ of the draws
(always with ``known_bug_sites``; ``base.ScheduleState.known_site``) (each raises a non-ScheduleError, which
the harness reports as a finding):

* ``cache_index`` on a block without index computation raises ``InternalError: An empty
  SeqStmt is prohibited`` (its documentation says it leaves such blocks unchanged) — also
  when a ``cse_thresh`` ≥ 1 leaves nothing repeated enough to cache; proposals go to blocks
  with composite *load* indices (index computations of stores alone crash the same way),
  with ``cse_thresh=0`` (cache every index computation).

* ``reindex_cache_read`` of a buffer the block also writes (an update block reading its own
  accumulator, after ``decompose_reduction`` or ``blockize``) segfaults in
  ``tvm::s_tir::ReindexCacheRead``; such reads are not proposed.

``cache_inplace`` is proposed where it applies (a block that reads and writes one buffer — a
decomposed reduction's update block) although in TVM 0.27 every such case we tried fails to
lower ("variables (vi, vj) are used, but are not passed in as API arguments"): that is a
finding for the campaign to report, at weight 1.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register
from fuzzharness.generators.steering import weighted

SCOPES = ("global", "local")


@register
class CacheRead(Primitive):
    name = "cache_read"
    weight = 4
    covers = ("cache_read", "compute_at", "sample_compute_location")

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: bool(b.reads))
        if block is None:
            return None
        index = state.draw(st.integers(0, len(state.block_facts(block).reads) - 1))
        scope = state.draw(st.sampled_from(SCOPES))
        loops = state.loops(block)
        follow = state.draw(st.sampled_from(["compute_at", "sampled", "none"]))
        at = state.draw(st.integers(0, max(len(loops) - 1, 0)))
        preserve = state.draw(st.booleans())

        def apply():
            cache = state.sch.cache_read(block, index, scope)
            if follow == "compute_at" and loops:
                state.attempt(lambda: state.sch.compute_at(cache, loops[at], preserve_unit_loops=preserve))
            elif follow == "sampled":
                state.attempt(lambda: state.sch.compute_at(
                    cache, state.sch.sample_compute_location(cache), preserve_unit_loops=preserve))

        return apply


@register
class CacheWrite(Primitive):
    name = "cache_write"
    weight = 4
    covers = ("cache_write", "reverse_compute_at", "split")

    def propose(self, state: ScheduleState):
        block = state.pick_block(lambda b: bool(b.writes))
        if block is None:
            return None
        index = state.draw(st.integers(0, len(state.block_facts(block).writes) - 1))
        scope = state.draw(st.sampled_from(SCOPES))
        loops = state.loops(block)
        follow = state.draw(st.sampled_from(weighted("cache_write.follow",
                                                     ["reverse_compute_at", "none"])))
        at = state.draw(st.integers(0, max(len(loops) - 1, 0)))
        preserve = state.draw(st.booleans())
        # steered: the write-back's innermost loop split by a factor that leaves a tail, so
        # that the copy back runs under a predicate (rare otherwise; generators/steering.py)
        tail = state.draw(st.sampled_from(weighted("cache_write.tail", [0, 3, 5, 7])))

        def apply():
            cache = state.sch.cache_write(block, index, scope)
            if follow == "reverse_compute_at" and loops:
                state.attempt(lambda: state.sch.reverse_compute_at(
                    cache, loops[at], preserve_unit_loops=preserve))
            inner = state.loops(cache)[-1:] if tail else []
            extent = state.extent(inner[0]) if inner else None
            if extent and extent > tail and extent % tail:
                state.attempt(lambda: state.sch.split(inner[0], [None, tail]))

        return apply


@register
class CacheInplace(Primitive):
    name = "cache_inplace"
    covers = ("cache_inplace",)

    def propose(self, state: ScheduleState):
        def inplace(b):
            return any(b.read_index(w.buffer) is not None for w in b.writes)

        block = state.pick_block(inplace)
        if block is None:
            return None
        facts = state.block_facts(block)
        index = next(facts.read_index(w.buffer) for w in facts.writes
                     if facts.read_index(w.buffer) is not None)
        scope = state.draw(st.sampled_from(SCOPES))
        return lambda: state.sch.cache_inplace(block, index, scope)


@register
class CacheIndex(Primitive):
    name = "cache_index"
    covers = ("cache_index",)

    def propose(self, state: ScheduleState):
        known_bugs = state.known_site()
        block = state.pick_block(lambda b: b.composite_load or known_bugs)
        if block is None:
            return None
        threshold = state.draw(st.integers(0, 2)) if known_bugs else 0
        return lambda: state.sch.cache_index(block, "global", threshold)


@register
class ReindexCache(Primitive):
    """reindex_cache_read / _write: a cache whose layout is a permutation of the block iterators
    that index the buffer (so the cache is the access pattern laid out anew)."""

    name = "reindex_cache"
    weight = 2
    covers = ("reindex_cache_read", "reindex_cache_write")

    def propose(self, state: ScheduleState):
        from tvm.tirx import IndexMap

        known = state.known_site()
        block = state.pick_block(lambda b: bool(b.reads or b.writes))
        if block is None:
            return None
        facts = state.block_facts(block)
        written = {w.buffer for w in facts.writes}
        sites = [("read", i) for i, r in enumerate(facts.reads) if known or r.buffer not in written]
        sites += [("write", i) for i in range(len(facts.writes))]
        kind, index = state.draw(st.sampled_from(sites))
        used = state.access_iters(block, kind, index)
        if not used:
            return None
        order = state.draw(st.permutations(used))
        scope = state.draw(st.sampled_from(SCOPES))
        n_iters = len(facts.iter_kinds)
        index_map = IndexMap.from_func(lambda *ivs: [ivs[i] for i in order], ndim=n_iters,
                                       index_dtype="int32")
        if kind == "read":
            return lambda: state.sch.reindex_cache_read(block, index, scope, index_map)
        return lambda: state.sch.reindex_cache_write(block, index, scope, index_map)
