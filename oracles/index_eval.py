"""Integer index expressions evaluated over numpy arrays: the one evaluator behind the layout
relayout (:mod:`fuzzharness.execution.relayout`: an index map's coordinates) and the order
analysis (:mod:`fuzzharness.oracles.order`: a loop nest's reduction indices and predicates).

It knows the expressions index maps and schedule-made loop nests are built from — constants,
variables bound in ``env`` (matched with ``same_as``: ``Var.__eq__`` builds an expression),
casts, ``+ - *``, floordiv, floormod, min, max, comparisons, ``and``/``or``/``not`` — and
raises :class:`Unevaluable` for anything else, which its callers turn into their own
"cannot tell" (a harness limitation, never a TVM finding).
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


class Unevaluable(ValueError):
    """``expr`` cannot be evaluated: ``unbound`` (a variable ``env`` lacks) or ``kind`` (an
    expression kind the evaluator does not know)."""

    def __init__(self, expr: Any, why: str):
        super().__init__(f"{why}: {expr}")
        self.expr, self.why = expr, why


def evaluate(expr: Any, env: dict[Any, np.ndarray]) -> np.ndarray:
    """``expr`` over the arrays bound to its variables (broadcast as numpy does)."""
    from tvm import tirx

    if isinstance(expr, tirx.IntImm):
        return np.asarray(int(expr.value), dtype=np.int64)
    if isinstance(expr, tirx.Var):
        for var, value in env.items():
            if var.same_as(expr):
                return value
        raise Unevaluable(expr, "unbound")
    if isinstance(expr, tirx.Cast):
        return evaluate(expr.value, env)
    kind = type(expr).__name__
    if kind in _BINARY:
        return _BINARY[kind](evaluate(expr.a, env), evaluate(expr.b, env))
    if kind == "Not":
        return np.logical_not(evaluate(expr.a, env))
    raise Unevaluable(expr, "kind")
