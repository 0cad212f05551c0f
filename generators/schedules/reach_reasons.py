"""Why a default campaign builds a reach class rarely or never: one short, factual reason per
``method @ class`` that default campaigns have left unbuilt, and one per site class.

The reach census (:mod:`fuzzharness.campaign.reach`) counts every accepted step under
``method @ class``, the class being that of the site of the step's first call, the method
that of the call its primitive is named after (else its first call)
(:mod:`fuzzharness.generators.schedules.site_classes`); ``fuzzharness status --coverage`` lists
the classes a campaign never built, and the reach map (``docs/reach-map.md``) lists them all.
This module says why a listed class stays empty, so that a reader can tell a move TVM refuses
by definition from a generator restriction or a program shape that is itself rare.

Each reason starts with what kind of reason it is:

* ``TVM refuses`` (by definition, or ``mostly``): TVM's own check, named, rejects such a site;
* ``Never`` / ``By construction``: the generator's proposal rule (file named) or the census
  cannot produce or record the class;
* ``Known bug``: the generator avoids the site because TVM crashes there (proposed only at the
  known-bug weight, see ``base.ScheduleState.known_site``);
* ``Rare``: TVM accepts the move; the primitive's weight, its site rule or the program shape it
  needs (steps that must come first, a max/min workload) make it rare;
* ``GAP:``: TVM accepts the move and the generator never proposes it — a reach gap that the
  generator could be widened to close.

Invariants: every key of :data:`REASONS` is a reach class the map lists
(:func:`fuzzharness.campaign.reach.reach_classes`), every key of :data:`CLASS_REASONS` a site
class (``plain`` or one of ``site_classes.SITE_FACTS``); each reason is at most 170
characters; this module imports nothing (plain data, safe to read from anywhere).
"""

#: site class → what makes a site of that class, and why it is rare
CLASS_REASONS: dict[str, str] = {
    "plain": (
        "None of the other classes: a leaf block or loop at the root scope, alone in its nest, "
        "not a reduction. Common; rare only where a method's site always has a class."
    ),
    "site_dependence_hidden": (
        "Touches a buffer accessed under a non-root block that does not declare it: a "
        "loop_partition wrapper (empty reads/writes; vectorize's ragged-tail partition too)."
    ),
    "site_nested": (
        "Inside a non-root block: a loop_partition piece, a blockize inner block, or a T.init "
        "block (3‰). Needs such a step first; TVM then takes the wrapper as the scope root."
    ),
    "site_padding_not_neutral": (
        "A reduction for which reading 0 in place of its inputs changes the result: every "
        "not-sum reduction, and sums of terms not 0 at 0 (layer_norm's variance, graph "
        "softmax/exp sums over a raw input). What pad_einsum's zero padding gets wrong."
    ),
    "site_reduction": (
        "A block with a reduction iterator, or a loop bound to one (matmul, conv, pool, "
        "reduce...). Common, but TVM refuses spatial-only moves there (inline, parallel, "
        "vectorize)."
    ),
    "site_reduction_not_sum": (
        "A reduction whose combiner is not +: only reduce max/min, reduce_epilogue max/min, "
        "pool2d max, softmax's row max and argmax (and graph max-pool/softmax) have one."
    ),
    "site_shares_loop": (
        "The innermost loop holds another block: after compute_at/reverse_compute_at (cache "
        "stages), decompose_reduction, merge, software_pipeline, or above a wrapper block."
    ),
    "site_shares_outer_loop": (
        "A block whose outermost loop holds another block: one moved into another's nest "
        "(compute_at, cache stages, decompose_reduction, merge) or a wrapper. Blocks only."
    ),
}

#: rolling_buffer's one reason, whatever the class (counted under its own call since the census
#: stopped counting a step under its first set-up call: 5 accepted in 3 000 cases of seed 13)
_ROLLING = ("Rare: rolling_buffer.py needs a producer whose consumer reads through a window "
            "(pool, conv, stencils) and TVM then wants the producer compute_at a tile loop.")

