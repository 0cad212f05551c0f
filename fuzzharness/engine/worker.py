"""A persistent worker process: imports TVM once, then generates and runs cases on request.

Started by :class:`fuzzharness.engine.pool.WorkerPool` as ``python -m fuzzharness.engine.worker``.
The protocol (see :mod:`fuzzharness.engine.protocol`) runs over the process's original
stdout, which is moved to a private file descriptor first: fd 1 and fd 2 are then pointed at
the worker's log file, so nothing TVM or LLVM prints can corrupt the protocol.

Memory: with ``--memory-mb`` the address space is capped with ``RLIMIT_AS``; an allocation
beyond it fails inside the case (MemoryError / std::bad_alloc) or kills the process, and the
driver classifies either as a crash with kind ``out_of_memory``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import traceback


def _take_protocol_fd() -> int:
    out = os.dup(1)
    os.dup2(2, 1)  # fd 2 is already the log file (set up by the pool)
    sys.stdout = sys.stderr
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fuzzharness-worker")
    ap.add_argument("--memory-mb", type=int, default=0)
    args = ap.parse_args(argv)

    proto_out = _take_protocol_fd()
    if args.memory_mb > 0:
        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    import tvm  # noqa: F401  (the one expensive import, done before the first task)

    import fuzzharness.execute  # noqa: F401
    import generators.cases  # noqa: F401
    from fuzzharness.engine import protocol
    from fuzzharness.engine.tasks import load_plugins, run_task

    load_plugins()

    def send(msg) -> None:
        os.write(proto_out, protocol.encode(msg))

    send({"ready": os.getpid()})
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        task = protocol.decode(line)
        # The log holds only the current task's output: its tail explains a crash.
        sys.stderr.flush()
        try:
            os.ftruncate(2, 0)
        except OSError:  # /dev/null
            pass
        try:
            run_task(task, send)
        except BaseException as e:  # noqa: BLE001 - report, then keep serving
            from fuzzharness.verdict import Stage, Status, Verdict

            status = Status.CRASH if isinstance(e, MemoryError) else Status.HARNESS_ERROR
            v = Verdict(status, Stage.GENERATE, message=f"{type(e).__name__}: {e}",
                        details={"traceback": traceback.format_exc(limit=-8),
                                 **({"kind": "out_of_memory"} if isinstance(e, MemoryError) else {})})
            send({"task": task.get("task"), "verdict": v.to_dict()})
        sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
