"""Ctrl-C and SIGTERM: stop within seconds, keep what is stored, never print a traceback.

:func:`install` (called once by the CLI) makes the first SIGINT *or* SIGTERM raise
:class:`KeyboardInterrupt` in the main thread — Python's own behaviour for SIGINT, extended
to SIGTERM, which is what CI runners and ``timeout`` send — so that every phase unwinds
through its ``finally`` blocks: the campaign database commits nothing half-done (one
transaction per result), worker pools kill their processes, reports are written whole or
not at all.  The caller turns the exception into one line and exit code 3.

From the first signal on, a second one does not raise again (a traceback out of a
``finally`` block is what users saw before): it writes one line, kills the process groups
of the harness's own children (:func:`register`) and ends the process at once with
``os._exit(3)``.  Nothing is lost that was stored: every result and repro record is
committed when it is made (SQLite WAL), and files are written atomically
(:func:`fuzzharness.core.storage.write_text_atomic`).

Children: harness child processes run in their own session (so a terminal's Ctrl-C reaches
only the driver, which decides what to stop) with ``PR_SET_PDEATHSIG`` (so that they die with
the process that started them, whatever kills it); see :mod:`fuzzharness.core.children`.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

from fuzzharness.core.errors import EXIT_HARNESS

_children: set[int] = set()
_installed = False
#: set once the first signal arrived (read by long loops that prefer a flag to an exception)
interrupted = threading.Event()


def install_startup() -> None:
    """While the CLI is still importing (nothing done, nothing to store): a signal ends the
    process at once with one line.  :func:`install` replaces this when the work begins."""
    if threading.current_thread() is not threading.main_thread():
        return

    def startup(signum, frame) -> None:
        os.write(2, b"fuzzharness: interrupted before it started; nothing was done\n")
        os._exit(EXIT_HARNESS)

    signal.signal(signal.SIGINT, startup)
    signal.signal(signal.SIGTERM, startup)


def install() -> None:
    """Route SIGINT and SIGTERM of this (main-thread) process through :func:`_first`."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, _first)
    signal.signal(signal.SIGTERM, _first)
    sys.unraisablehook = _swallowed_interrupt_is_delivered_again(sys.unraisablehook)
    _installed = True


REDELIVERIES = 3  # a KeyboardInterrupt swallowed more often than this is left swallowed


def _swallowed_interrupt_is_delivered_again(previous):
    """A signal handler's exception is raised wherever the main thread happens to be — and
    where Python ignores exceptions (a weakref callback, such as importlib's module-lock
    cleanup while ``report`` imports pandas; a ``__del__``) the interrupt was printed as
    "Exception ignored" and lost: the command ran on and exited 0.  Such a swallowed
    interrupt is delivered again: the main thread is interrupted anew, with :func:`_first`
    as the handler, and the exception lands in ordinary code after the callback returns."""
    left = [REDELIVERIES]

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and interrupted.is_set() \
                and left[0] > 0:
            left[0] -= 1
            _interrupt_main_later()
            return
        previous(unraisable)

    return hook


def _interrupt_main_later(delay: float = 0.01, tries: int = 5) -> None:
    """Interrupt the main thread again, from another thread, once the hook has returned:
    raised in the hook it would be swallowed again (an exception out of the hook is ignored
    too).  Starting the thread waits until it runs, and on a loaded machine the timer may
    fire before ``start`` returns — inside the hook: that interrupt is caught here and
    delivered again, later."""
    for attempt in range(tries):
        signal.signal(signal.SIGINT, _first)
        try:
            threading.Timer(delay * 4 ** attempt, _thread.interrupt_main, (signal.SIGINT,)).start()
            return
        except KeyboardInterrupt:
            continue


def _first(signum, frame) -> None:
    interrupted.set()
    signal.signal(signal.SIGINT, _again)
    signal.signal(signal.SIGTERM, _again)
    raise KeyboardInterrupt


def _again(signum, frame) -> None:
    try:
        os.write(2, b"\nfuzzharness: interrupted again: stopping now "
                    b"(everything committed so far is stored)\n")
    except OSError:
        pass
    kill_children()
    os._exit(EXIT_HARNESS)


def register(pgid: int) -> None:
    """A child's process group, killed by a second signal."""
    _children.add(pgid)


def unregister(pgid: int) -> None:
    _children.discard(pgid)


@contextlib.contextmanager
def keep_handlers() -> Iterator[None]:
    """Native code loaded inside the block keeps this process's SIGINT/SIGTERM handling.

    Intel's OpenCL CPU runtime installs C-level SIGINT and SIGTERM handlers of its own when
    it is loaded (``clGetPlatformIDs``); in the driver they replaced :func:`_first` and
    :func:`_again` at the C level, so that a Ctrl-C sometimes killed the driver with SIGINT
    (exit −2) instead of the one line and exit 3.  Setting the same Python handlers again
    re-installs Python's C-level handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in saved.items():
            if handler is not None:
                signal.signal(s, handler)


def kill_children() -> None:
    for pgid in list(_children):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _children.discard(pgid)


def settle() -> None:
    """Called when the process is about to end after an interrupt: from here on, further
    signals are ignored — Python restores the *default* handlers while it shuts down, and a
    Ctrl-C then would kill the process with SIGINT instead of its exit status."""
    if interrupted.is_set() and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
