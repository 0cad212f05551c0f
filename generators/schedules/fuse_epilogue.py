"""fuse_reduction_epilogue: a bias-add epilogue folded into the reduction's init.

Only the linear ``Bias`` pattern (``out = reduction + bias``) is proposed.  TVM documents that
the non-linear patterns it also accepts (BiasReLU, Clipping) *change the result* — the clamp
is applied per reduction step, not once — so fusing them is a request for different numbers,
not a miscompile; the harness would report its own wish as a TVM bug.  The Bias fold itself
reassociates ``(Σ t_i) + b`` into ``b + Σ t_i``; the workloads' references bound it as a sum of
k + 1 terms (:func:`fuzzharness.generators.workloads.chain.reduction_then`).
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


def is_bias_add(block_node) -> bool:
    """The block stores ``load + load`` (casts allowed) and computes nothing non-linear."""
    import tvm_ffi
    from tvm import tirx
    from tvm.ir.expr import Call, TensorLoad

    stores: list = []
    nonlinear: list = []
    tvm_ffi.structural_walk(block_node.body, [
        (tirx.BufferStore, stores.append),
        (tirx.Max, nonlinear.append), (tirx.Min, nonlinear.append),
        (tirx.Select, nonlinear.append), (Call, nonlinear.append),
    ])
    if len(stores) != 1 or nonlinear:
        return False
    value = stores[0].value
    while isinstance(value, tirx.Cast):
        value = value.value
    if not isinstance(value, tirx.Add):
        return False

    def load(e):
        while isinstance(e, tirx.Cast):
            e = e.value
        return isinstance(e, TensorLoad)

    return load(value.a) and load(value.b)


@register
class FuseReductionEpilogue(Primitive):
    name = "fuse_reduction_epilogue"
    weight = 2
    covers = ("fuse_reduction_epilogue",)

    def propose(self, state: ScheduleState):
        f = state.facts
        sites = []
        for r in f.names(lambda b: b.has_init):
            for w in f.blocks[r].writes:
                if w.buffer not in f.intermediates:
                    continue
                for e in f.consumers(w.buffer):
                    eb = f.blocks[e]
                    if e != r and not eb.is_reduction and len(eb.reads) == 2 \
                            and is_bias_add(state.sch.get(state.sch.get_sblock(e))):
                        sites.append((r, e))
        if not sites:
            return None
        r, e = state.draw(st.sampled_from(sites))
        return lambda: state.sch.fuse_reduction_epilogue(state.sch.get_sblock(r),
                                                         state.sch.get_sblock(e))
