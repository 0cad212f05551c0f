"""Thin helpers over the TVM 0.27 API (``tvm.tirx`` / ``tvm.s_tir``), kept in one place.

TVM's Python API moved in 2026 and keeps moving; everything here is a small adapter so that
the rest of the harness does not depend on where a function lives this month.
"""

from __future__ import annotations

import contextlib
import functools
import json
import platform
from typing import Any

from fuzzharness.core import warmup
from fuzzharness.core.version import __version__

#: pass-manager wrappers a pass instrument sees, not passes
PASS_WRAPPERS = frozenset({"_pipeline", "sequential", "tirx.Filter", "tirx.BindTarget"})

def tvm():
    import tvm as _tvm

    return _tvm


@functools.lru_cache(maxsize=128)
def parse_prim_func(source: str):
    """Parse TVMScript text (a single ``@T.prim_func(s_tir=True)`` definition) to a PrimFunc.

    TVMScript rejects ``from ... import`` inside the parsed text; ``T`` is supplied here.

    Cached by source text: a worker needs the same function twice per case (once to
    generate the random schedule, once to replay the stored trace onto it).  Sharing is safe
    because TVM IR is immutable: scheduling copies on write and never changes the PrimFunc it
    started from (checked by ``tests/test_engine_throughput.py``).

    Two shortcuts, each giving the stock parser's PrimFunc (``tests/test_engine_throughput.py``
    compares them for every workload): ``T`` is :func:`_parse_namespace`, not the stock
    module (≈ half the parse time, see there); and the well-formedness check runs here
    rather than inside ``from_source``, which parses the whole text a second time only to
    have a syntax tree at hand for its error report (≈ 1.5 ms).  A program that is not
    well-formed is refused all the same, with TVM's message.
    """
    import tvm as _tvm

    func = _tvm.script.from_source(source, extra_vars={"T": _parse_namespace()},
                                   check_well_formed=False)
    if not isinstance(func, _tvm.tirx.PrimFunc):
        raise TypeError(f"not a single prim_func: parsed a {type(func).__name__}")
    try:  # what from_source's check does for a PrimFunc (tvm/script/parser/core/entry.py)
        _tvm.s_tir.analysis.verify_well_formed(_tvm.IRModule.from_expr(func))
        if not (func.attrs is not None and func.attrs.get("s_tir", False)):
            _tvm.tirx.analysis.verify_tirx_well_formed(func)
    except Exception as e:  # noqa: BLE001 - TVM raises its own error types
        raise ValueError(f"Program is not well-formed: {e}") from e
    return func


@functools.cache
def _parse_namespace():
    """``tvm.script.tirx`` with a ``prim_func`` that only carries the parser's dispatch token.

    The parser evaluates a function's decorator (``T.prim_func(s_tir=True)``) for nothing but
    its ``dispatch_token`` ("tirx"); ``private``, ``s_tir`` and ``persistent`` are read from
    the decorator's syntax (``find_decorator_annotation`` in TVM's tirx parser).  The stock
    ``T.prim_func(...)`` calls ``inspect.stack()`` first, which reads source lines of every
    frame and walks all of ``sys.modules`` for each frame without a module file (the frozen
    ``runpy`` frames of ``python -m``, ``eval``'d code): about half of a parse in a worker
    (≈ 18 → 9 ms per workload program).  Everything else is the module's own attributes,
    copied, so the parsed PrimFunc is the same — structurally equal and printed alike, for
    every workload (``tests/test_engine_throughput.py``).
    """
    import types

    from tvm.script import tirx as T

    def prim_func(func=None, **_decorator_args):
        return prim_func

    prim_func.dispatch_token = T.prim_func.dispatch_token
    namespace = types.SimpleNamespace(**vars(T))
    namespace.prim_func = prim_func
    return namespace


_unchecked_depth = 0
_swapped: list[str] = []  # the methods the outermost block swapped


@contextlib.contextmanager
def unchecked_schedule_calls():
    """Within this block, ``s_tir.Schedule``'s methods skip TVM's Python-side argument check.

    TVM wraps each schedule method in ``type_checked`` (``tvm/s_tir/schedule/_type_checker.py``),
    which binds the call's signature and walks every argument against its type hints before
    the FFI call — for a person typing schedule calls, a friendlier ``TypeError``.  Generated
    schedules make ~40 such calls per case; the check was ≈ 2.5 ms of a 23 ms
    ``generate_case`` (``benchmarks/generation_cost.py``).  The arguments come from the
    generators' own typed draws, and the FFI still refuses a wrong type at the C++ boundary,
    so what a case is and which cases fail to generate do not change
    (``benchmarks/case_stream_digest.py``: the same ids and digests).  The methods are
    restored on exit, so code outside generation (a user's own schedules in the pytest
    plugin's process, the repro scripts) keeps TVM's checks.  Re-entrant; one thread
    generates at a time.
    """
    global _unchecked_depth, _swapped
    from tvm.s_tir import Schedule

    swaps = _schedule_method_swaps()
    if _unchecked_depth == 0:
        # only methods that are still TVM's own: one someone replaced (a test's monkeypatch,
        # a user's wrapper) stays theirs, and is not "restored" over on the way out either
        _swapped = [name for name, (checked, _unchecked) in swaps.items()
                    if vars(Schedule).get(name) is checked]
        for name in _swapped:
            setattr(Schedule, name, swaps[name][1])
    _unchecked_depth += 1
    try:
        yield
    finally:
        _unchecked_depth -= 1
        if _unchecked_depth == 0:
            for name in _swapped:
                setattr(Schedule, name, swaps[name][0])
            _swapped = []


