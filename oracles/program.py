"""Facts the oracles read from the program itself rather than assume.

The accumulation dtype of a reduction is the dtype of the buffer its block writes, read from
the *unscheduled* PrimFunc: a program that declares an fp32 accumulator for fp16 inputs gets
the fp32 bound, so a kernel that silently rounds that accumulator to fp16 is caught.  Casts
inside the update expression are deliberately *not* consulted: the declared accumulator is
the contract, and a rounding the program (or a miscompilation) adds on top of it is exactly
what the bound must catch.

:meth:`Numerics.meaningless_reductions` lists the reductions whose error model cannot tell
much: ``k·u ≥ 1/2``, where ``γ_k ≥ 1`` lets the error reach ``Σ|t_i|`` (even a result of the
wrong sign would pass); from ``k·u ≥ 1`` on the verdict is inconclusive.  Generators switch
such cases to the exact-integer input mode.

bfloat16 as TVM computes it (:meth:`Numerics.compute_dtype`): where TVM's
``BF16ComputeLegalize`` applies — every target but CUDA from sm_80 on, whose bfloat16
arithmetic is native — bfloat16 arithmetic is float32 arithmetic, internal (allocated)
bfloat16 buffers are float32, and a value is rounded to bfloat16 only when stored to a
bfloat16 parameter.  So a reduction into an internal bfloat16 buffer accumulates in float32
(:meth:`Numerics.accumulation_dtype` says so) and element-wise bfloat16 arithmetic runs in
float32 — literals included: ``T.bfloat16(1021)`` is the float32 1021 in the kernel, not
the bfloat16 1020 (``tests/test_emulate.py`` checks it).  The buffers a schedule adds
(``cache_write``, ``reindex``, ``rfactor``) are internal, so this holds for them.  One
primitive moves the accumulation into a parameter: ``fuse_reduction_epilogue`` folds a bias
into the reduction's init, and the reduction block then writes the output itself.  Into a
bfloat16 output, the sum then accumulates in bfloat16 — the dtype the program declared for
it, so a legal result, which the float32 bound would report (errors of a few bfloat16 ulps).
Given the scheduled program, :meth:`Numerics.accumulation_dtype` says bfloat16 there.  An
accumulator declared wider than the output (float32 for float16) is the contract: moved into
a float16 output, it is still judged as float32, and the narrowing is a finding.

The fold also changes the sum itself (:meth:`Numerics.folds`): ``D = Σ t_i; Y = D + b``
becomes ``Y = b + Σ t_i``, the bias one more term of the reduction, rounded with every
partial sum.  That is legal — it is what the schedule asked for, and TVM documents the
linear ``Bias`` pattern as exact in real arithmetic — and its error is bounded by
``γ(|b| + Σ|t_i|)``, which may exceed the unfolded ``γΣ|t_i| + u|D + b|`` when ``D + b``
cancels: judged by the unfolded bound, 1-5 % of folded float32, float16 and bfloat16 cases
at K ≤ 5 were false alarms.  The workloads whose epilogue can be folded build their
reference with :func:`fuzzharness.generators.workloads.chain.reduction_then`.
"""

from __future__ import annotations

import dataclasses

from fuzzharness.oracles import numerics

REDUCE_ITER = 2  # IterVar.iter_type of a commutative reduction axis (kCommReduce)


@dataclasses.dataclass(frozen=True)
class BlockInfo:
    name: str
    write_dtypes: tuple[str, ...]
    reduction_extents: tuple[int, ...]
    writes_params: tuple[bool, ...] = ()  # per write: is the buffer a function parameter
    init_loads: bool = False  # its init, or its whole body when it has none, loads a buffer

    @property
    def is_reduction(self) -> bool:
        return bool(self.reduction_extents)

    @property
    def reduction_length(self) -> int:
        n = 1
        for e in self.reduction_extents:
            n *= e
        return n


def bf16_legalized(target: dict | None) -> bool:
    """Whether TVM computes bfloat16 in float32 for ``target`` (None: llvm)."""
    if not target or target.get("kind") != "cuda":
        return True
    arch = str(target.get("arch", "sm_90"))
    digits = "".join(ch for ch in arch[3:] if ch.isdigit())
    return not digits or int(digits) < 80


