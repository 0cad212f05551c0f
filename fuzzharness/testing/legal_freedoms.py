"""Legal freedoms: correct kernels that a compiler may legally produce from the declared program.

Each freedom is a program transformation that keeps the program's semantics within
floating-point freedom — the reduction's terms are the same, only their order, their
association or the width of the accumulator changes — the way a TVM release or another
backend may lower a reduction (issue "the oracle must survive TVM's legal freedoms"):

``reversed``  every sum reduction visits its terms in reverse order: the term at reduction
              index ``r`` becomes the one at ``N − 1 − r`` (the init still runs first).
              Blocks with a predicate are left alone.
``wide``      every float16 sum accumulator gets a float32 shadow buffer (TVM's own
              ``cache_write``), rounded once to float16 when copied back — excess precision,
              one rounding at the store instead of one per term.
``lanes``     every sum reduction whose innermost reduction loop has an extent divisible by
              :data:`LANES` (and ≥ 2·LANES) keeps ``LANES`` partial sums, one per lane
              (``split`` + ``rfactor``), then adds the lanes: what a vectorizing lowering does.

Like :mod:`fuzzharness.testing.injected_faults`, each (freedom, workload) pair is a non-default
workload whose :meth:`kernel_source` is the transformed program: the reference, the error
model, the order analysis, the emulation and the unscheduled baseline all see the declared
program, only the scheduled kernel is built from the transformed one — as if TVM had
lowered the declared program that way.  The harness must report none of them
(``benchmarks/false_alarm_sweep.py --freedoms``, ``tests/test_legal_freedoms.py``).
:func:`transform` returns the declared text unchanged where a freedom does not apply.
"""

from __future__ import annotations

import re

from fuzzharness.core.tvm_support import parse_prim_func
from fuzzharness.generators.workloads.base import workloads

FREEDOMS = ("reversed", "wide", "lanes")
BASES = ("matmul", "batch_matmul", "dense", "conv2d", "row_sum", "reduce", "softmax",
         "layer_norm", "pool2d")
LANES = 4

_BLOCK = re.compile(r'^(\s*)with T\.sblock\("([^"]+)"\):\s*$')
_UPDATE = re.compile(r"^(\s*)(\w+)\[([^\]]*)\] = \2\[\3\] \+ (.*)$")


def _realizes(func) -> list:
    """Every SBlockRealize of ``func``, in walk order."""
    import tvm_ffi
    from tvm import s_tir

    found: list = []
    tvm_ffi.structural_walk(func, [(s_tir.SBlockRealize, found.append)])
    return found


def _sum_blocks(func) -> list:
    """(name, SBlock) of the sum reductions: one store ``acc = acc + term`` with an init."""
    return [(str(r.block.name_hint), r.block) for r in _realizes(func)
            if r.block.init is not None and type(r.block.body).__name__ == "BufferStore"
            and type(r.block.body.value).__name__ == "Add"
            and any(int(iv.iter_type) == 2 for iv in r.block.iter_vars)
            and str(r.predicate) in ("True", "T.bool(True)", "1")]


def _blocks_text(lines: list[str]):
    """(name, start, end) line ranges of every block of a printed PrimFunc."""
    out = []
    for i, ln in enumerate(lines):
        m = _BLOCK.match(ln)
        if not m:
            continue
        depth, j = len(m.group(1)), i + 1
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > depth):
            j += 1
        out.append((m.group(2), i, j))
    return out


def _drop_access_annotations(lines: list[str], start: int, end: int) -> None:
    """The parser infers a block's reads and writes from its body when they are not written."""
    for k in range(start, end):
        if lines[k].strip().startswith(("T.reads(", "T.writes(")):
            lines[k] = ""


def reversed_sums(text: str) -> str:
    func = parse_prim_func(text)
    sums = dict(_sum_blocks(func))
    lines = func.script().splitlines()
    for name, start, end in _blocks_text(lines):
        block = sums.get(name)
        if block is None or any("T.where(" in ln for ln in lines[start:end]):
            continue
        mirror = {str(iv.var.name): f"({2 * int(iv.dom.min) + int(iv.dom.extent) - 1} - {iv.var.name})"
                  for iv in block.iter_vars if int(iv.iter_type) == 2}
        for k in range(start, end):
            m = _UPDATE.match(lines[k])
            if m and m.group(2) == str(block.body.buffer.name):
                term = re.sub(r"\b(" + "|".join(map(re.escape, mirror)) + r")\b",
                              lambda v, mirror=mirror: mirror[v.group(1)], m.group(4))
                lines[k] = f"{m.group(1)}{m.group(2)}[{m.group(3)}] = {m.group(2)}[{m.group(3)}] + {term}"
                _drop_access_annotations(lines, start, end)
    return _text(lines)


