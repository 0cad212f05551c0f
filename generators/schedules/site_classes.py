"""Site classes: what the block or loop a schedule step acts on looks like, in a few
route-free classes (:data:`SITE_FACTS`; their meaning and measurements:
:mod:`fuzzharness.minimize.step_site`).

Shared by the culprit-step probe (the site of a failing step, for the root-cause key) and
the generator (the site of every accepted step, for the reach census:
:mod:`fuzzharness.campaign.reach`).  Invariants: a function of the schedule's current IR
and the random variables given; nothing here changes the schedule or records an
instruction in its trace (``sch.get_loops`` would: the generator's traces would change).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

SITE_FACTS = ("site_dependence_hidden", "site_nested", "site_padding_not_neutral", "site_reduction",
              "site_reduction_not_sum", "site_shares_loop", "site_shares_outer_loop")


def site_classes(sch: Any, rvs: Iterable[Any]) -> tuple[str, ...]:
    """The site classes of the blocks and loops ``rvs`` (random variables of ``sch``; other
    kinds of inputs are ignored), sorted."""
    from tvm import s_tir

    stmts = [sch.get(rv) for rv in rvs
             if isinstance(rv, (s_tir.schedule.SBlockRV, s_tir.schedule.LoopRV))]
    return stmt_classes(sch, stmts)


def stmt_classes(sch: Any, stmts: Iterable[Any]) -> tuple[str, ...]:
    """The site classes of the blocks and loops ``stmts`` of ``sch``'s current program (the
    statements themselves: the generator keeps them from before a step changes the program,
    and classifies them in the schedule copied before it), sorted."""
    facts: set[str] = set()
    hidden: set[str] | None = None
    for stmt in stmts:
        try:
            sref = sch.get_sref(stmt)
        except Exception:  # noqa: BLE001 - not a statement of this program (nothing to say)
            continue
        facts |= _classes(stmt, sref)
        buffers = _buffers_of(stmt)
        if buffers:
            hidden = _hidden_buffers(sch.mod["main"]) if hidden is None else hidden
            if buffers & hidden:
                facts.add("site_dependence_hidden")
    return tuple(sorted(facts))


def _blocks(stmt) -> list:
    import tvm_ffi
    from tvm import s_tir

    found: list = []
    tvm_ffi.structural_walk(stmt, [(s_tir.SBlock, found.append)])
    return found


def _regions(block) -> set[str]:
    # the region's buffer: .source in TVM 0.27 (TensorRegion), .buffer before
    return {str(getattr(r, "source", None) if hasattr(r, "source") else r.buffer.name)
            for r in [*block.reads, *block.writes]}


def _hidden_buffers(func) -> set[str]:
    """Names of buffers some block accesses inside a non-root block that does not declare
    them in its reads/writes."""
    hidden: set[str] = set()
    for outer in _blocks(func.body):
        inner = [b for b in _blocks(outer.body) if not b.same_as(outer)]
        if not inner or outer.name_hint == "root":
            continue
        declared = _regions(outer)
        for b in inner:
            hidden |= _regions(b) - declared
    return hidden


def _buffers_of(stmt) -> set[str]:
    from tvm import s_tir

    if isinstance(stmt, s_tir.SBlock):
        return _regions(stmt)
    return {n for b in _blocks(stmt.body) for n in _regions(b)}


def _classes(stmt, sref) -> set[str]:
    from tvm import s_tir

    out: set[str] = set()
    if isinstance(stmt, s_tir.SBlock):
        if any(int(iv.iter_type) == 2 for iv in stmt.iter_vars):  # 2: CommReduce
            out.add("site_reduction")
            if not _sums(stmt):
                out.add("site_reduction_not_sum")
            if not _zero_padding_neutral(stmt):
                out.add("site_padding_not_neutral")
        loops = _loops_above(sref)  # not sch.get_loops: that is traced
        if loops and _blocks_under(loops[-1]) > 1:
            out.add("site_shares_loop")
        if loops and _blocks_under(loops[0]) > 1:
            out.add("site_shares_outer_loop")
    else:
        if _blocks_under(stmt) > 1:
            out.add("site_shares_loop")
        reductions = _reductions_bound_to(stmt)
        if reductions:
            out.add("site_reduction")
            if not all(_sums(b) for b in reductions):
                out.add("site_reduction_not_sum")
            if not all(_zero_padding_neutral(b) for b in reductions):
                out.add("site_padding_not_neutral")
    if _inside_a_block(sref):
        out.add("site_nested")
    return out


def _loops_above(sref) -> list:
    """The loops between ``sref`` and the block above it, outermost first."""
    from tvm import s_tir, tirx

    loops = []
    parent = sref.parent
    while parent is not None and not isinstance(parent.stmt, s_tir.SBlock):
        if isinstance(parent.stmt, tirx.For):
            loops.append(parent.stmt)
        parent = parent.parent
    return loops[::-1]


def _blocks_under(loop) -> int:
    import tvm_ffi
    from tvm import s_tir

    found: list = []
    tvm_ffi.structural_walk(loop.body, [(s_tir.SBlock, found.append)])
    return len(found)


def _reductions_bound_to(loop) -> list:
    """The blocks under ``loop`` that bind one of their reduction iterators to an expression
    of the loop's variable."""
    import tvm_ffi
    from tvm import s_tir, tirx

    realizes: list = []
    tvm_ffi.structural_walk(loop.body, [(s_tir.SBlockRealize, realizes.append)])
    out = []
    for realize in realizes:
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=False):
            if int(iv.iter_type) != 2:
                continue
            used: list = []
            tvm_ffi.structural_walk(value, [(tirx.Var, used.append)])
            if any(v.same_as(loop.loop_var) for v in used):
                out.append(realize.block)
                break
    return out


