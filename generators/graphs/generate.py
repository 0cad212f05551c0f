"""Random graphs, valid by construction: start from one input, then add nodes one at a time.

Draw order (stable within a harness version; every draw goes through ``data.draw`` so a
graph is deterministic from its choice sequence and shrinks with Hypothesis):

1. the graph dtype (among the allowed labels);
2. the first input: an image ``(N, C, H, W)`` or a matrix/batch of matrices, with extents
   that are often odd (:func:`fuzzharness.generators.workloads.base.draw_extent`);
3. the number of node steps (1 .. ``max_nodes``); per step an operator from
   :func:`fuzzharness.generators.graphs.ops.menu` (every registered op, sorted, repeated ``weight``
   times — registering an op changes generation, a filter does not), whose ``draw`` adds the
   node (and the weights or operands it needs) or finds no site (the step is skipped, its
   draws stay in the sequence);
4. the outputs: every node nothing else uses, plus — sometimes — one intermediate that is
   also used (a value escaping a fusion group).

The result is validated (:meth:`Graph.shapes`) and pruned of anything no output needs.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzzharness.generators.draw import chance
from fuzzharness.generators.graphs.ops import DrawContext, graph_ops, menu
from fuzzharness.generators.graphs.ops.base import MAX_ELEMENTS, elements
from fuzzharness.generators.graphs.spec import DTYPES, Graph, InvalidGraph
from fuzzharness.generators.workloads.base import draw_extent

MAX_NODES = 6
ESCAPE_FRACTION = 0.2  # graphs with an intermediate that is also an output


def draw_graph(data: Any, dtypes: tuple[str, ...] | None = None, *,
               max_nodes: int = MAX_NODES) -> Graph:
    pool = [d for d in DTYPES if dtypes is None or d in dtypes] or list(DTYPES)
    dtype = data.draw(st.sampled_from(pool))
    ctx = DrawContext(data, dtype, [], [], {})
    if data.draw(st.sampled_from(["image", "matrix"])) == "image":
        shape = [data.draw(st.integers(1, 2)), draw_extent(data, 16),
                 draw_extent(data, 24), draw_extent(data, 24)]
    else:
        shape = [draw_extent(data, 48), draw_extent(data, 64)]
        if data.draw(st.booleans()):
            shape.insert(0, data.draw(st.integers(1, 4)))
    while elements(tuple(shape)) > MAX_ELEMENTS:  # keep the first input small
        i = shape.index(max(shape))
        shape[i] = max(1, shape[i] // 2)
    ctx.new_input("x", shape, data=True)
    menu_ = menu()
    for _ in range(data.draw(st.integers(1, max_nodes))):
        op = graph_ops[data.draw(st.sampled_from(menu_))]
        before = len(ctx.inputs)
        node = op.draw(ctx)
        try:
            if node is None:
                raise InvalidGraph("no site")
            shape_out = tuple(op.infer([ctx.shapes[a] for a in node.args], node.attrs))
            if elements(shape_out) > 4 * MAX_ELEMENTS:
                raise InvalidGraph("too large")
        except InvalidGraph:
            for spec in ctx.inputs[before:]:  # the step leaves nothing behind
                ctx.shapes.pop(spec["name"], None)
            del ctx.inputs[before:]
            continue
        ctx.nodes.append(node)
        ctx.shapes[node.name] = shape_out
    if not ctx.nodes:  # every step found no site: a lone activation keeps the graph valid
        node = ctx.node("relu", [ctx.inputs[0]["name"]], {})
        ctx.nodes.append(node)
        ctx.shapes[node.name] = ctx.shapes[ctx.inputs[0]["name"]]
    used = {a for n in ctx.nodes for a in n.args}
    outputs = [n.name for n in ctx.nodes if n.name not in used]
    inner = [n.name for n in ctx.nodes if n.name in used]
    if chance(data, ESCAPE_FRACTION) and inner:
        outputs.insert(0, inner[data.draw(st.integers(0, len(inner) - 1))])
    graph = Graph(dtype, ctx.inputs, ctx.nodes, outputs)
    graph.shapes()  # validates: a failure here is a generator bug
    return graph.live()
