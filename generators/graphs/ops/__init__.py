"""Graph operators.  Importing this package registers every op family module below."""

from fuzzharness.generators.graphs.ops import (  # noqa: F401  (registration)
    conv,
    elementwise,
    matmul,
    normalization,
    pool,
    shape,
)
from fuzzharness.generators.graphs.ops.base import (
    DrawContext,
    GraphOp,
    graph_ops,
    menu,
    register_op,
)

__all__ = ["DrawContext", "GraphOp", "graph_ops", "menu", "register_op"]
