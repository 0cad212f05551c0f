"""The feature census: which program features a case put in front of TVM's TIR pipeline.

A fuzzer finds only what it generates.  The census says, per case, which of the features
where TVM's numerical bugs live the case really exercised — read from IR in the worker,
not from what the generator meant to do (a proposed ``vectorize`` may be rejected, or
scalarised by lowering).  The program is read at the two ends of the lowering TVM runs:

* its **input**, the scheduled program (``sch.mod``, what the pipeline must lower), for the
  structure the pipeline consumes and erases: loop kinds, block predicates, pipeline
  annotations, reduction blocks;
* its **output**, the lowered modules (host and device, after the default TIR pipeline and
  finalisation), for what lowering produced: vector stores, allocated buffers and scopes.

Features are short strings ``family:value``; a case has each at most once:

``vector_store:<dtype>x<lanes>``   a store of a vector value in the lowered code
``scope:<scope>``                   a buffer in a scope other than ``global`` in the lowered code
                                    (``local``, ``shared``, ``global.texture``, ...): allocated
                                    there, or a kernel parameter in it; ``scope:texture`` when
                                    any of the texture scopes is there
``pipeline:stages=<n>``             a loop with ``software_pipeline_stage`` (``n`` = distinct
                                    stages)
``pipeline:versions=<k>``           buffer versions InjectSoftwarePipeline keeps for a staged
                                    copy: (latest consumer stage − copy stage) + 1, at least 2
                                    with ``double_buffer_scope``
``predicate:<role>``                a block under a non-trivial predicate (what a non-dividing
                                    ``split`` leaves): ``producer`` (a copy into an intermediate
                                    buffer: a cache stage), ``write_back`` (a copy from an
                                    intermediate buffer into a parameter), ``consumer`` (any other
                                    block: it computes)
``reduction_under:<kinds>``         a reduction block under a ``parallel`` loop, a ``vectorized``
                                    loop, or both (``parallel+vectorized``)
``unroll:odd`` / ``unroll:even``    an explicitly unrolled loop of constant extent ≥ 2
``rfactor:partial``                 a reduction into partials (the ``*_rf`` block ``rfactor``
                                    makes)
``accumulate:<in>-><acc>``          a float reduction's input dtype and its accumulator's dtype
                                    (``float16->float32``: wider; ``float16->float16``: same)

The census is best effort: it never raises (an error in it must not turn a verdict into a
harness error); a failure is recorded as the feature ``census:error``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

REDUCE = 2  # IterVar.iter_type of a commutative reduction axis
STAGE, SCOPE_ANNOTATION = "software_pipeline_stage", "double_buffer_scope"
ERROR = "census:error"

#: the features the census goal names (docs/campaign-output.md "Feature census"): one per family of the
#: module docstring — for vector stores the full-register widths of 128-bit fp16 and 256-bit
#: fp32 vectors — each wanted in ≥ 2 % of a target's lowered cases where the target can have
#: it (census_table.py), texture scopes in ≥ 10 % of a default campaign with OpenCL
GOALS: tuple[str, ...] = (
    "vector_store:float16x8", "vector_store:float32x8",
    "scope:local", "scope:shared", "scope:texture",
    "pipeline:stages=2", "pipeline:versions=2",
    "predicate:producer", "predicate:consumer", "predicate:write_back",
    "reduction_under:parallel", "reduction_under:vectorized",
    "reduction_under:parallel+vectorized",
    "unroll:odd", "unroll:even", "rfactor:partial",
    "accumulate:float16->float16", "accumulate:float16->float32",
)


def census(scheduled: Any, lowered: Any) -> list[str]:
    """The sorted features of one case (see the module docstring); never raises."""
    try:
        found: set[str] = set()
        if scheduled is not None:
            for func in _prim_funcs(scheduled):
                found |= scheduled_features(func)
        for mod in lowered_modules(lowered):
            for func in _prim_funcs(mod):
                found |= lowered_features(func)
        return sorted(found)
    except Exception:  # noqa: BLE001 - best effort, see the module docstring
        return [ERROR]


# -- the lowered program ----------------------------------------------------------------------
def lowered_modules(lowered: Any) -> list[Any]:
    """Every IRModule inside what a backend's ``lower`` returned (a tuple, a dataclass, a
    dict of device modules, or a module)."""
    import tvm

    out: list[Any] = []

    def collect(obj: Any, depth: int = 0) -> None:
        if depth > 3 or obj is None:
            return
        if isinstance(obj, tvm.IRModule):
            out.append(obj)
        elif isinstance(obj, dict):
            for v in obj.values():
                collect(v, depth + 1)
        elif isinstance(obj, list | tuple):
            for v in obj:
                collect(v, depth + 1)
        elif dataclasses.is_dataclass(obj):
            for f in dataclasses.fields(obj):
                collect(getattr(obj, f.name), depth + 1)

    collect(lowered)
    return out


def lowered_features(func: Any) -> set[str]:
    import tvm_ffi
    from tvm import tirx

    from fuzzharness.core.tvm_compat import param_buffers

    found: set[str] = set()

    def on_store(store: Any) -> None:
        dtype = str(store.value.ty)
        if "x" in dtype:  # float16x8
            found.add(f"vector_store:{dtype}")

    def on_buffer(buf: Any) -> None:
        scope = str(buf.scope())
        if scope != "global":
            found.add(f"scope:{scope}")
        if scope.startswith("global.texture"):
            found.add("scope:texture")  # any of the three texture scopes

    def on_decl(node: Any) -> None:
        on_buffer(node.buffer)

    entries: list = [(tirx.BufferStore, on_store)]
    for name in ("DeclBuffer", "AllocBuffer"):
        if hasattr(tirx, name):
            entries.append((getattr(tirx, name), on_decl))
    tvm_ffi.structural_walk(func.body, entries)
    for buf in param_buffers(func):
        on_buffer(buf)
    return found


# -- the scheduled program ---------------------------------------------------------------------
def scheduled_features(func: Any) -> set[str]:
    import tvm_ffi
    from tvm import s_tir, tirx

    from fuzzharness.core.tvm_compat import param_buffers

    found: set[str] = set()
    params = {str(b.name) for b in param_buffers(func)}

    def on_realize(realize: Any) -> None:
        block = realize.block
        if str(block.name_hint) == "root":
            return
        pred = realize.predicate
        if not (isinstance(pred, tirx.IntImm) and int(pred.value) == 1):
            found.add(f"predicate:{_role(block, params)}")
        if any(int(iv.iter_type) == REDUCE for iv in block.iter_vars):
            found.update(_reduction_facts(block))

    def on_for(loop: Any) -> None:
        kind = loop.kind
        if kind == tirx.ForKind.UNROLLED and isinstance(loop.extent, tirx.IntImm):
            n = int(loop.extent.value)
            if n >= 2:
                found.add("unroll:odd" if n % 2 else "unroll:even")
        if STAGE in loop.annotations:
            found.update(_pipeline_facts(loop))

    tvm_ffi.structural_walk(func, [(s_tir.SBlockRealize, on_realize), (tirx.For, on_for)])
    found.update(_reductions_under(func))
    return found


def _is_copy(block: Any) -> bool:
    from tvm import tirx

    body = block.body
    if not isinstance(body, tirx.BufferStore):
        return False
    value = body.value
    while isinstance(value, tirx.Cast):
        value = value.value
    return type(value).__name__ in ("TensorLoad", "BufferLoad")


def _role(block: Any, params: set[str]) -> str:
    """``producer`` / ``write_back`` / ``consumer`` (see the module docstring)."""
    if _is_copy(block):
        writes = {str(w.source.name) for w in block.writes}
        reads = {str(r.source.name) for r in block.reads}
        if writes and not writes & params:
            return "producer"
        if writes & params and reads and not reads & params:
            return "write_back"
    return "consumer"


def _reduction_facts(block: Any) -> set[str]:
    out: set[str] = set()
    name = str(block.name_hint)
    if name.endswith("_rf") or "_rf_" in name:
        out.add("rfactor:partial")
    if not block.writes:
        return out
    acc = str(block.writes[0].source.dtype)
    if not acc.startswith(("float", "bfloat")):
        return out
    ins = sorted({str(r.source.dtype) for r in block.reads
                  if str(r.source.name) != str(block.writes[0].source.name)})
    for dtype in ins:
        if dtype.startswith(("float", "bfloat")):
            out.add(f"accumulate:{dtype}->{acc}")
    return out


def _pipeline_facts(loop: Any) -> set[str]:
    """Stages of a pipelined loop and the versions of its staged copies."""
    import tvm_ffi
    from tvm import s_tir, tirx

    stages = [int(s) for s in loop.annotations[STAGE]]
    out = {f"pipeline:stages={len(set(stages))}"}
    body = loop.body
    stmts = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    if len(stmts) != len(stages):
        return out
    for i, stmt in enumerate(stmts):
        blocks: list = []
        tvm_ffi.structural_walk(stmt, [(s_tir.SBlock, blocks.append)])
        copies = [b for b in blocks if SCOPE_ANNOTATION in b.annotations]
        if not copies:
            continue
        later = [s for j, s in enumerate(stages) if j != i and s >= stages[i]]
        versions = (max(later) - stages[i] + 1) if later else 1
        out.add(f"pipeline:versions={max(versions, 2)}")
    return out


def _reductions_under(func: Any) -> set[str]:
    """``reduction_under:*`` from the reduction blocks under parallel / vectorized loops."""
    import tvm_ffi
    from tvm import s_tir, tirx

    under: dict[str, set[str]] = {"parallel": set(), "vectorized": set()}
    kinds = {tirx.ForKind.PARALLEL: "parallel", tirx.ForKind.VECTORIZED: "vectorized"}

    def on_for(loop: Any) -> None:
        label = kinds.get(loop.kind)
        if label is None:
            return

        def on_block(block: Any) -> None:
            if any(int(iv.iter_type) == REDUCE for iv in block.iter_vars):
                under[label].add(str(block.name_hint))

        tvm_ffi.structural_walk(loop.body, [(s_tir.SBlock, on_block)])

    tvm_ffi.structural_walk(func, [(tirx.For, on_for)])
    out: set[str] = set()
    par, vec = under["parallel"], under["vectorized"]
    if par:
        out.add("reduction_under:parallel")
    if vec:
        out.add("reduction_under:vectorized")
    if par & vec:
        out.add("reduction_under:parallel+vectorized")
    return out


def _prim_funcs(mod: Any) -> list[Any]:
    from tvm import tirx

    if isinstance(mod, tirx.PrimFunc):
        return [mod]
    return [f for _, f in mod.functions.items() if isinstance(f, tirx.PrimFunc)]