def wide_accumulators(text: str) -> str:
    from tvm import s_tir

    func = parse_prim_func(text)
    names = [n for n, b in _sum_blocks(func) if str(b.body.buffer.dtype) == "float16"]
    if not names:
        return _text(func.script().splitlines())
    sch = s_tir.Schedule(func)
    for name in names:
        block = sch.get_sblock(name)
        sch.cache_write(block, 0, "global")
        sch.unsafe_set_dtype(block, 0, "float32")
    lines = sch.mod["main"].script().splitlines()
    # unsafe_set_dtype rounds the loaded accumulator back to float16 (one rounding per term);
    # the shadow keeps it in float32: acc = acc + float32(term)
    pat = re.compile(r'^(\s*)(\w+)\[([^\]]*)\] = T\.Cast\("float32", T\.Cast\("float16", '
                     r'\2\[\3\]\) \+ (.*)\)$')
    for name, start, end in _blocks_text(lines):
        if name not in names:
            continue
        for k in range(start, end):
            m = pat.match(lines[k])
            if m:
                lines[k] = (f"{m.group(1)}{m.group(2)}[{m.group(3)}] = {m.group(2)}[{m.group(3)}]"
                            f' + T.Cast("float32", {m.group(4)})')
                _drop_access_annotations(lines, start, end)
    return _text(lines)


def lane_sums(text: str) -> str:
    from tvm import s_tir
    from tvm.s_tir.schedule.schedule import ScheduleError

    func = parse_prim_func(text)
    sch = s_tir.Schedule(func)
    for name, block in _sum_blocks(func):
        rvars = {str(iv.var.name) for iv in block.iter_vars if int(iv.iter_type) == 2}
        b = sch.get_sblock(name)
        loops = sch.get_loops(b)
        inner = None  # the innermost loop bound to a reduction iteration variable
        for lp in reversed(loops):
            var = sch.get(lp).loop_var
            if any(_mentions(val, var) and str(iv.var.name) in rvars
                   for iv, val in zip(sch.get(b).iter_vars, _iter_values(sch, b), strict=True)):
                inner = lp
                break
        if inner is None:
            continue
        ext = int(sch.get(inner).extent)
        if ext % LANES or ext < 2 * LANES:
            continue
        try:
            _, lane = sch.split(inner, [None, LANES])
            sch.rfactor(lane, 0)
        except ScheduleError:
            continue
    return _text(sch.mod["main"].script().splitlines())


def _iter_values(sch, block):
    target = sch.get(block)
    return next((list(r.iter_values) for r in _realizes(sch.mod["main"])
                 if r.block.same_as(target)), [])


def _mentions(expr, var) -> bool:
    return re.search(r"\b" + re.escape(str(var)) + r"\b", str(expr)) is not None


def _text(lines: list[str]) -> str:
    return "\n".join(ln for ln in lines if ln != "") + "\n"


TRANSFORMS = {"reversed": reversed_sums, "wide": wide_accumulators, "lanes": lane_sums}


def transform(freedom: str, text: str) -> str:
    """``text`` (a workload's TVMScript) lowered with ``freedom``; the declared text where the
    freedom does not apply."""
    out = TRANSFORMS[freedom](text)
    return out if _changed(text, out) else text


def _changed(a: str, b: str) -> bool:
    import tvm_ffi

    return not tvm_ffi.structural_equal(parse_prim_func(a), parse_prim_func(b))


def workload_name(freedom: str, base: str) -> str:
    return f"legal_{freedom}_{base}"


def _register(freedom: str, base: str) -> None:
    cls = type(workloads[base])

    def kernel_source(self, p, _freedom=freedom):
        return transform(_freedom, self.source(p))

    sub = type(f"Legal_{freedom}_{base}", (cls,), {
        "name": workload_name(freedom, base), "default": False, "kernel_source": kernel_source,
        "__doc__": f"{base} lowered with the legal freedom {freedom!r} (see the module doc)."})
    workloads.add(sub.name, sub())


for _f in FREEDOMS:
    for _b in BASES:
        _register(_f, _b)