@functools.cache
def _schedule_method_swaps() -> dict[str, tuple[Any, Any]]:
    """name → (TVM's checked method, the function it wraps), for the methods ``type_checked``
    wraps (recognised by the wrapper's own name; any other decorator is left alone)."""
    from tvm.s_tir import Schedule

    return {name: (attr, attr.__wrapped__) for name, attr in vars(Schedule).items()
            if getattr(attr, "__code__", None) is not None
            and attr.__code__.co_qualname == "type_checked.<locals>.wrap"
            and callable(getattr(attr, "__wrapped__", None))}


def trace_to_json(trace) -> Any:
    """``Trace.as_json()`` with TVM scalars (IntImm, FloatImm, String) as plain Python values."""
    return to_plain(trace.as_json())


def to_plain(obj: Any) -> Any:
    from tvm import tirx

    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, tirx.IntImm):
        return bool(obj.value) if str(obj.ty) == "bool" else int(obj.value)
    if isinstance(obj, tirx.FloatImm):
        return float(obj.value)
    if isinstance(obj, str):  # tvm_ffi String is a str subclass
        return str(obj)
    if isinstance(obj, int | float):
        return obj
    if hasattr(obj, "items"):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if hasattr(obj, "__iter__"):
        return [to_plain(x) for x in obj]
    raise TypeError(f"cannot turn {type(obj).__name__} into plain JSON data: {obj!r}")


def replay_trace(func, trace_json: Any, *, seed: int = 1):
    """A fresh ``s_tir.Schedule`` of ``func`` with the stored trace replayed onto it."""
    from tvm import s_tir

    sch = s_tir.Schedule(func, seed=seed)
    if trace_json:
        text = json.dumps(trace_json)
        if '"Tensorize"' in text:
            # Tensor intrinsics (wmma, mma...) are registered by name on import (≈10 s, once
            # per process); a trace that tensorizes names them.

            warmup.tensor_intrinsics()  # wmma/mma intrinsics are registered by name
        # The JSON went through json.dumps/loads; TVM wants its own containers back.
        s_tir.Trace.apply_json_to_schedule(json.loads(text), sch)
    return sch


def structural_equal(a, b) -> bool:
    import tvm_ffi

    return bool(tvm_ffi.structural_equal(a, b))


def is_schedule_error(exc: BaseException) -> bool:
    from tvm.s_tir.schedule.schedule import ScheduleError

    return isinstance(exc, ScheduleError)


@functools.cache
def versions() -> dict[str, str]:
    """Versions of everything that can change a verdict (for repro headers and the DB)."""
    import numpy
    import tvm as _tvm
    import tvm_ffi


    try:
        llvm = str(_tvm.target.codegen.llvm_version_major())
    except Exception:  # noqa: BLE001 - a TVM built without LLVM
        llvm = "none"
    return {
        "harness": __version__,
        "tvm": _tvm.__version__,
        "tvm_ffi": tvm_ffi.__version__,
        "llvm": llvm,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
    }


def blame_tvm(exc: BaseException) -> bool:
    """Did this exception come out of TVM (C++ or its Python package), rather than our code?

    Decided from where the exception was raised: the innermost traceback frame.  Exceptions
    raised by C++ code surface through tvm_ffi and carry C++ frames (``.cc`` files); exceptions
    raised by TVM's Python layer come from files under the ``tvm``/``tvm_ffi`` packages.
    Anything else is the harness's own fault.
    """
    tb = exc.__traceback__
    last = name = None
    while tb is not None:
        last, name = tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name
        tb = tb.tb_next
    if last is None:
        return False
    norm = last.replace("\\", "/")
    return (
        "/tvm/" in norm
        or "/tvm_ffi/" in norm
        or norm.endswith((".cc", ".h", ".pxi", ".cpp"))
        # C++ frames without debug info: "<unknown>" file, "tvm::..." function
        or (name or "").startswith("tvm::")
        or type(exc).__module__.startswith(("tvm", "tvm_ffi"))
    )


def unknown_instruction_kinds(kinds: list[str]) -> list[str]:
    """The names among ``kinds`` that TVM has no schedule instruction kind for."""
    from tvm.s_tir.schedule import InstructionKind

    unknown = []
    for name in dict.fromkeys(kinds):
        try:
            InstructionKind.get(name)
        except Exception:  # noqa: BLE001 - TVM raises AttributeError from a failed check
            unknown.append(name)
    return unknown
