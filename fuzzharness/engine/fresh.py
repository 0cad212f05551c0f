"""Fresh workers for the price of a fork: the zygote side of ``worker --fresh``.

Confirmation (:mod:`fuzzharness.campaign.confirm`) re-runs every failure in a worker process
that has run nothing before.  Starting one costs a Python start and a TVM import — about
1.3 s of CPU on the 2-core CI machine, more than most cases — so the pool keeps one *zygote*:
a worker that imports TVM, the harness and the plugins (and what a case imports on first
use), fills Python's and TVM's first-use caches by compiling three fixed cases whose kernels
it never runs (:mod:`fuzzharness.engine.preload`), reports ready, and then runs no case
itself.  For each task it receives it forks; the child runs that one task exactly as a
normal worker would (same protocol messages, on the same pipe) and exits.  Every child
therefore starts from the same state, in which no generated code has ever run — the state
of a zygote that has just become ready — which is what "fresh" means here, and a fork
costs ~15 ms.

Protocol additions (see :mod:`fuzzharness.engine.protocol`)::

    {"task": 7, "forked": pid}     the zygote, right after the fork
    {"task": 7, "exit": code}      the zygote, after the child ended (negative: a signal)

The pool ignores ``exit`` once the task has its verdict; without one, ``exit`` is the
child's death (a crash verdict, like a dead worker's).  A child that overruns the timeout is
killed with its process group (each child leads its own, so compiler subprocesses die with
it) and the zygote lives on.  Death of the zygote kills the child (``PR_SET_PDEATHSIG``), as
the driver's death kills the zygote.

Invariants: the zygote runs one child at a time and writes nothing while a child runs except
``forked`` (small, atomic on a pipe), so the child's lines are never interleaved with its
own; a child never reads stdin and never outlives one task.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

Write = Callable[[dict[str, Any]], None]


def serve_forked(lines: Iterable[bytes], serve: Callable[[dict[str, Any]], None], write: Write,
                 child_setup: Callable[[int], None]) -> int:
    """The zygote's loop: one fork per task line, until stdin ends.

    ``serve(task)`` runs a task to its verdict in the child; ``child_setup(zygote_pid)`` ties
    the child's life to the zygote's.  Returns the zygote's exit status.
    """
    from fuzzharness.engine import protocol

    zygote = os.getpid()
    for line in lines:
        if not line.strip():
            continue
        task = protocol.decode(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: one task, then gone (os._exit: no atexit, no finalizers)
            code = 0
            try:
                os.setpgid(0, 0)
                child_setup(zygote)
                serve(task)
            except BaseException:  # noqa: BLE001 - serve reports its own errors; this is a bug
                import traceback

                traceback.print_exc()
                code = 70
            finally:
                try:
                    sys.stderr.flush()
                    sys.stdout.flush()
                finally:
                    os._exit(code)
        try:
            os.setpgid(pid, pid)  # also here: the pool may kill the group before the child ran
        except OSError:
            pass  # the child already did it (EACCES after its exec-free start) or is gone
        write({"task": task.get("task"), "forked": pid})
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        write({"task": task.get("task"), "exit": code})
    return 0
