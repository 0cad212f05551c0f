"""Block signatures: a hashable description of a block's arithmetic (:mod:`fuzzharness.oracles.order`).

Two blocks with equal signatures compute the same operations on the same operands in the same
dtypes, whatever their loops and names (see :mod:`fuzzharness.oracles.order`, point 1); a copy
block and a constant initialisation are recognized by shape.
"""

from __future__ import annotations

from typing import Any


class Unsure(Exception):
    """The analysis met something it does not model: answer "not preserved"."""

# -- block signatures ------------------------------------------------------------------------

CHILD_ATTRS = ("a", "b", "value", "condition", "true_value", "false_value", "args", "indices",
                "seq", "then_case", "else_case", "body")


def op_signature(node, iters: list, lets: dict | None = None, params: frozenset | None = None) -> Any:
    """A hashable description of ``node``'s arithmetic (see the module docstring, point 1)."""
    from tvm import tirx

    lets = {} if lets is None else lets
    if node is None:
        return None
    if isinstance(node, tirx.IntImm | tirx.FloatImm):
        return (type(node).__name__, str(node.ty), float(node.value))
    if isinstance(node, tirx.Var):
        for pos, iv in enumerate(iters):
            if iv.var.same_as(node):
                return ("iter", pos)
        for v, idx in lets.items():
            if v.same_as(node):
                return ("let", idx)
        raise Unsure(f"free variable {node} in a block body")
    if type(node).__name__ in ("TensorLoad", "BufferLoad"):
        buf = node.source if hasattr(node, "source") else node.buffer
        return ("load", legal_dtype(buf, params), tuple(op_signature(i, iters, lets, params) for i in node.indices))
    if isinstance(node, tirx.BufferStore):
        return ("store", legal_dtype(node.buffer, params), op_signature(node.value, iters, lets, params),
                tuple(op_signature(i, iters, lets, params) for i in node.indices))
    if type(node).__name__ == "Bind":
        lets[node.var] = len(lets)
        return ("bind", str(node.var.ty), op_signature(node.value, iters, lets, params))
    if isinstance(node, list | tuple) or type(node).__name__ == "Array":
        return tuple(op_signature(x, iters, lets, params) for x in node)
    parts: list[Any] = [type(node).__name__]
    ty = getattr(node, "ty", None)
    if ty is not None:
        parts.append(str(ty))
    op = getattr(node, "op", None)
    if op is not None:
        parts.append(str(getattr(op, "name", op)))
    for attr in CHILD_ATTRS:
        if hasattr(node, attr):
            child = getattr(node, attr)
            if isinstance(child, str | int | float):
                parts.append((attr, child))
            else:
                parts.append((attr, op_signature(child, iters, lets, params)))
    return tuple(parts)


def legal_dtype(buf, params: frozenset | None) -> str:
    """A buffer's dtype as TVM's llvm code holds it: bfloat16 buffers other than parameters are
    float32 after ``BF16ComputeLegalize`` (so a ``cache_write`` or ``reindex`` of a bfloat16
    accumulator accumulates in float32 and rounds once, on the copy to the parameter)."""
    dt = str(buf.dtype)
    if dt == "bfloat16" and params is not None and str(buf.name) not in params:
        return "float32"
    return dt


def block_signature(block, params: frozenset | None = None) -> Any:
    iters = list(block.iter_vars)
    return (
        tuple((int(iv.iter_type), int(iv.dom.extent)) for iv in iters),
        op_signature(block.body, iters, None, params),
        op_signature(block.init, iters, None, params),
    )


def update_signature(block, params: frozenset | None = None) -> Any:
    iters = list(block.iter_vars)
    return (tuple((int(iv.iter_type), int(iv.dom.extent)) for iv in iters),
            op_signature(block.body, iters, None, params))


def is_copy(block) -> bool:
    from tvm import tirx

    if any(int(iv.iter_type) != 0 for iv in block.iter_vars) or block.init is not None:
        return False
    body = block.body
    return isinstance(body, tirx.BufferStore) and type(body.value).__name__ in ("TensorLoad", "BufferLoad")


def is_constant_init(block) -> bool:
    from tvm import tirx

    body = block.body
    return (all(int(iv.iter_type) == 0 for iv in block.iter_vars)
            and isinstance(body, tirx.BufferStore | tirx.SeqStmt)
            and all(isinstance(s, tirx.BufferStore) and isinstance(s.value, tirx.IntImm | tirx.FloatImm)
                    for s in (body.seq if isinstance(body, tirx.SeqStmt) else [body])))
