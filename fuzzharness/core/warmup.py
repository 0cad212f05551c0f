"""One-time, per-process setup costs, kept out of the per-case timeout.

Some TVM features cost seconds once per process and milliseconds after: importing
``tvm.s_tir.tensor_intrin`` (MetaSchedule, dlight, tensorize) parses ~250 TVMScript
functions.  Workers are persistent, so the cost lands on whichever case first needs it; on
a loaded machine that can exceed a short per-case timeout and turn an innocent case into a
``timeout`` finding.  Code that pays such a cost goes through :func:`once`; inside a worker a
notifier tells the driver when the setup starts and ends, and the driver stops the case's
clock meanwhile (the setup has its own, generous limit: ``worker_process.SETUP_TIMEOUT``).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

Notifier = Callable[[str, str, float], None]  # (event "begin"|"end", name, seconds)

_done: dict[str, Any] = {}
_notify: Notifier | None = None


def set_notifier(fn: Notifier | None) -> None:
    global _notify
    _notify = fn


def once(name: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` the first time ``name`` is asked for in this process; return its result."""
    if name in _done:
        return _done[name]
    if _notify is not None:
        _notify("begin", name, 0.0)
    t0 = time.perf_counter()
    try:
        _done[name] = fn()
    finally:
        if _notify is not None:
            _notify("end", name, time.perf_counter() - t0)
    return _done[name]


@contextlib.contextmanager
def paused(name: str) -> Iterator[None]:
    """Time spent inside is not charged to the case: the driver's clock pauses as for a setup.

    For waits that are not the case's doing, e.g. a shared remote device that is busy with
    another worker's case (:mod:`fuzzharness.backends.rpc`).  Bounded like a setup.
    """
    if _notify is not None:
        _notify("begin", name, 0.0)
    t0 = time.perf_counter()
    try:
        yield
    finally:
        if _notify is not None:
            _notify("end", name, time.perf_counter() - t0)


def tensor_intrinsics() -> None:
    """Register TVM's tensor intrinsics (wmma, mma, dot-product...) by name, once."""
    once("tensor_intrinsics", _import_tensor_intrinsics)


def _import_tensor_intrinsics() -> None:
    # Each of the ~250 TVMScript parses calls inspect.stack() twice; inspect.getmodule walks
    # all of sys.modules for every frame whose file is not a module: the frozen import
    # machinery, and the code TVM's parser compiles from strings and evaluates ("<string>",
    # "<ast>": ~2200 walks).  Telling inspect the answers first (a cache it fills itself on a
    # miss) cut the import from ≈ 12 s to ≈ 4 s (frozen frames), then by another third.
    _seed_inspect_cache()
    import tvm.s_tir.tensor_intrin  # noqa: F401


#: pseudo-files of code compiled from strings: no module has them as its file, so
#: ``inspect.getmodule`` answers None for their frames — after walking all of sys.modules
#: (functions and classes answer by their ``__module__`` first and are not affected)
NO_MODULE_FILES = ("<string>", "<ast>")


@functools.cache
def _seed_inspect_cache() -> None:
    import inspect

    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.origin == "frozen":
            inspect.modulesbyfile.setdefault(f"<frozen {name}>", name)
    for file in NO_MODULE_FILES:  # a name that is no module: sys.modules.get gives None
        inspect.modulesbyfile.setdefault(file, f"<no module: {file}>")
