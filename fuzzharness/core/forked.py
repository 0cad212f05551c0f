"""Run a function in a forked child, so that a crash in it is an answer, not our death.

A minimization lane draws schedules with TVM in its own process (Hypothesis' shrinker needs
the draws there) and replays choice sequences to capture a failing schedule call.  A TVM
bug that aborts or segfaults while a schedule is drawn would kill the lane and lose the
bucket — and when that crash *is* the bucket, nothing could ever shrink it.
:func:`call_in_fork` runs the dangerous part in a child forked from the lane (TVM already
imported, copy-on-write): what the function returns comes back as JSON; what it sends on the
way (:class:`Messages`) comes back even if it then dies; a death or a hang comes back as
:class:`Died`, with the return code and the tail of what the child wrote on stderr (TVM's
``Check failed`` line before an abort).

Plain data only crosses the pipe (JSON lines), as everywhere in the harness.  The child ends
with ``os._exit``: no ``atexit`` handler, no buffered output of the parent is run twice.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import os
import select
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

LOG_TAIL = 4000  # bytes of the child's stderr kept for a death's verdict


@dataclasses.dataclass
class Died:
    """The child ended without returning: killed by a signal, exited, or timed out."""

    returncode: int | None  # negative: the signal; None: killed here at the timeout
    log_tail: str
    timed_out: bool = False


class Raised(Exception):
    """The function raised in the child: its type name and message (the traceback went to
    the child's stderr, which is the caller's)."""

    def __init__(self, type_name: str, message: str):
        super().__init__(f"{type_name}: {message}")
        self.type_name, self.message = type_name, message


class Messages:
    """What the child sent before it returned or died, in order."""

    def __init__(self, fd: int):
        self._fd = fd

    def send(self, msg: Any) -> None:
        _write_line(self._fd, ["msg", msg])


def _write_line(fd: int, item: Any) -> None:
    view = memoryview((json.dumps(item, allow_nan=True) + "\n").encode())
    while view:
        view = view[os.write(fd, view):]


def call_in_fork(fn: Callable[[Messages], Any], *, timeout: float | None = None
                 ) -> tuple[Any | Died, list[Any]]:
    """``fn(messages)`` in a forked child: (its JSON-able return value, or :class:`Died`;
    the messages it sent).  An exception in ``fn`` is re-raised here as :class:`Raised`."""
    log = tempfile.TemporaryFile()
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(r)
            os.dup2(log.fileno(), 2)
            if faulthandler.is_enabled():  # its report of a crash goes to that log too
                faulthandler.enable(2)
            messages = Messages(w)
            try:
                out = ["return", fn(messages)]
            except BaseException as e:  # noqa: BLE001 - sent to the parent as data
                traceback.print_exc()
                out = ["raise", type(e).__name__, str(e)]
            _write_line(w, out)
        except BaseException:  # noqa: BLE001 - nothing may escape a forked child
            code = 70
        finally:
            os._exit(code)
    os.close(w)
    try:
        lines, status, timed_out = _read(r, pid, timeout)
    finally:
        os.close(r)
    messages, result = [], None
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            break  # a line cut short by the death
        if item[0] == "msg":
            messages.append(item[1])
        else:
            result = item
    if result is None:
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - LOG_TAIL))
        tail = log.read().decode(errors="replace")
        log.close()
        code = None if timed_out else (-os.WTERMSIG(status) if os.WIFSIGNALED(status)
                                       else os.WEXITSTATUS(status))
        return Died(code, tail, timed_out), messages
    log.close()
    if result[0] == "raise":
        raise Raised(result[1], result[2])
    return result[1], messages


def _read(fd: int, pid: int, timeout: float | None) -> tuple[list[bytes], int, bool]:
    """Everything the child writes until it closes the pipe (or the timeout: then it is
    killed); the lines and its wait status."""
    buf = bytearray()
    end = None if timeout is None else time.monotonic() + timeout
    timed_out = False
    while True:
        left = None if end is None else max(0.0, end - time.monotonic())
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            timed_out = True
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
    _, status = os.waitpid(pid, 0)
    return bytes(buf).splitlines(), status, timed_out
