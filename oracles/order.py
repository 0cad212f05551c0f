"""Does a schedule keep every output element's arithmetic — rounding for rounding?

The order-aware metamorphic check (see :mod:`fuzzharness.oracles.metamorphic`) demands bitwise equality
between a scheduled kernel and TVM's build of the unscheduled program *only* when the schedule
provably keeps, for every output element, the same operations on the same operands in the same
order.  This module decides that from the scheduled IR, conservatively: any construct it does
not understand makes the answer "not preserved", so a claim of preservation is never wrong
for the reasons below (it can only be too modest).

Preserved means all of the following hold:

1. Every block of the unscheduled program is still there exactly once, under its name (a
   reduction block split by ``decompose_reduction`` may appear as ``X_update`` next to an
   ``X_init`` that only stores a constant), and computes the same thing: its body and init
   have the same *signature* — the tree of operations with their dtypes and constants, buffer
   loads and stores by dtype with their indices written in terms of the block's iteration
   variables (by position), buffer names ignored (so ``cache_read``/``cache_write``/``set_scope``
   keep it; ``compute_inline``, ``rfactor``, ``pad_einsum``, ``transform_layout`` and
   ``transform_block_layout`` do not).  Its iteration domain (kind and extent of every block
   iteration variable) is unchanged.
2. Every other block is a pure copy (one store of one load, no reduction): cache and reindex
   stages.
3. For each reduction block, with S the loops feeding its spatial iteration values and R the
   loops feeding its reduction iteration values (walking the loop nest from the root):
   no loop is in both; every loop of extent > 1 is in one of them (none repeats the work);
   R loops are serial or unrolled (not parallel, vectorised or thread-bound) with unit step;
   no loop or block on the path carries an annotation outside :data:`HARMLESS_ANNOTATIONS`
   (software pipelining reorders statements); no ``if`` or nested block wraps it; predicate
   conjuncts mention R or S loops but never both; and enumerating the R loops in nesting order
   (masked by their predicate) visits the reduction points exactly once each, in the
   lexicographic order of the unscheduled loop nest.  The enumeration is done with numpy for
   up to :data:`MAX_ENUMERATION` points; bigger nests are "not preserved" (unsure).

What it does not promise: code generation is the same.  TVM emits ``llvm.fmuladd`` for
``a*b + c``, which LLVM may fuse or not depending on the instruction selected (scalar or
vector, target features), so the caller treats a divergence from TVM's unscheduled build
that stays within the error bound as ``order_preserving_divergence`` — a note, not a wrong
result; the same-order emulation (:mod:`fuzzharness.oracles.emulate`) models the multiply-add choice
and makes the bitwise claim that can fail a case.

bfloat16: buffers other than parameters are compared as float32 (TVM's legalization keeps
them so), so a ``cache_write`` or ``reindex`` of a bfloat16 accumulator — which then
accumulates in float32 and rounds once — is not order-preserving.
:attr:`OrderAnalysis.spatial_kept` is the weaker fact the emulation uses for
order-independent elements.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fuzzharness.oracles import index_eval
from fuzzharness.oracles.block_signatures import (
    Unsure,
    block_signature,
    is_constant_init,
    is_copy,
    update_signature,
)

MAX_ENUMERATION = 1 << 20

#: loop annotations that change neither which operations run nor their order
HARMLESS_ANNOTATIONS = frozenset({"pragma_auto_unroll_max_step", "pragma_unroll_explicit"})

SERIAL_KINDS = frozenset({0, 3})  # ForKind.SERIAL, ForKind.UNROLLED


@dataclasses.dataclass(frozen=True)
class OrderAnalysis:
    preserved: bool
    reason: str = ""  # why not (empty when preserved)
    #: every non-reduction block of the unscheduled program is still there once, computing the
    #: same thing, and every other new block is a copy or part of a reduction (rfactor,
    #: decompose_reduction): the schedule may have changed accumulation orders, nothing else —
    #: what the order-independent elements of :mod:`fuzzharness.oracles.emulate` need
    spatial_kept: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"preserved": self.preserved, "reason": self.reason,
                "spatial_kept": self.spatial_kept}


@dataclasses.dataclass
class Site:
    """One block realisation with the loops (and other wrappers) above it."""

    realize: Any
    loops: list  # For nodes, outermost first
    wrapped: str | None  # "if" / "block" when something other than loops encloses it


def block_sites(func) -> dict[str, list[Site]]:
    """Every block realisation of ``func`` by block name, with the loops above it."""
    from tvm import s_tir, tirx

    found: dict[str, list[Site]] = {}

    def walk(node, loops: list, wrapped: str | None) -> None:
        if node is None:
            return
        if isinstance(node, tirx.For):
            walk(node.body, [*loops, node], wrapped)
        elif isinstance(node, tirx.SeqStmt):
            for s in node.seq:
                walk(s, loops, wrapped)
        elif isinstance(node, s_tir.SBlockRealize):
            name = str(node.block.name_hint)
            if name != "root":
                found.setdefault(name, []).append(Site(node, loops, wrapped))
                inner = "block"
            else:
                inner = wrapped
            walk(node.block.body, [] if name != "root" else loops, inner)
            walk(node.block.init, [], inner)
        elif isinstance(node, tirx.IfThenElse):
            walk(node.then_case, loops, "if")
            walk(node.else_case, loops, "if")
        elif hasattr(node, "body"):  # LetStmt, AttrStmt, AllocBuffer, DeclBuffer, ...
            walk(node.body, loops, wrapped)

    walk(func.body, [], None)
    return found


# -- evaluation of index expressions over a loop grid ---------------------------------------


def _eval(expr, env: dict) -> np.ndarray:
    try:
        return index_eval.evaluate(expr, env)
    except index_eval.Unevaluable as e:
        if e.why == "unbound":
            raise Unsure(f"index uses {e.expr}, which is not a loop of the nest") from None
        raise Unsure(f"index expression of kind {type(e.expr).__name__}") from None


def _vars(expr) -> list:
    import tvm_ffi
    from tvm import tirx

    found: list = []
    tvm_ffi.structural_walk(expr, [(tirx.Var, found.append)])
    return found


def _conjuncts(expr) -> list:
    from tvm import tirx

    if isinstance(expr, tirx.And):
        return _conjuncts(expr.a) + _conjuncts(expr.b)
    return [expr]


def _uses(expr, loops: list) -> set[int]:
    vs = _vars(expr)
    return {i for i, lp in enumerate(loops) if any(lp.loop_var.same_as(v) for v in vs)}


def _check_reduction_order(site: Site, original_block) -> None:
    from tvm import tirx

    realize, loops = site.realize, site.loops
    block = realize.block
    spatial, reduce = set(), set()
    red_values = []
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
        used = _uses(value, loops)
        if int(iv.iter_type) == 0:
            spatial |= used
        elif int(iv.iter_type) == 2:
            reduce |= used
            red_values.append(value)
        else:
            raise Unsure(f"block iteration variable of type {int(iv.iter_type)}")
    if spatial & reduce:
        raise Unsure("a loop feeds both spatial and reduction indices")
    for i, lp in enumerate(loops):
        if not isinstance(lp.extent, tirx.IntImm) or not isinstance(lp.min, tirx.IntImm):
            raise Unsure("a loop with a symbolic extent")
        extent = int(lp.extent.value)
        if i not in spatial and i not in reduce and extent > 1:
            raise Unsure("a loop repeats the reduction")
        extra = set(map(str, lp.annotations.keys())) - HARMLESS_ANNOTATIONS if lp.annotations else set()
        if extra:
            raise Unsure(f"loop annotation(s) {sorted(extra)}")
        step = getattr(lp, "step", None)
        if step is not None and int(step) != 1:
            raise Unsure("a loop with a non-unit step")
        if i in reduce and int(lp.kind) not in SERIAL_KINDS:
            raise Unsure(f"a reduction loop of kind {lp.kind}")
    r_loops = sorted(reduce)
    total_grid = 1
    for i in r_loops:
        total_grid *= int(loops[i].extent)
    if total_grid > MAX_ENUMERATION:
        raise Unsure(f"{total_grid} reduction iterations are too many to enumerate")
    mask_terms = []
    for c in _conjuncts(realize.predicate):
        used = _uses(c, loops)
        if used & spatial and used & reduce:
            raise Unsure("a predicate couples spatial and reduction loops")
        if used <= reduce:
            mask_terms.append(c)
    grids = np.indices([int(loops[i].extent) for i in r_loops]).reshape(len(r_loops), -1) if r_loops \
        else np.zeros((0, 1), dtype=np.int64)
    env = {loops[i].loop_var: grids[n] + int(loops[i].min) for n, i in enumerate(r_loops)}
    mask = np.ones(grids.shape[1], dtype=bool)
    for c in mask_terms:
        mask &= np.broadcast_to(_eval(c, env), mask.shape).astype(bool)
    extents = [int(iv.dom.extent) for iv in original_block.iter_vars if int(iv.iter_type) == 2]
    coords = [np.broadcast_to(_eval(v, env), mask.shape)[mask] for v in red_values]
    for c, e in zip(coords, extents, strict=True):
        if c.size and (c.min() < 0 or c.max() >= e):
            raise Unsure("a reduction index leaves its domain")
    linear = np.ravel_multi_index(coords, extents) if coords else np.zeros(int(mask.sum()), np.int64)
    if linear.size != int(np.prod(extents)) or not np.array_equal(linear, np.arange(linear.size)):
        raise Unsure("the reduction visits its terms in another order")


def accumulation_order(original, scheduled) -> OrderAnalysis:
    """Whether ``scheduled`` (a PrimFunc) keeps every element's operations and their order."""
    try:
        _analyse(original, scheduled)
    except Unsure as e:
        return OrderAnalysis(False, str(e), _spatial_kept(original, scheduled))
    except Exception as e:  # noqa: BLE001 - an IR shape this analysis never met: stay modest
        return OrderAnalysis(False, f"analysis failed ({type(e).__name__}: {e})")
    return OrderAnalysis(True, spatial_kept=True)