#: "method @ class" → why that method rarely or never meets that class
REASONS: dict[str, str] = {
    "add_unit_loop @ site_dependence_hidden": (
        "Rare, not refused: add_unit_loop takes any block or loop, but has weight 1, the lowest "
        "in the step menu (unit_loop.py) and such sites need a loop_partition first."
    ),
    "add_unit_loop @ site_nested": (
        "Rare, not refused: weight 1, the lowest in the step menu (unit_loop.py), and nested "
        "sites need a loop_partition or blockize earlier in the case."
    ),
    "add_unit_loop @ site_shares_loop": (
        "Rare, not refused: weight 1, the lowest in the step menu (unit_loop.py), and a shared "
        "loop needs an earlier compute_at-like step in the case."
    ),
    "add_unit_loop @ site_shares_outer_loop": (
        "Rare, not refused: weight 1, the lowest in the step menu (unit_loop.py), and a shared "
        "outer loop needs an earlier compute_at-like step."
    ),
    "annotate @ site_shares_outer_loop": (
        "GAP: pragma.py annotates only loops, and this class is a block's (software_pipeline's "
        "block annotation is not its first call); TVM annotates blocks too, but its llvm "
        "lowering drops a block's pragma_* annotations (matmul's block with "
        "pragma_auto_unroll_max_step=16 lowers to the unannotated loops), so the class would "
        "build the unannotated program again."
    ),
    "annotate_buffer_access @ site_reduction": (
        "Rare, not refused: weight 2, and a known wrapper bug limits reads to rank = iterator "
        "count (buffer_access.py): matmul/conv/pool inputs fail it."
    ),
    "annotate_buffer_access @ site_reduction_not_sum": (
        "Rare, not refused: reads must have rank = iterator count (buffer_access.py); of max/min "
        "blocks only reduce, reduce_epilogue, softmax, argmax pass."
    ),
    "blockize @ site_shares_loop": (
        "TVM's blockize(loop) needs a single child block "
        "(CheckGetSingleChildBlockRealizeOnSRefTree): only a loop above one wrapper passes; the "
        "list form takes lone blocks."
    ),
    "blockize @ site_shares_outer_loop": (
        "By construction: blockize.py's list form takes only blocks alone in their top-level "
        "statement (siblings: known InternalError, 3‰); the loop form's site is a loop."
    ),
    "cache_index @ plain": (
        "Rare, not refused: cache_index has weight 1 and takes only blocks with composite load "
        "indices (known InternalError otherwise, cache.py); plain ones are mostly pad blocks."
    ),
    "cache_index @ site_dependence_hidden": (
        "Rare, not refused: weight 1, composite-load blocks only (cache.py; known InternalError "
        "otherwise), and such a block must touch a partitioned buffer."
    ),
    "cache_index @ site_nested": (
        "Rare, not refused: weight 1, composite-load blocks only (cache.py; known InternalError "
        "otherwise), and such a block must sit in a partition/blockize wrapper."
    ),
    "cache_index @ site_reduction_not_sum": (
        "Rare, not refused: weight 1 and composite-load blocks only (cache.py); of the "
        "max/min/argmax reductions only max-pool windows (pool2d, graph max-pool) have one."
    ),
    "cache_index @ site_shares_loop": (
        "Rare, not refused: weight 1 and composite-load blocks only (cache.py); such a block must "
        "also share its loop (e.g. a pad block computed at its conv)."
    ),
    "cache_index @ site_shares_outer_loop": (
        "Rare, not refused: weight 1 and composite-load blocks only (cache.py); such a block must "
        "also share an outer loop (e.g. pad computed at its conv)."
    ),
    "cache_inplace @ plain": (
        "By construction: it needs a block that reads and writes one buffer; in the workloads "
        "only a decomposed reduction update does (T.init omits that read): site_reduction."
    ),
    "cache_inplace @ site_dependence_hidden": (
        "Rare: sites are decomposed reduction updates only (cache.py), so decompose_reduction and "
        "a loop_partition touching its buffers must come first; weight 2."
    ),
    "cache_inplace @ site_nested": (
        "Rare: sites are decomposed reduction updates only (cache.py), so decompose_reduction and "
        "a partition/blockize wrapping the update must come first; weight 2."
    ),
    "cache_inplace @ site_reduction_not_sum": (
        "Rare, not refused: sites are decomposed reduction updates only, so it needs a "
        "max/min/argmax workload and an earlier decompose_reduction; weight 2."
    ),
    "cache_inplace @ site_shares_loop": (
        "Rare: the update's innermost loop must hold another block (decompose_reduction alone "
        "never does; a copy computed at that loop, as software_pipeline does)."
    ),
    "compute_at @ site_nested": (
        "Mostly refused: a nested block's scope root is its wrapper, which allocates nothing "
        "(CheckNotOutputBlock) or is another scope; only cache copies made inside pass."
    ),
    "compute_inline @ site_nested": (
        "TVM refuses: a nested block's scope root is its wrapper, which allocates nothing, so "
        "CheckNotOutputBlock calls it an output block; only cache copies inside pass."
    ),
    "compute_inline @ site_reduction": (
        "TVM refuses by definition: it inlines only complete spatial blocks without T.init "
        "(HasInitBlock, CheckCompleteBlock); inline.py proposes no reduction."
    ),
    "compute_inline @ site_reduction_not_sum": (
        "TVM refuses by definition: it inlines only complete spatial blocks without T.init "
        "(HasInitBlock, CheckCompleteBlock); inline.py proposes no reduction."
    ),
    "decompose_padding @ site_reduction": (
        "Rare: TVM needs a complete (spatial) padding block, so only its loop can be a "
        "reduction's: after compute_at put the pad block inside a conv/pool window loop."
    ),
    "decompose_padding @ site_reduction_not_sum": (
        "Rare: as for site_reduction, with a max-pool: compute_at of pool2d's pad block under "
        "pool_max's window loop, then decompose_padding at that loop."
    ),
    "decompose_padding @ site_shares_loop": (
        "Rare, not refused: the pad block (conv2d, depthwise_conv2d, pool2d) must first be "
        "computed at a loop of its consumer in the same case."
    ),
    "decompose_reduction @ plain": (
        "Never: its site includes the block, which must have a T.init (reduction.py; TVM "
        "CheckReductionBlock), so every step is site_reduction."
    ),
    "fuse @ site_dependence_hidden": (
        "Rare, not refused: loops touching a partitioned buffer are few, and partition pieces "
        "after the first start at a nonzero min, which fuse refuses."
    ),
    "fuse @ site_nested": (
        "Rare: loops inside a loop_partition wrapper need a partition first, and pieces after the "
        "first start at a nonzero min (CheckLoopStartsWithZero)."
    ),
    "fuse_reduction_epilogue @ plain": (
        "Never: its first input is the reduction block (T.init; TVM CheckReductionBlock), so "
        "every step is at least site_reduction."
    ),
    "fuse_reduction_epilogue @ site_reduction_not_sum": (
        "Rare: only reduce_epilogue has a max/min reduction feeding a bias add (half its cases "
        "start with + bias); weight 2. TVM accepts it (a known bug)."
    ),
    "fuse_reduction_epilogue @ site_shares_loop": (
        "Rare, not refused: the reduction or its bias epilogue must first share a loop (e.g. "
        "reverse_compute_at of the epilogue into the reduction's nest)."
    ),
    "loop_partition @ site_shares_loop": (
        "Known bug: loop_partition.py skips loops with more than one child block (segfault in "
        "LoopPartition) except in 3‰ of draws; only a loop above one wrapper passes."
    ),
    "merge @ site_nested": (
        "Rare: TVM merges loops of one scope only; partition pieces are separate scopes, so it "
        "needs blockize of a run of blocks (one wrapper holding both nests) first."
    ),
    "merge @ site_reduction_not_sum": (
        "Rare: merge.py needs equal extents down to the loop; only softmax's row max matches "
        "another nest (exp/sum/norm) down to its reduction loop; weight 2."
    ),
    "parallel @ site_reduction": (
        "TVM refuses by definition: a loop bound to a reduction iterator cannot be parallel "
        "(CheckLoopParallelizableInBlock); parallel.py prefers spatial loops."
    ),
    "parallel @ site_reduction_not_sum": (
        "TVM refuses by definition: a loop bound to a reduction iterator cannot be parallel "
        "(CheckLoopParallelizableInBlock); parallel.py prefers spatial loops."
    ),
    "read_at @ site_dependence_hidden": (
        "Rare, not refused: read_write_at has weight 2 (half of it write_at) and picks any block; "
        "blocks touching a partitioned buffer are a small share."
    ),
    "read_at @ site_nested": (
        "Rare, not refused: read_write_at has weight 2 (half of it write_at) and picks any block; "
        "blocks inside a partition/blockize wrapper are a small share."
    ),
    "reindex_cache_read @ site_dependence_hidden": (
        "Rare: a partition piece's regions are whole ranges, so cache.py finds no indexing "
        "iterator (no site) and TVM's CheckSinglePoint refuses; other such blocks are few."
    ),
    "reindex_cache_read @ site_nested": (
        "Partition pieces never: their regions are whole ranges (cache.py: no indexing iterator; "
        "TVM: CheckSinglePoint). Blockize inner blocks work but are rare."
    ),
    "reindex_cache_read @ site_reduction_not_sum": (
        "Rare, not refused: weight 2 split between read and write, and it needs a max/min/argmax "
        "workload."
    ),
    "reindex_cache_read @ site_shares_loop": (
        "Rare: weight 2 split between read and write; a block sharing its loop needs an earlier "
        "step, and TVM refuses a read buffer with several writers."
    ),
    "reindex_cache_read @ site_shares_outer_loop": (
        "Rare: weight 2 split between read and write; a block sharing an outer loop needs an "
        "earlier step, and TVM refuses a read buffer with several writers."
    ),
    "reindex_cache_write @ site_nested": (
        "Partition pieces never: their write regions are whole ranges (cache.py: no indexing "
        "iterator; TVM: single point needed). Blockize inner blocks work but are rare."
    ),
    "reindex_cache_write @ site_reduction_not_sum": (
        "Rare, not refused: weight 2 split between read and write, and it needs a max/min/argmax "
        "workload."
    ),
    "reindex_cache_write @ site_shares_loop": (
        "Rare: weight 2 split between read and write; a writer sharing its loop needs an earlier "
        "step, and TVM needs it to be the buffer's only writer."
    ),
    "reorder_block_iter_var @ site_nested": (
        "Rare, not refused: weight 1, the lowest in the step menu (block_iter_order.py), and "
        "nested blocks need a loop_partition or blockize first."
    ),
    "reverse_compute_at @ site_dependence_hidden": (
        "Mostly refused: a consumer of a partitioned buffer has its producer inside a "
        "loop_partition wrapper, another scope ('under the same block scope')."
    ),
    "reverse_compute_at @ site_nested": (
        "Rare: consumer and producer loop must share a wrapper (a blockize of a run of blocks, or "
        "a cache_write copy made inside); a partition piece holds one block."
    ),
    "reverse_compute_at @ site_shares_outer_loop": (
        "Rare: such a consumer usually already sits under the producer's loop, and TVM refuses a "
        "target loop that is its ancestor ('loop not to be the ancestor')."
    ),
    "reverse_compute_inline @ site_dependence_hidden": (
        "TVM refuses when the producer is inside a loop_partition wrapper: it is not among the "
        "consumer scope's writers (NotSingleReadWriteBuffer)."
    ),
    "reverse_compute_inline @ site_nested": (
        "Mostly refused: in a wrapper scope the producer is absent (NotSingleReadWriteBuffer) or "
        "unallocated (CheckNotOutputBlock); only cache copies made inside pass."
    ),
    "reverse_compute_inline @ site_reduction": (
        "TVM refuses by definition: the consumer must be a complete spatial block without T.init "
        "(HasInitBlock, CheckCompleteBlock); inline.py proposes none."
    ),
    "reverse_compute_inline @ site_reduction_not_sum": (
        "TVM refuses by definition: the consumer must be a complete spatial block without T.init "
        "(HasInitBlock, CheckCompleteBlock); inline.py proposes none."
    ),
    "reverse_compute_inline @ site_shares_loop": (
        "Rare, not refused: the consumer must first share a loop (reverse_compute_at) and still "
        "have one complete, non-reduction producer."
    ),
    "rfactor @ plain": (
        "Rare, not refused: TVM rfactors an unbound unit loop; reduction.py's wild proposals "
        "(RFACTOR_WILD_PERCENT of rfactor's) draw among every loop of the block, and this class "
        "needs an earlier add_unit_loop on that block (the others are data-parallel loops TVM "
        "refuses)."
    ),
    "rfactor @ site_shares_loop": (
        "TVM refuses by definition: the rfactor loop's single child block must be the reduction "
        "block (CheckGetSingleChildBlockRealizeOnSRefTree, LoopPropertyError)."
    ),
    "rolling_buffer @ plain": _ROLLING,
    "rolling_buffer @ site_dependence_hidden": _ROLLING,
    "rolling_buffer @ site_nested": _ROLLING,
    "rolling_buffer @ site_reduction": _ROLLING,
    "rolling_buffer @ site_reduction_not_sum": _ROLLING,
    "rolling_buffer @ site_shares_loop": _ROLLING,
    "rolling_buffer @ site_shares_outer_loop": _ROLLING,
    "storage_align @ site_shares_loop": (
        "Rare, not refused: the intermediate's writer must first share its loop (compute_at, a "
        "cache stage, decompose_reduction's init) in the same case."
    ),
    "storage_align @ site_shares_outer_loop": (
        "Rare, not refused: the intermediate's writer must first share an outer loop (compute_at, "
        "a cache stage, decompose_reduction) in the same case."
    ),
    "transform_block_layout @ site_shares_loop": (
        "TVM refuses: the block's outermost loop must have a single child block "
        "(CheckGetSingleChildBlockRealizeOnSRefTree); only a wrapper block could pass."
    ),
    "transform_block_layout @ site_shares_outer_loop": (
        "TVM refuses: the block's outermost loop must have a single child block "
        "(CheckGetSingleChildBlockRealizeOnSRefTree); only a wrapper block could pass."
    ),
    "unannotate @ plain": (
        "Rare: it has a site only after an earlier step of the case annotated something (most "
        "draws find none); pipelined loops and copies (shared loops) are the commonest."
    ),
    "unannotate @ site_dependence_hidden": (
        "Rare: a pragma must annotate a loop near a partition after the loop_partition (TVM's "
        "loop_partition refuses annotated loops), then unannotate, in one case."
    ),
    "unannotate @ site_nested": (
        "Rare: a pragma must annotate a loop inside a partition after the loop_partition (TVM's "
        "loop_partition refuses annotated loops), then unannotate, in one case."
    ),
    "unsafe_set_dtype @ plain": (
        "Rare, not refused: weight 1, the lowest (storage.py), float intermediates only, many of "
        "them reduction accumulators; plain writers are pad and chain temporaries."
    ),
    "unsafe_set_dtype @ site_nested": (
        "Rare, not refused: weight 1, the lowest (storage.py), and the float intermediate's "
        "writer must sit in a loop_partition or blockize wrapper."
    ),
    "vectorize @ site_reduction": (
        "TVM refuses by definition: a loop bound to a reduction iterator cannot be vectorized "
        "(CheckLoopParallelizableInBlock); vectorize.py ranks spatial loops first."
    ),
    "vectorize @ site_reduction_not_sum": (
        "TVM refuses by definition: a loop bound to a reduction iterator cannot be vectorized "
        "(CheckLoopParallelizableInBlock); vectorize.py ranks spatial loops first."
    ),
    "write_at @ site_dependence_hidden": (
        "Rare, not refused: read_write_at has weight 2 (half of it read_at) and picks any block; "
        "blocks touching a partitioned buffer are a small share."
    ),
    "write_at @ site_nested": (
        "Rare, not refused: read_write_at has weight 2 (half of it read_at) and picks any block; "
        "blocks inside a partition/blockize wrapper are a small share."
    ),
    "write_at @ site_reduction_not_sum": (
        "Rare, not refused: read_write_at has weight 2 (half of it read_at), and the block must "
        "be a max/min/argmax reduction."
    ),
}


def reason(reach_class: str) -> str:
    """Why ``reach_class`` (``method @ class``) is rare: its own reason, else its class's."""
    if reach_class in REASONS:
        return REASONS[reach_class]
    return CLASS_REASONS.get(reach_class.split(" @ ", 1)[-1], "")
