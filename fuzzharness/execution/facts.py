"""Facts for bucketing failures, computed in the worker where the TVM objects still exist.

Two things feed a bucket signature (:mod:`fuzzharness.buckets.signatures`) besides the case itself:

* :func:`throw_site` — where inside TVM an exception was thrown: the innermost C++ frame's
  source file (relative to TVM's ``src/``) and function, without line numbers or argument
  lists, e.g. ``tirx/transform/storage_rewrite.cc:tvm::tirx::StoragePlanRewriter::Mutate_``.
  It names the failing pass more reliably than the message text, and survives TVM upgrades
  that move lines.
* :func:`schedule_facts` — facts about the *scheduled* loop nest of a case that computed a
  wrong answer (which has no error text to go by).  Each fact is a short name; the list is
  sorted.  Current facts:

  ``loop_mixes_spatial_and_reduction``  one loop variable feeds both a spatial and a
      reduction iterator of the same block (e.g. ``fuse`` of a spatial and a reduction loop).
  ``reduction_init_repeated``  two or more blocks with a ``T.init()`` write the same buffer
      (e.g. ``loop_partition`` of a reduction loop: every piece resets the accumulator).
  ``reduction_init_missing``  a block accumulates into a buffer (``X[i] = X[i] + ...``, or a
      ``T.let`` that reads ``X`` before ``X`` is stored, as in argmax) that
      no block initializes — no ``T.init()`` writes it and no other block writes it without
      reading it (``decompose_reduction``'s init block does): the sum starts from whatever
      the memory held (e.g. ``blockize`` of a reduction with a sibling block drops the init).
  ``alloc_in_vectorized_loop``  TVM's own allocation planning
      (``PlanAndUpdateBufferAllocationLocation``) places a buffer's allocation inside a
      vectorized loop of more than one lane — whatever route put a producer there
      (compute_at, reverse_compute_at, cache_read/cache_write, read_at/write_at, rfactor).
      TVM 0.27 then compacts the buffer to one iteration's region and does not widen it: all
      lanes share one address.  A fact of the *mechanism*, not of the schedule's calls.

* :func:`frontend_facts` — facts of the program *before* any schedule step (a graph's
  fused PrimFuncs as legalization and ``FuseTIR`` made them), so they name what the
  frontend did, never a primitive.  Current fact:

  ``read_region_incomplete``  a block loads a buffer element that lies, for every value of
      its iterators, outside each read region it declares (``FuseTIR`` merging two
      parameters bound to one tensor keeps one of their regions).  Primitives trust the
      declared regions (``read_at`` copies, ``cache_read``/``compute_at`` order by them), so
      a schedule then reads an element nothing copied or produced yet.

* :func:`located_facts` — facts of a *defect* a schedule step leaves in the program, checked
  on every prefix of a trace by :mod:`fuzzharness.minimize.step_bisect` to find the step that
  made it (so they are not bucket facts: the bucket key stays as it was).  Current facts:

  ``binding_outside_domain``  a block without a predicate whose iterator bindings leave
      the block's declared domain over the ranges of its loops: the block runs where it
      must not (``pad_einsum`` enlarges a loop another block shares; a ``cache_write``
      write-back or a ``reindex_cache_*`` copy loses the ``T.where`` a split gave its loop;
      ``rfactor`` of a predicated loop).  No TVM primitive may leave it: a block's domain
      is its contract.  Its stores land past a buffer (heap damage) or on a neighbour's
      element (garbage), depending on where the buffer lies — one defect, either symptom.
  ``init_without_reduction_iterator``  a block with a ``T.init()`` none of whose iterators is
      a reduction iterator: TVM runs such an init at *every* iteration, and primitives that
      read the iterator types take the block for a spatial one (``transform_block_layout``
      retypes a reduction iterator of extent 1 as spatial; ``pad_einsum`` then pads it and
      each padded iteration resets the sum; ``reverse_compute_inline`` puts an epilogue into
      the init).  No program the workloads write has one, and a primitive that keeps the
      init must keep a reduction iterator to run it once.

All are best effort: they never raise (a triage bug must not turn a finding into a
harness error) and return empty values when they cannot tell.
"""

from __future__ import annotations

import re
from collections import Counter

_ARGS = re.compile(r"\(.*\)\s*(const)?\s*$")


def throw_site(exc: BaseException) -> str:
    """``file:function`` of the innermost TVM frame of ``exc``'s traceback ("" if none)."""
    try:
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append((tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name))
            tb = tb.tb_next
        for filename, func in reversed(frames):
            norm = filename.replace("\\", "/")
            if norm.endswith((".cc", ".h", ".cpp")):
                return site_of_frame(norm, func)
        for filename, func in reversed(frames):
            norm = filename.replace("\\", "/")
            for pkg in ("/tvm/", "/tvm_ffi/"):
                if pkg in norm:
                    return f"{pkg.strip('/')}/{norm.rsplit(pkg, 1)[1]}:{func}"
    except Exception:  # noqa: BLE001 - best effort
        pass
    return ""


