"""Same-arithmetic emulation: a program's own operations, in its own dtypes, in numpy.

Where the order analysis (:mod:`fuzzharness.oracles.order`) proves that a schedule keeps every output
element's operations and their order, a correct kernel's output is determined bit for bit by
the declared program: the same roundings in the same dtypes in the same order.  This module
computes that output by interpreting the declared (unscheduled) PrimFunc block by block —
spatial blocks vectorised over their whole iteration domain, reductions accumulated one
reduction point at a time in the lexicographic order of the unscheduled loop nest — so that
the verdict can demand bitwise equality instead of an error bound.

Arithmetic as TVM's llvm code performs it (``/work/shared/notes/tvm-0.27-facts.md``, checked
by ``tests/test_emulate.py`` against real kernels):

* float32 and float16 operations are IEEE operations of their dtype, correctly rounded (LLVM
  promotes ``half`` arithmetic to float and rounds every result back, which for + − × ÷ √ is
  the correctly rounded half result; numpy's float16 loops do the same);
* ``a*b + c`` is ``llvm.fmuladd`` (TVM emits it for an ``Add`` one of whose operands is a
  ``Mul``, the right one first): fused into one rounding for float32 where the ``mcpu`` has
  FMA, two roundings otherwise; float16 ``fmuladd`` is never fused.  The emulation computes
  both variants and accepts, per element, either (:attr:`Emulation.variants`);
* bfloat16 (TVM's ``BF16ComputeLegalize`` on llvm): every bfloat16 operation is computed in
  float32, internal (allocated) bfloat16 buffers are float32, casts to bfloat16 are dropped,
  bfloat16 literals become float32 literals of the value written (``T.bfloat16(1021)`` is
  1021.0, not 1020), and a value is rounded to bfloat16 (to nearest even) only when stored
  to a bfloat16 parameter buffer;
* ``max(a, b)`` is ``a > b ? a : b`` and ``min(a, b)`` ``a < b ? a : b`` (which of ±0 or of a
  nan wins follows from that);
* intrinsics (``exp``, ``tanh``, ...) are evaluated by TVM's own expansion for the target
  (:mod:`fuzzharness.execution.intrinsics`).

Without a proven order (``ordered=False``) a reduction's result is still determined where its
value cannot depend on the order: every term is exact (a product that rounds is not) and all
terms are multiples of one power of two ``q`` with ``Σ|t| ≤ 2^p·q`` for the accumulator's
precision ``p`` — then every partial sum, in any order and any tree, is exactly representable
— and for max/min reductions unless a nan or a signed zero could make the order show.  Such
elements are marked determined (:attr:`Emulation.determined`); elements computed from an
undetermined one are undetermined.  The caller may use this only where the schedule keeps
every non-reduction block's arithmetic (:attr:`fuzzharness.oracles.order.OrderAnalysis.spatial_kept`).

The interpreter understands the programs the workloads write: one ``BufferStore`` per block
(plus an init store for reductions), iteration variables bound one to one to the loops around
the block, a reduction update ``acc + term``, ``term + acc``, ``max(acc, term)`` or
``min(acc, term)``.  Anything else raises :class:`Unsupported`, and the caller then claims
nothing (the error-bound oracle still judges the case).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import numpy as np

from fuzzharness.oracles import numerics
from fuzzharness.oracles.fma import fma32, fma_chain

#: elements of a reduction's term array evaluated at once (memory bound)
CHUNK = 1 << 20


class Unsupported(Exception):
    """The program uses a construct the emulation does not model."""



def intrinsics():
    """The evaluator of elementwise intrinsics: TVM's own llvm code for one operation, which
    compiles kernels and so lives above the oracles (:mod:`fuzzharness.execution.intrinsics`);
    named here and imported on first use, as the case kinds are (``fuzzharness.core.kinds``)."""
    return importlib.import_module("fuzzharness.execution.intrinsics")

@dataclasses.dataclass
class Emulation:
    """Per output: the emulated arrays (one per multiply-add variant; identical variants are
    given once) and the mask of determined elements (None: all)."""

    variants: dict[str, list[np.ndarray]]
    determined: dict[str, np.ndarray | None]
    fused_sites: bool  # whether the program has multiply-adds that may fuse


def _ty(node) -> str:
    t = getattr(node, "ty", None)
    return str(t if t is not None else node.dtype)


class _Interp:
    def __init__(self, func, inputs: dict[str, np.ndarray], target: dict[str, Any], *,
                 fused: bool, ordered: bool, legalize_bf16: bool):
        self.func, self.target = func, target
        self.fused, self.ordered, self.bf16 = fused, ordered, legalize_bf16
        self.fma_sites = False
        self.mul_stores: set[str] = set()  # internal buffers that store a float32 product
        self.addsub_loads: set[str] = set()  # internal buffers loaded into an add/sub
        self.values: dict[Any, np.ndarray] = {}
        self.masks: dict[Any, np.ndarray | None] = {}
        self.params: set[str] = set()
        for p in func.params:
            buf = p
            name = str(buf.name)
            self.params.add(name)
            if name in inputs:
                self.values[name] = np.asarray(inputs[name], dtype=self.storage(buf))
            else:
                self.values[name] = np.full(self._shape(buf), np.nan, dtype=self.storage(buf)) \
                    if numerics.is_float(str(buf.dtype)) else np.zeros(self._shape(buf), self.storage(buf))
            self.masks[name] = None

    # -- dtypes --------------------------------------------------------------------------------
    def compute(self, dtype: str) -> np.dtype:
        if dtype == "bfloat16" and self.bf16:
            return np.dtype(np.float32)
        return numerics.numpy_dtype(dtype)

    def storage(self, buf) -> np.dtype:
        dt = str(buf.dtype)
        if dt == "bfloat16" and self.bf16 and str(buf.name) not in self.params:
            return np.dtype(np.float32)
        return numerics.numpy_dtype(dt)

    @staticmethod
    def _shape(buf) -> tuple[int, ...]:
        try:
            return tuple(int(s) for s in buf.shape)
        except TypeError:
            raise Unsupported("a buffer with a symbolic shape") from None

    def alloc(self, buf) -> None:
        name = str(buf.name)
        self.values[name] = np.zeros(self._shape(buf), self.storage(buf))
        self.masks[name] = None

    # -- expressions ------------------------------------------------------------------------------
    def ev(self, node, env: dict) -> tuple[np.ndarray, np.ndarray | None]:
        """(value, determined mask or None) of ``node`` over the grid of ``env``."""
        kind = type(node).__name__
        if kind == "IntImm":
            return np.asarray(int(node.value), dtype=self.compute(_ty(node))), None
        if kind == "FloatImm":  # a bfloat16 literal is legalized to float32 *unrounded*
            dt = _ty(node)
            v = numerics.round_to(np.float64(node.value), "float32" if dt == "bfloat16" and self.bf16 else dt)
            return np.asarray(v, dtype=self.compute(dt)), None
        if kind == "Var":
            for v, arr in env.items():
                if v.same_as(node):
                    return arr, None
            raise Unsupported(f"free variable {node}")
        if kind in ("BufferLoad", "TensorLoad"):
            return self.load(node, env)
        if kind == "Cast":
            x, m = self.ev(node.value, env)
            to = _ty(node)
            if to == "bfloat16" and self.bf16:  # the legalization drops casts to bfloat16
                return x.astype(np.float32), m
            with np.errstate(all="ignore"):
                return x.astype(self.compute(to)), m
        if kind in _BINARY:
            return self.binary(node, kind, env)
        if kind == "Not":
            x, m = self.ev(node.a, env)
            return np.logical_not(x), m
        if kind == "Select":
            return self.select(node.condition, node.true_value, node.false_value, env)
        if kind == "Call":
            name = str(getattr(node.op, "name", node.op)).rsplit(".", 1)[-1]
            if name == "if_then_else":
                return self.select(*node.args, env)
            if name in intrinsics().SUPPORTED and len(node.args) == 1:
                x, m = self.ev(node.args[0], env)
                dt = "float32" if _ty(node) == "bfloat16" and self.bf16 else _ty(node)
                try:
                    return intrinsics().apply(name, dt, x.astype(self.compute(dt))), m
                except Exception as e:  # noqa: BLE001 - no helper kernel: claim nothing
                    raise Unsupported(f"{name} in {dt}: {type(e).__name__}") from e
            raise Unsupported(f"call to {name}")
        raise Unsupported(f"expression of kind {kind}")

    def select(self, cond, t, f, env):
        c, mc = self.ev(cond, env)
        a, ma = self.ev(t, env)
        b, mb = self.ev(f, env)
        m = None
        if ma is not None or mb is not None:
            m = np.where(c, _all(ma, c), _all(mb, c))
        return np.where(c, a, b), _and(mc, m)

    def binary(self, node, kind: str, env):
        ty = _ty(node)
        if kind in ("Add", "Sub") and self.compute(ty) == np.float32:
            self._note_addsub(node)
            # TVM emits llvm.fmuladd for Add (its right operand's product first); LLVM contracts
            # a product into a subtraction (its left operand's first) on FMA targets
            pairs = ((node.b, node.a, False), (node.a, node.b, False)) if kind == "Add" else \
                ((node.a, node.b, True), (node.b, node.a, True))
            for n, (mul, other, negate) in enumerate(pairs):
                if type(mul).__name__ == "Mul":
                    self.fma_sites = True
                    if self.fused:
                        x, mx = self.ev(mul.a, env)
                        y, my = self.ev(mul.b, env)
                        z, mz = self.ev(other, env)
                        if negate and n == 0:  # x·y − z
                            z = -z
                        elif negate:  # z − x·y
                            x = -x
                        return fma32(x, y, z), _and(_and(mx, my), mz)
                    break
        a, ma = self.ev(node.a, env)
        b, mb = self.ev(node.b, env)
        m = _and(ma, mb)
        with np.errstate(all="ignore"):
            if kind == "Max":
                return np.where(a > b, a, b), m
            if kind == "Min":
                return np.where(a < b, a, b), m
            if kind == "Div" and not np.issubdtype(a.dtype, np.floating):
                raise Unsupported("integer division")
            return _BINARY[kind](a, b), m

    def _note_addsub(self, node) -> None:
        """Record internal buffers loaded straight into an addition or subtraction."""
        for x in (node.a, node.b):
            if type(x).__name__ in ("BufferLoad", "TensorLoad"):
                buf = x.source if hasattr(x, "source") else x.buffer
                if str(buf.name) not in self.params:
                    self.addsub_loads.add(str(buf.name))

    def load(self, node, env):
        buf = node.source if hasattr(node, "source") else node.buffer
        name = str(buf.name)
        if name not in self.values:
            raise Unsupported(f"load from unknown buffer {name}")
        arr = self.values[name]
        idx = []
        for dim, i in zip(arr.shape, node.indices, strict=True):
            v, _ = self.ev(i, env)
            idx.append(np.clip(v, 0, dim - 1))  # out-of-range only where a select masks it
        idx = np.broadcast_arrays(*idx) if idx else ()
        value = arr[tuple(idx)] if idx else arr[()]
        mask = self.masks[name]
        m = None if mask is None else mask[tuple(idx)]
        return value.astype(self.compute(str(buf.dtype))), m

    # -- statements --------------------------------------------------------------------------
    def store_to(self, store, env, value, mask, shape) -> None:
        name = str(store.buffer.name)
        arr = self.values[name]
        idx = [np.clip(self.ev(i, env)[0], 0, d - 1) for d, i in zip(arr.shape, store.indices, strict=True)]
        idx = [np.broadcast_to(i, shape) for i in idx]
        with np.errstate(all="ignore"):
            arr[tuple(idx)] = np.broadcast_to(value, shape).astype(arr.dtype)
        if mask is not None or self.masks[name] is not None:
            if self.masks[name] is None:
                self.masks[name] = np.ones(arr.shape, bool)
            self.masks[name][tuple(idx)] = np.broadcast_to(True if mask is None else mask, shape)

    def run_block(self, realize, loops) -> None:
        block = realize.block
        body = block.body
        if type(body).__name__ != "BufferStore":
            raise Unsupported(f"block {block.name_hint}: body is not one store")
        order = _loop_order(block, realize, loops)
        spatial = [iv for iv in block.iter_vars if int(iv.iter_type) == 0]
        reduce = [iv for iv in block.iter_vars if int(iv.iter_type) == 2]
        if len(spatial) + len(reduce) != len(block.iter_vars):
            raise Unsupported("an iteration variable that is neither spatial nor a reduction")
        reduce.sort(key=lambda iv: order[iv.var])
        s_shape = tuple(int(iv.dom.extent) for iv in spatial)
        env = _grid_env(spatial, len(reduce))
        if not reduce:
            if type(body.value).__name__ == "Mul" and self.compute(_ty(body.value)) == np.float32 \
                    and str(body.buffer.name) not in self.params:
                self.mul_stores.add(str(body.buffer.name))
            value, mask = self.ev(body.value, env)
            self.store_to(body, env, value, mask, s_shape)
            return
        if block.init is None or type(block.init).__name__ != "BufferStore":
            raise Unsupported(f"block {block.name_hint}: reduction without a single init store")
        s_env = _grid_env(spatial, 0)
        init, init_mask = self.ev(block.init.value, s_env)
        op, term = _reduction_form(body)
        acc_dtype = self.storage(body.buffer)
        acc, mask = self.reduce(op, term, spatial, reduce, s_shape, np.broadcast_to(init, s_shape),
                                acc_dtype, _ty(body.value))
        self.store_to(body, s_env, acc, _and(mask, init_mask), s_shape)

    def reduce(self, op, term, spatial, reduce, s_shape, init, acc_dtype, ty):
        """Accumulate ``term`` over the reduction points in loop order (see the module doc)."""
        r_ext = [int(iv.dom.extent) for iv in reduce]
        n = int(np.prod(r_ext))
        ct = self.compute(ty)
        is_mul = type(term).__name__ == "Mul"
        if op == "Add" and is_mul and ct == np.float32:
            self.fma_sites = True
        if op == "Add" and ct == np.float32 and type(term).__name__ in ("BufferLoad", "TensorLoad"):
            buf = term.source if hasattr(term, "source") else term.buffer
            if str(buf.name) not in self.params:
                self.addsub_loads.add(str(buf.name))
        fused = self.fused and op == "Add" and is_mul and ct == np.float32
        acc = np.array(init, dtype=acc_dtype)
        in_place = acc.dtype == ct and op == "Add"
        abs_sum = None if self.ordered else np.zeros(s_shape)
        exact, q, mask = np.ones(s_shape, bool), np.full(s_shape, np.inf), None
        # max/min: which order-revealing values an element met (nan, +0 and −0), init included
        if not self.ordered and op != "Add":
            i64 = np.broadcast_to(acc.astype(np.float64), s_shape)
            seen_nan, seen_p0, seen_n0 = np.isnan(i64), (i64 == 0) & ~np.signbit(i64), \
                (i64 == 0) & np.signbit(i64)
        per = max(1, CHUNK // max(1, int(np.prod(s_shape))))
        for r0 in range(0, n, per):
            r1 = min(n, r0 + per)
            full = (r1 - r0, *s_shape)
            env = _grid_env(spatial, 1, reduce, r_ext, r0, r1)
            if is_mul:
                (x, mx), (y, my) = self.ev(term.a, env), self.ev(term.b, env)
                x, y = np.broadcast_to(x.astype(ct), full), np.broadcast_to(y.astype(ct), full)
                with np.errstate(all="ignore"):
                    t = x * y
                mt = _and(mx, my)
            else:
                t, mt = self.ev(term, env)
                t = np.broadcast_to(t.astype(ct), full)
            if mt is not None:
                mask = _and(mask, np.all(np.broadcast_to(mt, full), axis=0))
            with np.errstate(all="ignore"):
                if not self.ordered and op == "Add":
                    t64 = t.astype(np.float64)
                    if is_mul:
                        e64 = x.astype(np.float64) * y.astype(np.float64)
                        exact &= np.all(e64 == t64, axis=0)
                    abs_sum += np.abs(t64).sum(axis=0)
                    q = np.minimum(q, _quantum(t64))
                elif not self.ordered:
                    t64 = t.astype(np.float64)
                    seen_nan |= np.isnan(t64).any(axis=0)
                    zero = t64 == 0
                    seen_p0 |= (zero & ~np.signbit(t64)).any(axis=0)
                    seen_n0 |= (zero & np.signbit(t64)).any(axis=0)
                if fused:
                    prod = x.astype(np.float64) * y.astype(np.float64)
                    acc = fma_chain(acc.astype(np.float32), prod).astype(acc_dtype) \
                        if acc.dtype == np.float32 else self._fma_steps(acc, prod, acc_dtype)
                    continue
                for i in range(r1 - r0):
                    if in_place:
                        np.add(acc, t[i], out=acc)
                    elif op == "Add":
                        acc = (acc.astype(ct) + t[i]).astype(acc_dtype)
                    else:
                        cur = acc.astype(ct)
                        pick = cur > t[i] if op == "Max" else cur < t[i]
                        acc = np.where(pick, cur, t[i]).astype(acc_dtype)
        if self.ordered:
            return acc, mask
        with np.errstate(all="ignore"):
            if op == "Add":
                certified = exact & (abs_sum <= 2.0 ** _precision(acc.dtype) * q)
            else:  # max/min: the order shows only through a nan, or +0 and −0 both met
                a64 = acc.astype(np.float64)
                certified = ~seen_nan & ~((a64 == 0) & seen_p0 & seen_n0)
        return acc, _and(mask, certified)

    @staticmethod
    def _fma_steps(acc, prod, acc_dtype):
        """A fused chain whose accumulator is stored narrower (a bfloat16 parameter): round
        after every step."""
        for i in range(prod.shape[0]):
            acc = fma_chain(acc.astype(np.float32), prod[i:i + 1]).astype(acc_dtype)
        return acc

    def run(self):
        from tvm import s_tir, tirx

        root = self.func.body
        if type(root).__name__ != "SBlockRealize":
            raise Unsupported("no root block")
        for buf in root.block.alloc_buffers:
            self.alloc(buf)

        def walk(node, loops):
            if isinstance(node, tirx.For):
                if int(node.kind) not in (0, 3):
                    raise Unsupported("a non-serial loop in the declared program")
                walk(node.body, [*loops, node])
            elif isinstance(node, tirx.SeqStmt):
                for s in node.seq:
                    walk(s, loops)
            elif isinstance(node, s_tir.SBlockRealize):
                self.run_block(node, loops)
            else:
                raise Unsupported(f"statement of kind {type(node).__name__}")

        walk(root.block.body, [])


_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
    "FloorDiv": np.floor_divide, "FloorMod": np.mod, "Min": None, "Max": None,
    "LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
    "EQ": np.equal, "NE": np.not_equal, "And": np.logical_and, "Or": np.logical_or,
}


def _and(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _all(m, like):
    return np.ones(np.shape(like), bool) if m is None else m


def _precision(dtype: np.dtype) -> int:
    import ml_dtypes

    if dtype == np.dtype(ml_dtypes.bfloat16):
        return 8
    return {np.dtype(np.float16): 11, np.dtype(np.float32): 24, np.dtype(np.float64): 53}.get(
        np.dtype(dtype), 0)


def _quantum(t: np.ndarray) -> np.ndarray:
    """Per element of ``t[0]``: the largest power of two dividing every nonzero finite
    ``t[i, ...]`` (inf when there is none) — element by element, so that rows of different
    magnitudes are certified each on its own."""
    ok = (t != 0) & np.isfinite(t)
    m, e = np.frexp(np.where(ok, t, 1.0))
    mi = np.abs(m * 2.0**53).astype(np.int64)
    low_exp = np.frexp((mi & -mi).astype(np.float64))[1] - 1
    # int64 throughout: frexp's exponents are int32, and NumPy 2 would squeeze the "none"
    # marker into int32 (−1: a quantum of 1/2 wherever a term is 0, halving what certifies)
    qexp = np.where(ok, e.astype(np.int64) - 53 + low_exp, np.int64(np.iinfo(np.int64).max))
    qmin = qexp.min(axis=0)
    with np.errstate(over="ignore"):  # the clipped marker of "no nonzero term" overflows to inf
        return np.where(qmin == np.iinfo(np.int64).max, np.inf,
                        np.ldexp(1.0, np.clip(qmin, -1100, 1100).astype(np.int32)))


def _loop_order(block, realize, loops) -> dict:
    """Nesting depth of the loop bound to each iteration variable (one to one, or Unsupported)."""
    depth: dict = {}
    for iv, value in zip(block.iter_vars, realize.iter_values, strict=True):
        if int(iv.dom.extent) == 1 and type(value).__name__ == "IntImm":
            depth[iv.var] = -1
            continue
        hit = [i for i, lp in enumerate(loops) if lp.loop_var.same_as(value)]
        if not hit or int(loops[hit[0]].extent) != int(iv.dom.extent) or int(loops[hit[0]].min) != 0:
            raise Unsupported(f"block {block.name_hint}: iteration variable not bound to one loop")
        depth[iv.var] = hit[0]
    return depth


def _grid_env(spatial, lead: int, reduce=(), r_ext=(), r0: int = 0, r1: int = 0) -> dict:
    """Index arrays: ``lead`` leading axes for the reduction points r0..r1 (flattened, loop
    order), then one axis per spatial iteration variable."""
    nd = lead + len(spatial)
    env = {}
    for a, iv in enumerate(spatial):
        shape = [1] * nd
        shape[lead + a] = int(iv.dom.extent)
        env[iv.var] = np.arange(int(iv.dom.extent), dtype=np.int64).reshape(shape)
    if reduce:
        coords = np.unravel_index(np.arange(r0, r1), r_ext)
        for iv, c in zip(reduce, coords, strict=True):
            env[iv.var] = c.astype(np.int64).reshape([r1 - r0] + [1] * len(spatial))
    return env


def _reduction_form(store) -> tuple[str, Any]:
    """("Add" | "Max" | "Min", term) of ``acc = acc op term`` (either operand order)."""
    import tvm_ffi

    v = store.value
    kind = type(v).__name__
    if kind not in ("Add", "Max", "Min"):
        raise Unsupported(f"reduction update of kind {kind}")

    def is_acc(x) -> bool:
        if type(x).__name__ not in ("BufferLoad", "TensorLoad"):
            return False
        buf = x.source if hasattr(x, "source") else x.buffer
        return buf.same_as(store.buffer) and all(
            tvm_ffi.structural_equal(a, b) for a, b in zip(x.indices, store.indices, strict=True))

    for acc, term in ((v.a, v.b), (v.b, v.a)):
        if is_acc(acc) and not _reads(term, store.buffer):
            return kind, term
    raise Unsupported("reduction update is not acc op term")


def _reads(node, buf) -> bool:
    """Whether expression ``node`` loads from ``buf``."""
    if type(node).__name__ in ("BufferLoad", "TensorLoad"):
        b = node.source if hasattr(node, "source") else node.buffer
        if b.same_as(buf):
            return True
    for attr in ("a", "b", "value", "condition", "true_value", "false_value"):
        child = getattr(node, attr, None)
        if child is not None and not isinstance(child, int | float | str) and _reads(child, buf):
            return True
    for child in list(getattr(node, "args", None) or []) + list(getattr(node, "indices", None) or []):
        if _reads(child, buf):
            return True
    return False


def emulate(func, inputs: dict[str, np.ndarray], target: dict[str, Any], *, ordered: bool,
            legalize_bf16: bool = True) -> Emulation:
    """Emulate ``func`` (the declared program) on ``inputs`` for an llvm ``target``.

    ``ordered``: the schedule keeps every element's order (reductions are emulated in loop
    order and every element is determined); else only order-independent elements are
    determined.  Raises :class:`Unsupported` for programs outside the modelled subset — and,
    on a target with FMA, for a product stored to an internal buffer and loaded into an
    addition elsewhere: LLVM contracts the two where it forwards the stored value (small
    unrolled loops, a compute_at), which the program text does not tell.
    """
    cpu = target_cpu(target)
    if cpu is None:
        raise Unsupported(f"no arithmetic model for target {target}")
    outs = [str(p.name) for p in func.params if str(p.name) not in inputs]
    first = _Interp(func, inputs, target, fused=False, ordered=ordered, legalize_bf16=legalize_bf16)
    first.run()
    variants = {n: [first.values[n]] for n in outs}
    determined = {n: first.masks[n] for n in outs}
    if cpu == "fma" and first.fma_sites:
        if first.mul_stores & first.addsub_loads:
            raise Unsupported("a stored product meets an addition in another block (FMA target): "
                              f"{sorted(first.mul_stores & first.addsub_loads)}")
        second = _Interp(func, inputs, target, fused=True, ordered=ordered, legalize_bf16=legalize_bf16)
        second.run()
        for n in outs:
            other = second.values[n]
            if not np.array_equal(_bits(other), _bits(variants[n][0])):
                variants[n].append(other)
            determined[n] = _and(determined[n], second.masks[n])
    return Emulation(variants, determined, first.fma_sites)


_CPU: dict[str, str | None] = {}


def target_cpu(target: dict[str, Any]) -> str | None:
    """"fma" / "plain" for an x86-64 llvm target (whether multiply-adds may fuse), None for a
    target whose arithmetic this module does not model (another kind, another architecture,
    native fp16 arithmetic)."""
    import json

    key = json.dumps(target, sort_keys=True)
    if key not in _CPU:
        from tvm.target import Target, codegen

        kind = target.get("kind")
        feats = set(codegen.llvm_get_cpu_features(Target(target))) if kind == "llvm" else set()
        if kind != "llvm" or "sse2" not in feats or "avx512fp16" in feats:
            _CPU[key] = None
        else:
            _CPU[key] = "fma" if "fma" in feats else "plain"
    return _CPU[key]


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a if a.dtype.kind in "iub" else a.view(np.dtype(f"u{a.dtype.itemsize}"))
