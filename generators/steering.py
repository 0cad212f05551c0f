"""Steering: weights that raise what the feature census finds rare.

The census (:mod:`fuzzharness.execution.census`) of a default campaign says which program features the
generator rarely puts in front of TVM's lowering.  This module holds the weights that steer
generation toward them, read at the few places where a choice is drawn:

* :func:`primitive_weight` — the step menu of random schedules
  (:func:`fuzzharness.generators.schedules.base.menu`);
* :func:`weighted` — a parameter drawn from a list (``vectorize`` lanes, the workload of a
  case for a target).

Rule kept (Halide's schedule fuzzer, see :mod:`fuzzharness.generators.schedules.base`): a weight repeats a
value in the list ``st.sampled_from`` draws from, so **the number of draws never changes** —
steering changes which value a draw maps to, not how many draws a case makes; switching a
primitive off still removes its steps without reshuffling the others, and every weighted list
keeps its "off"/simplest value first, where Hypothesis' shrinker goes.  Changing a weight
changes the cases a seed generates (a harness version change), like any weight.

Why each weight (600-case default campaigns, seeds 20261124 and 7, shares of llvm's lowered
cases before → after; docs/campaign-output.md "Feature census"; ``benchmarks/census.py DIR...`` prints them):

``vectorize`` 3 → 20 with ``lanes``, ``block`` and ``block_kind`` weights, and the
    ``disable_vectorize`` option in a quarter of the option cases instead of half: no llvm
    case had an fp16 vector store of 8 lanes or an fp32 one of 8 (0 % → 2.5 / 2.6 % and
    2.1 / 2.3 %).  A vectorised loop had whatever extent it had, often a reduction loop
    inside it (scalarised by lowering), or a ragged tail (scalarised too); most fp16
    workloads store in fp32.  Now the loop is split by 8 lanes most of the time (4 or 16
    otherwise), the lanes moved innermost, a ragged remainder partitioned off, and blocks
    that write fp16 (×8) or fp32 (×3) and reduction blocks (×3) are picked more often;
``dtype``: ``float16`` and ``float16-acc32-out16`` workloads ×2 (fp16 stores);
``cache_write`` 4 → 10 with ``follow`` and ``tail``, ``split`` 4 → 6, ``reverse_compute_at``
    3 → 5: predicated write-back blocks (2.0 / 0.9 % → 3.8 / 4.9 %): the copy back exists
    only after ``cache_write``; its innermost loop is now often split by a factor that leaves
    a tail;
``parallel`` 3 → 6, ``vectorize.parallel_outer``: the outermost spatial loop of a vectorised
    block in parallel too (the canonical CPU schedule): reductions under a parallel and a
    vectorised loop (0.7 / 1.5 % → 3.4 / 5.3 %);
``unroll`` 3 → 5: odd and even unroll extents stayed ≥ 2 % while the weights above grew;
``cache_inplace`` 1 → 2: not rare in the census, but the menu grew by a third: the
    primitive with the fewest sites keeps its share of steps;
``matmul_texture`` ×30 and the ``tiled`` style ×3 for Adreno, with Adreno's share of the
    default mix 20 → 30 % (generators/targets.py): 4 / 3 of 600 cases had a buffer in a
    texture scope (→ 64 / 61, 10.7 / 10.2 % of all cases).  The only Adreno cases that reach
    a lowered texture are this workload's (texture parameters): the ``texture`` style's
    staging fails lowering on TVM 0.27 (``Expect no tvm_stack_make_shape outside of
    CallNodes``), and so does dlight's schedule of fp16 textures (``Expected Data to be Read
    is lesser than or equal to Texture Load length``) — findings, not census entries;
    ``tiled`` lowers both dtypes.  The price: about two thirds of the Adreno cases are this
    one workload (plain OpenCL cases are unaffected).

The margins are thin (5–14 cases of ~250 for the rarest features; a share's standard error is
about 0.9 points at 2 %), so a census a little under 2 % on another seed is expected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

#: schedule primitive → weight in the step menu (overrides ``Primitive.weight``)
PRIMITIVE_WEIGHTS: dict[str, int] = {
    "vectorize": 20,
    "cache_write": 10,
    "split": 6,
    "reverse_compute_at": 5,
    "parallel": 6,
    "unroll": 5,
    "cache_inplace": 2,  # keeps its share of a menu a third larger (few sites)
}

#: drawn parameter → value → weight (values not named weigh 1)
PARAMETER_WEIGHTS: dict[str, dict[Any, int]] = {
    "vectorize.lanes": {0: 1, 4: 1, 8: 5, 16: 1},
    "vectorize.lanes@float16": {0: 1, 4: 1, 8: 10, 16: 1},
    "vectorize.block": {"float16": 8, "float32": 3},  # by the dtype the block writes
    "vectorize.block_kind": {"reduction": 3},  # × this, by whether the block reduces
    "vectorize.parallel_outer": {True: 4},
    "cache_write.follow": {"reverse_compute_at": 3},
    "cache_write.tail": {0: 2},  # 0: no split of the write-back; else a non-dividing factor
    "option@disable_vectorize": {False: 3},  # on in 1/4 of the option cases, not 1/2
    "dtype": {"float16": 2, "float16-acc32-out16": 2},  # fp16 stores
    "workload@adreno": {"matmul_texture": 30},
    "gpu_style@adreno": {"tiled": 3},
}


def primitive_weight(name: str, default: int) -> int:
    return PRIMITIVE_WEIGHTS.get(name, default)


def weighted(parameter: str, values: Sequence[Any], context: str = "",
             key: Callable[[Any], Any] | None = None) -> list[Any]:
    """``values`` in their order, each repeated by its weight (one draw from it, as before).
    ``context`` (a dtype, a target label) selects ``parameter@context`` weights when there
    are some, else ``parameter``'s; ``key`` maps a value to what the weights name (a block
    to its dtype)."""
    weights = PARAMETER_WEIGHTS.get(f"{parameter}@{context}") if context else None
    if weights is None:
        weights = PARAMETER_WEIGHTS.get(parameter, {})
    key = key or (lambda v: v)
    return [v for v in values for _ in range(weights.get(key(v), 1))]
