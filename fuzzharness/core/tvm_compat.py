"""The one version adapter: older TVM releases get the 0.27 spellings the harness uses.

The harness is written against TVM 0.27.  Workers may run under another interpreter with
another TVM (``--tvm-python``, a release environment made by :mod:`fuzzharness.releases.check`, a
developer's source build or a nightly).  Generation, replay and the oracles use names that
0.25, 0.26 and 0.27 share (``tvm.s_tir.Schedule``, ``tvm.tirx``, ``T.sblock``,
``get_sblock``, ``Trace.apply_json_to_schedule``, ``tvm.compile``); the few that moved are
back-filled by :func:`install`, once per process, *only where the running TVM lacks them*:

==============================  ===========================  ==============================
0.27 spelling (what we call)    0.26                         0.25 (apache-tvm-ffi 0.1.12)
==============================  ===========================  ==============================
``PrimExpr.ty``                 same                         ``.dtype``
``tvm.ir.Expr``                 same                         ``tvm.ir.PrimExpr``
``tvm.s_tir.SBlock`` / ``SBlockRealize``  ``tvm.tirx.SBlock`` / ...   ``tvm.tirx.SBlock`` / ...
``BufferRegion.source``         ``.buffer``                  ``.buffer``
``TensorLoad.source``           ``BufferLoad.buffer``        ``BufferLoad.buffer``
``tvm.ir.expr.TensorLoad``      ``tvm.tirx.BufferLoad``      ``tvm.tirx.BufferLoad``
``tvm.ir[.expr].Call`` / ``Var``  same                         ``tvm.tirx.Call`` / ``Var``
``tvm_ffi.structural_walk``     same                         (none: walked with
                                                             ``tirx.stmt_functor``)
==============================  ===========================  ==============================

(measured on the PyPI wheels; /work/shared/notes/tvm-0.27-facts.md, "Other TVM releases").
One difference cannot be back-filled onto a class: 0.25 keeps parameter buffers in
``PrimFunc.buffer_map`` — read them with :func:`param_buffers`.
On TVM 0.27 :func:`install` changes nothing — ``tests/test_tvm_compat.py`` checks that —
so call sites keep the one spelling and nothing else in the harness knows about versions.
A name this table lacks fails loudly (``AttributeError`` → ``harness_error``), never
silently: the place to teach the harness another release is here.  Not adapted: 0.25's
Relax (``relax.TensorType(ndim, dtype)``, ``struct_info``), which whole-graph cases use —
under 0.25 run single-PrimFunc cases (``--graph-fraction 0``).
"""

from __future__ import annotations

from typing import Any

_installed: list[str] | None = None


def install() -> list[str]:
    """Back-fill the 0.27 names onto the imported TVM; return what was added (idempotent)."""
    global _installed
    if _installed is not None:
        return _installed
    import tvm
    import tvm.ir.expr
    import tvm_ffi
    from tvm import s_tir, tirx

    added: list[str] = []

    def alias(owner: Any, name: str, source: Any, label: str) -> None:
        """``owner.name = source()`` when ``owner`` lacks ``name`` (source is evaluated only
        then: on 0.27 the older names may not exist)."""
        if not hasattr(owner, name):
            setattr(owner, name, source())
            added.append(label)

    alias(tvm.ir, "Expr", lambda: tvm.ir.PrimExpr, "tvm.ir.Expr")
    alias(s_tir, "SBlock", lambda: tirx.SBlock, "s_tir.SBlock")
    alias(s_tir, "SBlockRealize", lambda: tirx.SBlockRealize, "s_tir.SBlockRealize")
    alias(tvm.ir.expr, "TensorLoad", lambda: tirx.BufferLoad, "tvm.ir.expr.TensorLoad")
    for name in ("Call", "Var"):  # one expression hierarchy from 0.27 on; TIR's before
        alias(tvm.ir.expr, name, lambda n=name: getattr(tirx, n), f"tvm.ir.expr.{name}")
        alias(tvm.ir, name, lambda n=name: getattr(tirx, n), f"tvm.ir.{name}")
    # 0.27: tirx.BufferRegion is a constructor of tvm.ir.expr.TensorRegion (has .source)
    if isinstance(tirx.BufferRegion, type) and not hasattr(tirx.BufferRegion, "source"):
        tirx.BufferRegion.source = property(lambda r: r.buffer)
        added.append("BufferRegion.source")
    # 0.27: a load is a tvm.ir.expr.TensorLoad (has .source); before, tirx.BufferLoad (.buffer)
    if isinstance(tirx.BufferLoad, type) and not hasattr(tirx.BufferLoad, "source"):
        tirx.BufferLoad.source = property(lambda load: load.buffer)
        added.append("BufferLoad.source")
    if not hasattr(tirx.IntImm("int32", 0), "ty"):  # 0.25: .dtype only
        tvm.ir.PrimExpr.ty = property(lambda e: e.dtype)
        added.append("PrimExpr.ty")
    alias(tvm_ffi, "structural_walk", lambda: _walk, "tvm_ffi.structural_walk")
    # 0.27 moved the schedulable-TIR well-formedness check to s_tir (0.25/0.26: tirx.analysis)
    alias(s_tir.analysis, "verify_well_formed", lambda: tirx.analysis.verify_well_formed,
          "s_tir.analysis.verify_well_formed")
    _installed = added
    return added


def _walk(root: Any, callbacks: Any = (), order: str = "post") -> None:
    """``tvm_ffi.structural_walk`` for tvm-ffi releases without it (0.1.12, TVM 0.25).

    Visits the statements and expressions under ``root`` (a PrimFunc's body, every function
    of an IRModule, or a statement/expression itself) with TVM's own visitors, calling the
    first ``(type, callback)`` entry that matches each node.  In ``"pre"`` order a callback
    returning ``False`` (or tvm-ffi's ``WalkResult.SKIP`` where it exists) skips the node's
    children, as structural_walk does.
    """
    from tvm import tirx
    from tvm.tirx import stmt_functor

    entries = [callbacks] if isinstance(callbacks, tuple) and len(callbacks) == 2 and \
        isinstance(callbacks[0], type) else list(callbacks)

    def dispatch(node: Any) -> Any:
        for types, fn in entries:
            if isinstance(node, types):
                return fn(node)
        return None

    def visit_pre(node: Any) -> bool:
        result = dispatch(node)
        return not (result is False or str(result).endswith("SKIP"))

    def one(node: Any) -> None:
        if order == "pre":
            stmt_functor.pre_order_visit(node, visit_pre)
        else:
            stmt_functor.post_order_visit(node, dispatch)

    if hasattr(root, "functions"):  # an IRModule
        for _, func in root.functions.items():
            if isinstance(func, tirx.PrimFunc):
                one(func.body)
    elif isinstance(root, tirx.PrimFunc):
        one(root.body)
    else:
        one(root)


def param_buffers(func: Any) -> list[Any]:
    """The buffers of a PrimFunc's parameters, in order.

    From 0.26 on a buffer parameter *is* the buffer (``func.params[i].shape``); in 0.25 the
    parameters are handle variables and the buffers sit in ``func.buffer_map``.  The one
    accessor :func:`install` cannot back-fill (it needs the function), hence a function.
    Scalar parameters (no buffer) are left out.
    """
    buffer_map = getattr(func, "buffer_map", None)
    if buffer_map is not None:
        return [buffer_map[p] for p in func.params if p in buffer_map]
    return [p for p in func.params if hasattr(p, "shape")]