def _sums(block) -> bool:
    """Whether every store of the reduction ``block``'s update adds to what it stores into
    (``x = x + …``, casts allowed): the combiner whose identity is 0 and that a bias may be
    folded into; max, min (and an argmax's select) are not."""
    from tvm import tirx

    updates = _updates(block)
    return bool(updates) and all(isinstance(value, tirx.Add | tirx.Sub) for _, value in updates)


def _updates(block) -> list[tuple[Any, Any]]:
    """(store, the value it stores without its casts) of every store in ``block``'s body."""
    import tvm_ffi
    from tvm import tirx

    stores: list = []
    tvm_ffi.structural_walk(block.body, [(tirx.BufferStore, stores.append)])
    out = []
    for store in stores:
        value = store.value
        while isinstance(value, tirx.Cast):
            value = value.value
        out.append((store, value))
    return out


def _zero_padding_neutral(block) -> bool:
    """Whether reading 0 from every buffer the reduction ``block`` indexes by a reduction
    iterator leaves its result unchanged — what ``pad_einsum``'s zero padding of the
    reduction axis assumes.  Not for max/min/argmax (identity not 0), nor for a sum of a
    term that is not 0 at 0 (a variance's ``(x - mean)²``, a softmax's ``exp(x - max)``);
    a sum whose term cannot be evaluated counts as neutral (no claim)."""
    import tvm_ffi
    from tvm import tirx

    from fuzzharness.oracles.index_eval import Unevaluable, evaluate

    if not _sums(block):
        return False
    reduce_vars = [iv.var for iv in block.iter_vars if int(iv.iter_type) == 2]
    rng = np.random.default_rng(0)  # fixed: a function of the program alone

    def indexed_by_reduction(load) -> bool:
        used: list = []
        for index in load.indices:
            tvm_ffi.structural_walk(index, [(tirx.Var, used.append)])
        return any(u.same_as(v) for u in used for v in reduce_vars)

    def loads(load):
        return 0.0 if indexed_by_reduction(load) else rng.uniform(0.5, 2.0, size=4)

    for store, value in _updates(block):
        if not isinstance(value, tirx.Add):
            continue  # a Sub: x - term, also neutral exactly when the term is 0
        own = [side for side in (value.a, value.b) if _loads_from(side, store.buffer)]
        terms = [side for side in (value.a, value.b) if not any(side.same_as(o) for o in own)]
        if len(own) != 1 or len(terms) != 1:
            continue
        try:
            term = evaluate(terms[0], {}, loads)
        except Unevaluable:
            continue
        if not np.all(np.asarray(term) == 0):
            return False
    return True


def _loads_from(expr, buffer) -> bool:
    """Whether ``expr`` is (a cast of) a load of ``buffer``."""
    from tvm import tirx
    from tvm.ir.expr import TensorLoad  # what tirx.BufferLoad builds

    while isinstance(expr, tirx.Cast):
        expr = expr.value
    return isinstance(expr, TensorLoad) and expr.source.same_as(buffer)


def _inside_a_block(sref) -> bool:
    """Whether the nearest block above ``sref`` is not the root block."""
    from tvm import s_tir

    parent = sref.parent
    while parent is not None:
        if isinstance(parent.stmt, s_tir.SBlock):
            return parent.parent is not None
        parent = parent.parent
    return False


def step_site_classes(before, added, lookups) -> tuple[str, ...]:
    """The site classes of the inputs of the first instruction in ``added`` that transforms
    the program (not one of the ``lookups`` instruction kinds or a sampler), in ``before`` — the schedule copied before the
    step, on which the lookups that precede that instruction (in the proposal or in its
    thunk: the program had not changed yet) are made again.  ``before`` is discarded after
    the step, so what this records in its trace does not matter; the step's own schedule is
    not touched (Schedule.copy would fork its random state)."""
    found: dict[Any, Any] = {}  # rv of the step's schedule -> rv of ``before``
    for inst in added:
        kind = inst.kind.name
        if kind not in lookups:
            if kind.startswith("Sample"):
                continue
            mine = [found[rv] for rv in found if any(rv.same_as(x) for x in inst.inputs)]
            return site_classes(before, mine)
        try:
            outs = _look_up(before, kind, [_mapped(found, x) for x in inst.inputs], inst.attrs)
        except Exception:  # noqa: BLE001 - a lookup that cannot be made again: no site
            return ()
        found.update(zip(inst.outputs, outs, strict=False))
    return ()


def _mapped(found: dict, rv):
    return next((v for k, v in found.items() if k.same_as(rv)), rv)


def _look_up(sch, kind: str, inputs: list, attrs) -> list:
    """Make the lookup instruction ``kind`` on ``sch`` (its outputs, as a list)."""
    if kind == "GetSBlock":
        return [sch.get_sblock(str(attrs[0]), func_name=str(attrs[1]))]
    method = {"GetLoops": sch.get_loops, "GetChildBlocks": sch.get_child_blocks,
              "GetProducers": sch.get_producers, "GetConsumers": sch.get_consumers,
              "GetOutputBlocks": sch.get_output_blocks}[kind]
    return list(method(inputs[0]))
