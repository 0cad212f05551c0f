"""A persistent worker process: imports TVM once, then generates and runs cases on request.

Started by :class:`fuzzharness.engine.pool.WorkerPool` as ``python -m fuzzharness.engine.worker``.
The protocol (see :mod:`fuzzharness.engine.protocol`) runs over the process's original
stdout, which is moved to a private file descriptor first: fd 1 and fd 2 are then pointed at
the worker's log file, so nothing TVM or LLVM prints can corrupt the protocol.  The log is
truncated at the start of every task, so its tail explains the task that killed the worker;
``faulthandler`` (and TVM's own segfault handler, which replaces it for SIGSEGV) add the
stack of a segfault or abort to it.

Memory (``--memory-mb``): the cap is ``RLIMIT_DATA`` — private writable memory (heap, anonymous
mmaps, thread stacks) — not ``RLIMIT_AS``.  Measured on the 2-core CI machine after 120
cases: VmSize 590 MB but VmData 243 MB and RSS 310 MB; with 64 TVM threads VmSize passes 1 GB
while RSS stays at 240 MB, and glibc reserves 64 MB of address space per malloc arena, so an
address-space cap fails at random on many-core hosts while a data cap tracks what the worker
really uses (thread stacks count: 8 MB each).  Beyond the cap, allocations fail inside the
case: ``MemoryError`` in Python and numpy, ``std::bad_alloc`` (TVM ``InternalError``) in C++;
execution classifies both as ``out_of_memory`` in the stage that was running.  When a case
leaves the worker above :data:`RECYCLE_FRACTION` of the cap, the worker says ``{"bye": ...}``
just before that task's verdict and exits after it; the pool starts a fresh worker (not
counted as a crash).

Parent death: the worker asks the kernel for SIGKILL when its parent dies (Linux
``PR_SET_PDEATHSIG``), re-checks the parent pid right after (the parent may have died before
the request), and a watchdog thread polls the parent pid elsewhere; between tasks EOF on
stdin ends the loop too.  A SIGKILLed driver therefore leaves no orphan workers behind, not
even one stuck in an endless loop (``tests/test_durability.py``).

``--fresh``: the worker is a *zygote* that forks a child per task and runs none itself, so
that every task gets a process that has run nothing before (:mod:`fuzzharness.engine.fresh`).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import threading
import time
import traceback

RECYCLE_FRACTION = 0.6
#: "1": pay one-time setups (fuzzharness.core.warmup) before "ready" (benchmarks time steady state)
WARM_START_ENV = "FUZZHARNESS_WARM_START"
WATCHDOG_INTERVAL = 1.0


def _take_protocol_fd() -> int:
    out = os.dup(1)
    os.dup2(2, 1)  # fd 2 is already the log file (set up by the pool)
    sys.stdout = sys.stderr
    return out


def die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, 9)  # SIGKILL
        except (OSError, AttributeError):
            pass
    if parent_pid and os.getppid() != parent_pid:
        os._exit(3)  # the parent died before we asked

    def watchdog() -> None:
        while True:
            time.sleep(WATCHDOG_INTERVAL)
            if parent_pid and os.getppid() != parent_pid:
                os._exit(3)

    threading.Thread(target=watchdog, name="parent-watchdog", daemon=True).start()


def data_memory_mb() -> float | None:
    """This process's VmData (private writable memory, what RLIMIT_DATA caps), in MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fuzzharness-worker")
    ap.add_argument("--memory-mb", type=int, default=0)
    ap.add_argument("--parent-pid", type=int, default=0)
    ap.add_argument("--fresh", action="store_true", help="fork a fresh child per task")
    args = ap.parse_args(argv)

    proto_out = _take_protocol_fd()
    die_with_parent(args.parent_pid)
    import faulthandler

    faulthandler.enable(file=sys.stderr)
    if args.memory_mb > 0:
        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    try:
        import tvm  # the one expensive import, done before the first task

        from fuzzharness.core import tvm_compat

        tvm_compat.install()  # another TVM release under --tvm-python: its spellings of IR names

        import fuzzharness.execution.stages  # noqa: F401
        import fuzzharness.generators.cases  # noqa: F401
        from fuzzharness.core.plugins import load_plugins
        from fuzzharness.engine import preload, protocol
        from fuzzharness.engine.tasks import run_task

        load_plugins()
    except BaseException as e:  # noqa: BLE001 - say why in the log, the pool quotes it
        hint = f" under a {args.memory_mb} MB memory limit" if isinstance(e, MemoryError) else ""
        print(f"worker cannot start{hint}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return 3

    stage = ["generate"]
    retiring = [False]

    def write(msg) -> None:  # each message carries the time it was written (protocol.py)
        os.write(proto_out, protocol.encode(protocol.stamped(msg)))

    def send(msg) -> None:
        if "stage" in msg:
            stage[0] = msg["stage"]
        if "verdict" in msg and args.memory_mb > 0 and not args.fresh:
            # Decide before the verdict goes out: once the driver has it, it may hand this
            # worker the next task at once, and the "bye" must already be there.
            used = data_memory_mb()
            if used is not None and used > RECYCLE_FRACTION * args.memory_mb:
                retiring[0] = True
                os.write(proto_out, protocol.encode(
                    {"bye": f"memory: VmData {used:.0f} MB of {args.memory_mb} MB"}))
        write(msg)

    current: list = [None]

    def on_setup(event: str, name: str, seconds: float) -> None:
        # the driver pauses the case's clock during one-time setups (fuzzharness/warmup.py)
        key = "setup" if event == "begin" else "setup_done"
        send({"task": current[0], key: name, "seconds": seconds})

    from fuzzharness.core import warmup

    if args.fresh or os.environ.get(WARM_START_ENV) == "1":
        # The zygote pays the one-time setups once, before it is ready: each forked child
        # inherits them instead of paying seconds per confirmed MetaSchedule or GPU case.
        # (Persistent workers pay them at their first case that needs them: a worker that
        # restarts after a crash should not pay for what it may never use.)
        warmup.tensor_intrinsics()
        # ... and imports what a case imports on first use, which each child would import
        # again (a child's imports die with it; engine/preload.py)
        for missing in preload.case_modules():
            print(f"not preloaded (optional): {missing}", file=sys.stderr, flush=True)
        if args.fresh:  # ... and fills what a case fills on first use, running no kernel
            for problem in preload.dry_runs():
                print(f"zygote warm-up: {problem}", file=sys.stderr, flush=True)
    warmup.set_notifier(on_setup)
    send({"ready": os.getpid(), "tvm": tvm.__version__})  # the TVM this worker runs

    def serve(task) -> None:
        current[0] = task.get("task")
        # The log holds only the current task's output: its tail explains a crash.
        sys.stderr.flush()
        try:
            os.ftruncate(2, 0)
        except OSError:  # /dev/null
            pass
        stage[0] = "generate"
        if task.get("sequence"):  # first the cases that ran before it (campaign/suspects.py)
            _run_quietly(task, send, run_task)
        try:
            run_task(task, send)
        except BaseException as e:  # noqa: BLE001 - report, then keep serving
            send({"task": task.get("task"), "verdict": _escaped(e, stage[0]).to_dict()})
        sys.stderr.flush()

    if args.fresh:  # a child per task, whose recycling is its exit
        from fuzzharness.engine.fresh import serve_forked

        return serve_forked(sys.stdin.buffer, serve, write, die_with_parent)
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        serve(protocol.decode(line))
        if retiring[0]:
            return 0
    return 0


def _run_quietly(task, send, run_task) -> None:
    """Run ``task["sequence"]`` — the cases a campaign's worker ran before this one — without
    reporting them, as a one-time setup of the task (its clock stops meanwhile)."""
    tid = task.get("task")
    send({"task": tid, "setup": "earlier cases", "seconds": 0.0})
    for earlier in task["sequence"]:
        try:
            run_task(earlier, lambda msg: None)
        except Exception:  # noqa: BLE001, S110 - what they do is not this task's verdict
            pass
    sys.stderr.flush()
    send({"task": tid, "setup_done": "earlier cases", "seconds": 0.0})


def _escaped(e: BaseException, stage: str):
    """A verdict for an exception that escaped :func:`run_task` (it catches TVM's own)."""
    from fuzzharness.core.verdict import Stage, Status, Verdict
    from fuzzharness.execution.stages import out_of_memory_verdict

    if isinstance(e, MemoryError):
        return out_of_memory_verdict(Stage(stage), e)
    return Verdict(Status.HARNESS_ERROR, Stage(stage), message=f"{type(e).__name__}: {e}",
                   details={"traceback": traceback.format_exc(limit=-8)})


if __name__ == "__main__":
    sys.exit(main())
