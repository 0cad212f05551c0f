"""One minimization lane's process: started, fed and read by threads of its own.

:class:`fuzzharness.campaign.minimizing.lanes.Lanes` schedules buckets onto lanes; this is the
plumbing under it.  A lane is ``python -m fuzzharness.campaign.minimizing.lane`` in a session
of its own (so that killing its process group kills TVM's compiler children too), its stderr
in ``logs/lane-N.log``; JSON lines both ways, a writer thread draining ``outbox`` and a reader
thread handing each message (and ``None`` at its end) to ``on_message``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


@dataclasses.dataclass
class LaneProcess:
    id: int
    proc: subprocess.Popen
    outbox: queue.Queue
    started: float
    ready: bool = False
    job: dict[str, Any] | None = None  # the bucket row being minimized
    job_started: float = 0.0
    alive: bool = True


def spawn_lane(lane_id: int, log_dir: Path | None, python: str, env: dict[str, str],
               on_message: Callable[[int, dict[str, Any] | None], None]) -> LaneProcess:
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        log = open(log_dir / f"lane-{lane_id}.log", "ab")  # noqa: SIM115 - the child's
    else:
        log = open(os.devnull, "ab")  # noqa: SIM115
    env.setdefault("PYTHONUNBUFFERED", "1")
    proc = subprocess.Popen([python, "-m", "fuzzharness.campaign.minimizing.lane",
                             "--parent-pid", str(os.getpid())],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                            env=env, start_new_session=True)
    log.close()
    lane = LaneProcess(lane_id, proc, queue.Queue(), time.monotonic())
    threading.Thread(target=_read, args=(lane, on_message), daemon=True,
                     name=f"lane-{lane_id}-reader").start()
    threading.Thread(target=_write, args=(lane,), daemon=True,
                     name=f"lane-{lane_id}-writer").start()
    return lane


def _read(lane: LaneProcess, on_message) -> None:
    for line in lane.proc.stdout:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        on_message(lane.id, msg)
    on_message(lane.id, None)


def _write(lane: LaneProcess) -> None:
    while True:
        msg = lane.outbox.get()
        if msg is None:
            break
        try:
            lane.proc.stdin.write((json.dumps(msg, separators=(",", ":"), allow_nan=True)
                                   + "\n").encode())
            lane.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            break
    try:
        lane.proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def killpg(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