def blocks(func) -> dict[str, BlockInfo]:
    """Every named SBlock of ``func`` (the implicit root excluded)."""
    import tvm_ffi
    from tvm import s_tir
    from tvm.ir.expr import TensorLoad

    params = frozenset(str(p.name) for p in func.params)
    found: dict[str, BlockInfo] = {}

    def visit(block) -> None:
        if block.name_hint == "root":
            return
        red = tuple(
            int(iv.dom.extent) for iv in block.iter_vars if int(iv.iter_type) == REDUCE_ITER
        )
        dtypes = tuple(str(w.source.dtype) for w in block.writes)
        is_param = tuple(str(w.source.name) in params for w in block.writes)
        loads: list = []
        tvm_ffi.structural_walk(block.init if block.init is not None else block.body,
                                [(TensorLoad, loads.append)])
        found[str(block.name_hint)] = BlockInfo(str(block.name_hint), dtypes, red, is_param,
                                                bool(loads))

    tvm_ffi.structural_walk(func, [(s_tir.SBlock, visit)])
    return found


class Numerics:
    """What the reference needs to know about the program's arithmetic."""

    def __init__(self, func, target: dict | None = None, scheduled=None):
        """``func``: the unscheduled program (the contract); ``scheduled``: the same program
        after its schedule, when known (see the module doc on bfloat16)."""
        self._blocks = blocks(func)
        self._scheduled = blocks(scheduled) if scheduled is not None else {}
        self.bf16_in_fp32 = bf16_legalized(target)

    def compute_dtype(self, dtype: str) -> str:
        """The dtype arithmetic declared in ``dtype`` is computed in (see the module doc)."""
        return "float32" if dtype == "bfloat16" and self.bf16_in_fp32 else dtype

    def accumulation_dtype(self, block: str) -> str:
        """The dtype block ``block`` accumulates in: its write buffer's, float32 for an
        internal bfloat16 buffer where bfloat16 is computed in float32 — unless the schedule
        made the block write a parameter of that same dtype (the module doc)."""
        info = self._blocks.get(block)
        if info is None:
            raise KeyError(f"program has no block {block!r}; blocks: {sorted(self._blocks)}")
        if not info.is_reduction:
            raise ValueError(f"block {block!r} is not a reduction")
        dt = info.write_dtypes[0]
        internal = bool(info.writes_params) and not info.writes_params[0]
        moved = self._scheduled_reduction(block)
        if moved is not None and moved.writes_params[:1] == (True,) \
                and moved.write_dtypes[:1] == (dt,):
            internal = False  # accumulates in a parameter of the declared dtype
        return self.compute_dtype(dt) if internal else dt

    def reduction_length(self, block: str) -> int:
        return self._blocks[block].reduction_length

    def _scheduled_reduction(self, block: str) -> BlockInfo | None:
        """Reduction ``block`` in the scheduled program (``X_update`` after
        ``decompose_reduction``)."""
        return self._scheduled.get(block) or self._scheduled.get(f"{block}_update")

    def folds(self, block: str, epilogue: str | None) -> bool:
        """Whether the schedule folded block ``epilogue`` — the elementwise block that reads
        reduction ``block``'s result — into ``block`` (``fuse_reduction_epilogue``: its
        operand becomes the reduction's init, see the module doc).  Read from the scheduled
        program: ``epilogue`` is gone, ``block`` is still a reduction, and its init loads a
        buffer (or, after ``decompose_reduction``, the separate ``X_init`` block does) where
        the declared init stores a constant.  A gone epilogue alone is not enough: dlight
        inlines one into a unit reduction whose reduction axis ``transform_block_layout``
        removed, adding the operand in the init *and* in the body (the known bug
        transform-block-layout-keeps-init-without-reduction)."""
        red = self._scheduled_reduction(block)
        init = self._scheduled.get(f"{block}_init")
        return (red is not None and red.is_reduction and epilogue in self._blocks
                and epilogue not in self._scheduled
                and (red.init_loads if red.name == block else init is not None and init.init_loads))

    @property
    def block_names(self) -> list[str]:
        return sorted(self._blocks)

    def reductions(self) -> list[BlockInfo]:
        return [b for _, b in sorted(self._blocks.items()) if b.is_reduction]

    def meaningless_reductions(self) -> list[str]:
        """Reductions with a float accumulator and ``k·u ≥ 1/2`` (γ_k ≥ 1)."""

        out = []
        for b in self.reductions():
            acc = b.write_dtypes[0]
            if numerics.is_float(acc) and b.reduction_length * numerics.op_u(acc) >= 0.5:
                out.append(f"{b.name}: {b.reduction_length} terms in {acc}")
        return out
