"""Integer index expressions evaluated over numpy arrays: the one evaluator behind the layout
relayout (:mod:`fuzzharness.execution.relayout`: an index map's coordinates) and the order
analysis (:mod:`fuzzharness.oracles.order`: a loop nest's reduction indices and predicates).

It knows the expressions index maps and schedule-made loop nests are built from — constants,
variables bound in ``env`` (matched with ``same_as``: ``Var.__eq__`` builds an expression),
casts, ``+ - *``, floordiv, floormod, min, max, comparisons, ``and``/``or``/``not`` — and
raises :class:`Unevaluable` for anything else, which its callers turn into their own
"cannot tell" (a harness limitation, never a TVM finding).  Given ``loads`` (a callback for
each ``BufferLoad``) it also evaluates a block's value expressions — float constants,
``Select`` and the elementwise math calls of :data:`_CALLS` — for the site classes'
question "is padding with 0 neutral for this reduction?"
(:mod:`fuzzharness.generators.schedules.site_classes`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
    "FloorDiv": np.floor_divide, "FloorMod": np.mod, "Min": np.minimum, "Max": np.maximum,
    "LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
    "EQ": np.equal, "NE": np.not_equal, "And": np.logical_and, "Or": np.logical_or,
}
#: TVM's elementwise math intrinsics (``tirx.exp`` …) by their numpy twins
_CALLS = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
          "tanh": np.tanh, "fabs": np.abs, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
          "pow": np.power}


class Unevaluable(ValueError):
    """``expr`` cannot be evaluated: ``unbound`` (a variable ``env`` lacks) or ``kind`` (an
    expression kind the evaluator does not know)."""

    def __init__(self, expr: Any, why: str):
        super().__init__(f"{why}: {expr}")
        self.expr, self.why = expr, why


def evaluate(expr: Any, env: dict[Any, np.ndarray], loads: Any = None) -> np.ndarray:
    """``expr`` over the arrays bound to its variables (broadcast as numpy does);
    ``loads(load)``: the value of a ``BufferLoad`` (without it a load is unevaluable)."""
    from tvm import tirx
    from tvm.ir.expr import TensorLoad

    if isinstance(expr, tirx.IntImm):
        return np.asarray(int(expr.value), dtype=np.int64)
    if isinstance(expr, tirx.FloatImm):
        return np.asarray(float(expr.value))
    if isinstance(expr, TensorLoad) and loads is not None:  # tirx.BufferLoad builds one
        return np.asarray(loads(expr))
    if isinstance(expr, tirx.Select):
        return np.where(evaluate(expr.condition, env, loads), evaluate(expr.true_value, env, loads),
                        evaluate(expr.false_value, env, loads))
    op = getattr(getattr(expr, "op", None), "name", "")
    if op and _CALLS.get(op.rsplit(".", 1)[-1]) is not None:
        with np.errstate(all="ignore"):
            return _CALLS[op.rsplit(".", 1)[-1]](*[evaluate(a, env, loads) for a in expr.args])
    if isinstance(expr, tirx.Var):
        for var, value in env.items():
            if var.same_as(expr):
                return value
        raise Unevaluable(expr, "unbound")
    if isinstance(expr, tirx.Cast):
        return evaluate(expr.value, env, loads)
    kind = type(expr).__name__
    if kind in _BINARY:
        with np.errstate(divide="ignore", invalid="ignore"):
            return _BINARY[kind](evaluate(expr.a, env, loads), evaluate(expr.b, env, loads))
    if kind == "Not":
        return np.logical_not(evaluate(expr.a, env, loads))
    if kind == "Div" and "float" in str(getattr(expr, "ty", "")):  # ints: truncdiv
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.true_divide(evaluate(expr.a, env, loads), evaluate(expr.b, env, loads))
    raise Unevaluable(expr, "kind")