def _is_reduction(block) -> bool:
    return any(int(iv.iter_type) == 2 for iv in block.iter_vars)


def _spatial_kept(original, scheduled) -> bool:
    """See :attr:`OrderAnalysis.spatial_kept` (False when unsure)."""
    try:
        before, after = block_sites(original), block_sites(scheduled)
        p_before, p_after = _params(original), _params(scheduled)
        for name, sites in before.items():
            block = sites[0].realize.block
            if len(sites) != 1:
                return False
            if _is_reduction(block):
                continue
            got = after.get(name, [])
            if len(got) != 1 or block_signature(got[0].realize.block, p_after) \
                    != block_signature(block, p_before):
                return False
        for name, sites in after.items():
            if name in before:
                continue
            for s in sites:
                b = s.realize.block
                if not (is_copy(b) or _is_reduction(b) or is_constant_init(b)):
                    return False
        return True
    except Exception:  # noqa: BLE001 - an IR shape this check never met: stay modest
        return False


def _params(func) -> frozenset:
    return frozenset(str(p.name) for p in func.params)


def _analyse(original, scheduled) -> None:
    before = block_sites(original)
    after = block_sites(scheduled)
    p_before, p_after = _params(original), _params(scheduled)
    accounted: set[str] = set()
    for name, sites in before.items():
        if len(sites) != 1:
            raise Unsure(f"block {name} appears {len(sites)} times in the unscheduled program")
        block = sites[0].realize.block
        is_reduction = any(int(iv.iter_type) == 2 for iv in block.iter_vars)
        if name in after:
            got, decomposed = after[name], False
        elif is_reduction and f"{name}_update" in after and f"{name}_init" in after:
            got, decomposed = after[f"{name}_update"], True
            init = after[f"{name}_init"]
            if len(init) != 1 or not is_constant_init(init[0].realize.block):
                raise Unsure(f"{name}_init is not a single constant store")
            accounted |= {f"{name}_update", f"{name}_init"}
        else:
            raise Unsure(f"block {name} is gone (inlined, renamed or factored)")
        accounted.add(name)
        if len(got) != 1:
            raise Unsure(f"block {name} is realised {len(got)} times")
        site = got[0]
        if site.wrapped is not None:
            raise Unsure(f"block {name} sits inside {'an if' if site.wrapped == 'if' else 'another block'}")
        new = site.realize.block
        if decomposed:
            if update_signature(new, p_after) != update_signature(block, p_before) \
                    or new.init is not None:
                raise Unsure(f"block {name}_update computes something else")
        elif block_signature(new, p_after) != block_signature(block, p_before):
            raise Unsure(f"block {name} computes something else")
        if new.annotations and len(new.annotations):
            raise Unsure(f"block {name} carries annotations {sorted(map(str, new.annotations.keys()))}")
        if is_reduction:
            _check_reduction_order(site, block)
    for name, sites in after.items():
        if name in accounted:
            continue
        if not all(is_copy(s.realize.block) for s in sites):
            raise Unsure(f"new block {name} is not a plain copy")
