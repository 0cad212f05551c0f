"""A deliberately wrong graph operator, for the graph tests (``FUZZHARNESS_PLUGINS``).

``test_wrong_relu`` claims to be ReLU — its reference and bound are ReLU's — but emits
``leakyrelu(x, 0.25)``: exactly what a miscompilation that mishandles negative inputs would
produce.  Its ``weight`` is 0, so random graphs never contain it; tests build graphs with it.
"""

from __future__ import annotations

from fuzzharness.generators.graphs.ops import register_op
from fuzzharness.generators.graphs.ops.elementwise import Unary

if "test_wrong_relu" not in __import__("fuzzharness.generators.graphs.ops", fromlist=["graph_ops"]).graph_ops:

    @register_op
    class WrongRelu(Unary):
        name = "test_wrong_relu"
        weight = 0
        chain = "relu"
        integer_exact = True
        relax_ops = ("nn.leakyrelu",)

        def emit(self, args, shapes, attrs, dtype):
            from tvm import relax

            return relax.op.nn.leakyrelu(args[0], 0.25)