def site_of_frame(filename: str, func: str) -> str:
    """``file:function`` of one native frame: the file relative to TVM's ``src/`` (or its
    base name; empty when unknown), the function without its argument list."""
    norm = filename.replace("\\", "/")
    if not norm.endswith((".cc", ".h", ".cpp")):
        norm = ""
    path = norm.split("/src/", 1)[1] if "/src/" in norm else norm.rsplit("/", 1)[-1]
    return f"{path}:{_function_name(func)}"


def _function_name(signature: str) -> str:
    """``tvm::tirx::X::Mutate_`` from ``virtual Ret<T> tvm::tirx::X::Mutate_(const A*, B)``."""
    head = _ARGS.sub("", signature.strip())
    depth, cut = 0, 0
    for i, ch in enumerate(head):  # the last top-level space separates return type and name
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == " " and depth == 0:
            cut = i + 1
    return head[cut:] or signature[:120]


def schedule_facts(mod) -> list[str]:
    try:
        return sorted(_facts(mod))
    except Exception:  # noqa: BLE001 - best effort
        return []


def _facts(mod) -> set[str]:
    import tvm_ffi
    from tvm import s_tir, tirx

    facts: set[str] = set()

    init_writes: Counter[int] = Counter()  # buffer handle hash → blocks with an init writing it

    def on_realize(realize) -> None:
        kinds: dict[int, set[int]] = {}  # keyed by handle hash: Var.__eq__ builds an expression
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=False):
            found: list = []
            tvm_ffi.structural_walk(value, [(tirx.Var, found.append)])
            for v in found:
                kinds.setdefault(hash(v), set()).add(int(iv.iter_type))
        if any(0 in k and 2 in k for k in kinds.values()):
            facts.add("loop_mixes_spatial_and_reduction")
        if realize.block.init is not None:
            init_writes.update(hash(region.source) for region in realize.block.writes)

    for _, func in mod.functions.items():
        tvm_ffi.structural_walk(func, [(s_tir.SBlockRealize, on_realize)])
    if any(n >= 2 for n in init_writes.values()):
        facts.add("reduction_init_repeated")
    if _reduction_init_missing(mod):
        facts.add("reduction_init_missing")
    if _alloc_in_vectorized_loop(mod):
        facts.add("alloc_in_vectorized_loop")
    return facts


def frontend_facts(funcs) -> list[str]:
    """The frontend facts (see the module docstring) of the unscheduled PrimFuncs ``funcs``."""
    try:
        return ["read_region_incomplete"] if any(_read_region_incomplete(f) for f in funcs) else []
    except Exception:  # noqa: BLE001 - best effort
        return []


def _read_region_incomplete(func) -> bool:
    import tvm
    import tvm_ffi
    from tvm import s_tir
    from tvm.ir.expr import TensorLoad  # tvm_compat: tirx.BufferLoad before 0.27

    analyzer = tvm.sym.Analyzer()

    def outside(index, rng) -> bool:  # provably, whatever the iterators are
        return analyzer.can_prove(index < rng.min) or analyzer.can_prove(index >= rng.min + rng.extent)

    blocks: list = []
    tvm_ffi.structural_walk(func.body, [(s_tir.SBlock, blocks.append)])
    for block in blocks:
        loads: list = []
        tvm_ffi.structural_walk(block.body, [(TensorLoad, loads.append)])
        for load in loads:
            regions = [r.region for r in block.reads if r.source.same_as(load.source)]
            if regions and all(any(outside(i, rng) for i, rng in zip(load.indices, region, strict=False))
                               for region in regions):
                return True
    return False


#: facts of a defect a schedule step makes (:func:`located_facts`)
BINDING_OUTSIDE_DOMAIN = "binding_outside_domain"
INIT_WITHOUT_REDUCTION = "init_without_reduction_iterator"
READ_UNDECLARED = "read_undeclared_buffer"


def located_facts(mod) -> list[str]:
    """The located facts (see the module docstring) of ``mod``'s scheduled PrimFuncs, sorted."""
    out = []
    for fact, holds in ((BINDING_OUTSIDE_DOMAIN, _binding_outside_domain),
                        (INIT_WITHOUT_REDUCTION, _init_without_reduction_iterator),
                        (READ_UNDECLARED, _read_undeclared_buffer)):
        try:
            if holds(mod):
                out.append(fact)
        except Exception:  # noqa: BLE001 - best effort
            continue
    return out


def _read_undeclared_buffer(mod) -> bool:
    import tvm_ffi
    from tvm import s_tir

    found: list = []

    def on_block(block) -> None:
        inner: list = []
        tvm_ffi.structural_walk(block.body, [(s_tir.SBlock, inner.append)])
        if inner:  # a leaf's regions are the ones primitives read; an outer block sums them
            return
        declared = {hash(r.source) for r in (*block.reads, *block.writes)}
        declared |= {hash(b) for b in block.alloc_buffers}
        loaded = [b for stmt in (block.body, block.init) if stmt is not None
                  for b in _loaded_buffers(stmt)]
        if any(b is not None and hash(b) not in declared for b in loaded):
            found.append(block)

    for _, func in mod.functions.items():
        tvm_ffi.structural_walk(func, [(s_tir.SBlock, on_block)])
    return bool(found)


