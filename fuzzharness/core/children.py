"""Child processes of the harness that end when they should: on Ctrl-C, and with their parent.

:func:`run_child` is ``subprocess.run`` for the harness's own long-running children (the
end-of-run minimization, one process per minimized bucket):

* the child starts in its **own session**, so a terminal's Ctrl-C reaches only the process
  that decides what to stop — a child never prints a ``KeyboardInterrupt`` traceback of its
  own into the user's terminal;
* when the caller is interrupted (any exception, :class:`KeyboardInterrupt` included) or the
  timeout passes, the child's whole process group is killed before the exception goes on;
  a second Ctrl-C kills it too (:func:`fuzzharness.core.interrupt.register`);
* the child is asked to die with its parent (``$FUZZHARNESS_PARENT_PID``, honoured by
  :func:`die_with_parent`, which the CLI and the child entry points call first): killing a
  process kills the chain below it, even the grandchildren in sessions of their own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from fuzzharness.core import interrupt

PARENT_ENV = "FUZZHARNESS_PARENT_PID"
WATCHDOG_INTERVAL = 1.0


def run_child(cmd: Sequence[str], *, timeout: float | None = None, stdout=subprocess.PIPE,
              env: dict[str, str] | None = None, text: bool = True) -> subprocess.CompletedProcess:
    """Run ``cmd`` to completion (see the module docstring); stderr is inherited.

    Raises :class:`subprocess.TimeoutExpired` after ``timeout`` seconds (the child is
    killed first) and re-raises whatever interrupted the wait (the child killed first).
    """
    child_env = dict(os.environ if env is None else env)
    child_env[PARENT_ENV] = str(os.getpid())
    proc = subprocess.Popen(list(cmd), stdout=stdout, env=child_env, text=text,
                            start_new_session=True)
    interrupt.register(proc.pid)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        interrupt.unregister(proc.pid)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, None)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        proc.kill()


def die_with_parent(parent_pid: int | None = None) -> None:
    """End this process when ``parent_pid`` (default ``$FUZZHARNESS_PARENT_PID``; none: do
    nothing) dies: ``PR_SET_PDEATHSIG`` on Linux, and a watchdog thread everywhere."""
    if parent_pid is None:
        text = os.environ.pop(PARENT_ENV, "")
        parent_pid = int(text) if text.isdigit() else 0
    if not parent_pid:
        return
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:
        os._exit(3)  # the parent died before we asked

    def watchdog() -> None:
        while True:
            time.sleep(WATCHDOG_INTERVAL)
            if os.getppid() != parent_pid:
                os._exit(3)

    threading.Thread(target=watchdog, name="parent-watchdog", daemon=True).start()
