"""What a schedule offers right now: blocks, their iterators, the buffers they touch.

Proposals are made against the *current* structure (so that most are accepted), which means
looking at the function after every step.  :func:`analyse` walks the scheduled PrimFunc once
and returns plain facts; the :class:`~fuzzharness.generators.schedules.base.ScheduleState` caches them
for the duration of one step.

Facts, per block (the implicit ``root`` block excluded):

* iterators: kind (``S`` data-parallel, ``R`` reduction or anything else) and extent;
* reads / writes: buffer name and rank, in the block's own read/write region order — the
  order TVM's ``buffer_index`` arguments refer to;
* ``has_init`` (a reduction not yet decomposed), ``composite_index`` (some buffer access is
  indexed by an expression rather than a bare iterator or constant), ``composite_load``
  (the same, for reads);
* buffers it allocates.

Per function: parameter names (buffers that are function arguments) and allocated
(intermediate) buffers.  A buffer is *intermediate* iff some block allocates it; only those
can change scope, dtype or alignment, and only their producers can be inlined or moved.
"""

from __future__ import annotations

import dataclasses

DATA_PAR = 0  # IterVar.iter_type of a spatial iterator


@dataclasses.dataclass(frozen=True)
class Access:
    buffer: str
    ndim: int
    dtype: str


@dataclasses.dataclass(frozen=True)
class BlockFacts:
    name: str
    iter_kinds: tuple[str, ...]
    iter_extents: tuple[int | None, ...]
    reads: tuple[Access, ...]
    writes: tuple[Access, ...]
    has_init: bool
    composite_index: bool
    composite_load: bool
    allocs: tuple[str, ...]

    @property
    def is_reduction(self) -> bool:
        return "R" in self.iter_kinds

    def read_index(self, buffer: str) -> int | None:
        for i, a in enumerate(self.reads):
            if a.buffer == buffer:
                return i
        return None


@dataclasses.dataclass(frozen=True)
class FunctionFacts:
    blocks: dict[str, BlockFacts]  # blocks with a unique name (only those can be looked up)
    params: frozenset[str]
    intermediates: frozenset[str]
    #: blocks inside another block's ``T.init`` (blockize makes them): TVM's get_sblock fails
    #: an internal check on them (known bug get-sblock-of-block-inside-init), so they are
    #: sites only at the known-site weight (ScheduleState.facts)
    init_blocks: dict[str, BlockFacts] = dataclasses.field(default_factory=dict)

    def with_init_blocks(self) -> FunctionFacts:
        return dataclasses.replace(self, blocks={**self.blocks, **self.init_blocks})

    def names(self, pred=None) -> list[str]:
        """Sorted block names (optionally those satisfying ``pred(facts)``): draw order."""
        return sorted(n for n, b in self.blocks.items() if pred is None or pred(b))

    def producers(self, buffer: str) -> list[str]:
        return sorted(n for n, b in self.blocks.items() if any(w.buffer == buffer for w in b.writes))

    def consumers(self, buffer: str) -> list[str]:
        return sorted(n for n, b in self.blocks.items() if any(r.buffer == buffer for r in b.reads))

    def writes_intermediate(self, b: BlockFacts) -> bool:
        return any(w.buffer in self.intermediates for w in b.writes)

    def reads_intermediate(self, b: BlockFacts) -> bool:
        return any(r.buffer in self.intermediates for r in b.reads)


def _is_simple_index(e) -> bool:
    from tvm import tirx

    return isinstance(e, tirx.Var | tirx.IntImm)


def analyse(func) -> FunctionFacts:
    import tvm_ffi
    from tvm import s_tir, tirx
    from tvm.ir.expr import TensorLoad  # a BufferLoad; tirx.BufferLoad is only a constructor

    blocks: dict[str, BlockFacts] = {}
    duplicates: set[str] = set()
    intermediates: set[str] = set()
    in_init: set[str] = set()  # blocks inside another block's T.init (blockize makes them)

    def visit_block(block) -> None:
        for buf in block.alloc_buffers:
            intermediates.add(str(buf.name))
        name = str(block.name_hint)
        if name == "root":
            return
        if name in blocks:  # TVM sometimes names two blocks alike; get_sblock refuses them
            duplicates.add(name)
        if block.init is not None:
            tvm_ffi.structural_walk(block.init, [
                (s_tir.SBlock, lambda b: in_init.add(str(b.name_hint)))])
        composite = {"load": False, "store": False}

        def check(kind):
            def visit(node) -> None:
                if not all(_is_simple_index(i) for i in node.indices):
                    composite[kind] = True
            return visit

        tvm_ffi.structural_walk(block.body, [(TensorLoad, check("load")),
                                             (tirx.BufferStore, check("store"))])

        def accesses(regions) -> tuple[Access, ...]:
            return tuple(Access(str(r.source.name), len(r.region), str(r.source.dtype))
                         for r in regions)

        blocks[name] = BlockFacts(
            name=name,
            iter_kinds=tuple("S" if int(iv.iter_type) == DATA_PAR else "R" for iv in block.iter_vars),
            iter_extents=tuple(_const(iv.dom.extent) for iv in block.iter_vars),
            reads=accesses(block.reads),
            writes=accesses(block.writes),
            has_init=block.init is not None,
            composite_index=composite["load"] or composite["store"],
            composite_load=composite["load"],
            allocs=tuple(str(b.name) for b in block.alloc_buffers),
        )

    tvm_ffi.structural_walk(func, [(s_tir.SBlock, visit_block)])
    params = frozenset(str(p.name) for p in func.params)
    # Blocks inside an init have no sref: get_sblock fails an internal check on them (known
    # bug get-sblock-of-block-inside-init); they are kept apart, drawn at a low weight.
    unique = {n: b for n, b in blocks.items() if n not in duplicates and n not in in_init}
    init = {n: b for n, b in blocks.items() if n not in duplicates and n in in_init}
    return FunctionFacts(unique, params, frozenset(intermediates), init)


def _const(e) -> int | None:
    from tvm import tirx

    return int(e.value) if isinstance(e, tirx.IntImm) else None
