"""The Relax program of a graph: one ``main`` function built with ``relax.BlockBuilder``.

``main`` takes the graph inputs in spec order and returns its outputs (one tensor, or a
tuple in spec order), with one dataflow binding per node named after it.  Relax infers every
binding's type itself; :func:`build_module` checks it against the graph model's own shape
inference, so a disagreement is caught at generation (a harness bug, or a Relax shape rule
that changed) rather than showing up as a wrong answer.
"""

from __future__ import annotations

from fuzzharness.generators.graphs.ops import graph_ops
from fuzzharness.generators.graphs.spec import Graph


class ModelMismatch(AssertionError):
    """Relax infers another shape or dtype than the graph model (a harness bug)."""


def build_module(graph: Graph):
    """The ``tvm.IRModule`` of ``graph`` (Relax, before any pass)."""
    from tvm import relax

    shapes = graph.shapes()
    params = [relax.Var(i["name"], relax.TensorType(shapes[i["name"]], graph.dtype))
              for i in graph.inputs]
    env = {p.name: p for p in params}
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            for node in graph.nodes:
                op = graph_ops[node.op]
                expr = op.emit([env[a] for a in node.args], [shapes[a] for a in node.args],
                               node.attrs, graph.dtype)
                var = bb.emit(expr, name_hint=node.name)
                ty = var.ty
                got = tuple(int(s) for s in ty.shape)
                if got != shapes[node.name] or str(ty.dtype) != graph.dtype:
                    raise ModelMismatch(f"{node.name} ({node.op}): Relax infers {got} "
                                        f"{ty.dtype}, the graph model {shapes[node.name]} "
                                        f"{graph.dtype}")
                env[node.name] = var
            outs = [env[o] for o in graph.outputs]
            result = bb.emit_output(outs[0] if len(outs) == 1 else relax.Tuple(outs))
        bb.emit_func_output(result)
    return bb.get()