def _init_without_reduction_iterator(mod) -> bool:
    import tvm_ffi
    from tvm import s_tir, tirx

    found: list = []

    def on_block(block) -> None:
        if block.init is not None and not any(
                iv.iter_type == tirx.IterVar.CommReduce for iv in block.iter_vars):
            found.append(block)

    for _, func in mod.functions.items():
        tvm_ffi.structural_walk(func, [(s_tir.SBlock, on_block)])
    return bool(found)


def _binding_outside_domain(mod) -> bool:
    import tvm
    import tvm_ffi
    from tvm import s_tir, tirx

    enclosing: dict[int, list] = {}  # realize handle hash → the loops around it

    def on_for(loop) -> None:
        inner: list = []
        tvm_ffi.structural_walk(loop.body, [(s_tir.SBlockRealize, inner.append)])
        for r in inner:
            enclosing.setdefault(hash(r), []).append(loop)

    def outside(realize) -> bool:
        pred = realize.predicate
        if not (isinstance(pred, tirx.IntImm) and int(pred) == 1):
            return False  # guarded: whether the guard suffices is not asked here
        analyzer = tvm.sym.Analyzer()
        for loop in enclosing.get(hash(realize), []):
            analyzer.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=False):
            lo, extent = iv.dom.min, iv.dom.extent
            if not (isinstance(lo, tirx.IntImm) and isinstance(extent, tirx.IntImm)):
                continue  # a symbolic domain: no constant to compare with
            bound = analyzer.const_int_bound(value)
            if bound.min_value < int(lo) or bound.max_value > int(lo) + int(extent) - 1:
                return True
        return False

    for _, func in mod.functions.items():
        enclosing.clear()
        realizes: list = []
        tvm_ffi.structural_walk(func, [(tirx.For, on_for)])
        tvm_ffi.structural_walk(func, [(s_tir.SBlockRealize, realizes.append)])
        if any(outside(r) for r in realizes):
            return True
    return False


def _loaded_buffers(stmt) -> list:
    """The buffer of every load in ``stmt`` (None where a load has none)."""
    import tvm_ffi
    from tvm import tirx

    # tirx.BufferLoad is a constructor function in TVM 0.27 (the class is TensorLoad)
    probe = tirx.decl_buffer((1,), "float32")
    load_type = type(tirx.BufferLoad(probe, [tirx.IntImm("int32", 0)]))
    loads: list = []
    tvm_ffi.structural_walk(stmt, [(load_type, loads.append)])
    # the loaded buffer: .source in 0.27 (TensorLoad), .buffer before
    return [getattr(ld, "source", getattr(ld, "buffer", None)) for ld in loads]


def _reduction_init_missing(mod) -> bool:
    import tvm_ffi
    from tvm import s_tir, tirx

    accumulated: set[int] = set()  # buffers some store reads back (X[i] = X[i] + ...)
    initialized: set[int] = set()  # buffers a T.init() or a plain store writes

    def stores(stmt) -> list:
        found: list = []
        tvm_ffi.structural_walk(stmt, [(tirx.BufferStore, found.append)])
        return found

    def on_block(block) -> None:
        if block.init is not None:
            initialized.update(hash(st.buffer) for st in stores(block.init))
        # What the block's body reads, wherever: an argmax reads its accumulators in
        # ``T.let`` bindings and stores the bound names (``V[0] = v_V``), so the store's own
        # value shows no load (seed 7 #1028: blockize + cache_write of an argmin, a known
        # bug, reported as new for want of this fact).
        read = _loaded_buffers(block.body)
        for st in stores(block.body):
            same = any(b is not None and b.same_as(st.buffer) for b in read)
            (accumulated if same else initialized).add(hash(st.buffer))

    for _, func in mod.functions.items():
        tvm_ffi.structural_walk(func, [(s_tir.SBlock, on_block)])
    return bool(accumulated - initialized)


def _alloc_in_vectorized_loop(mod) -> bool:
    import tvm
    import tvm_ffi
    from tvm import s_tir, tirx

    # the default s_tir pipeline up to the planning pass (tvm/s_tir/pipeline.py)
    planned = tvm.transform.Sequential([
        s_tir.transform.CanonicalizeLoop(), s_tir.transform.LowerCrossThreadReduction(),
        s_tir.transform.LowerInitBlock(),
        s_tir.transform.PlanAndUpdateBufferAllocationLocation()])(mod)
    allocating: list = []

    def on_for(loop) -> None:
        extent = loop.extent
        if loop.kind == tirx.ForKind.VECTORIZED and not (isinstance(extent, tirx.IntImm)
                                                         and int(extent) <= 1):
            tvm_ffi.structural_walk(loop.body, [(s_tir.SBlock, lambda b: allocating.extend(
                b.alloc_buffers))])

    for _, func in planned.functions.items():
        tvm_ffi.structural_walk(func, [(tirx.For, on_for)])
    return bool(allocating)
