"""The driver ↔ worker wire format: one JSON object per line.

driver → worker (a task)::

    {"task": 7, "generate": {"seed": 1, "index": 7, "settings": {...}}}
    {"task": 8, "case": {...case JSON...}}

worker → driver::

    {"ready": pid}                                   once, after importing TVM
    {"task": 7, "case": {...}}                       the generated case, before it runs
    {"task": 7, "stage": "lower"}                    before every stage
    {"task": 7, "verdict": {...}}                    the end of the task

The stage messages are what lets the driver blame a segfault or a hang on the right stage:
the last stage announced before the worker died is the stage that killed it.

Every worker → driver message also carries ``"at"``: the worker's ``time.monotonic()`` when
it wrote the message (:func:`stamped`; the same clock as the driver's, one host).  The driver
may read a message long after it was written — while its caller holds the pool's loop (the
end-of-run damage search, a test writing its repro) — and judges a task's timeout by when the
worker wrote, not by when the driver read: a verdict written after the deadline is a timeout,
as it would have been had the driver been watching.
"""

from __future__ import annotations

import json
import time
from typing import Any


def encode(msg: dict[str, Any]) -> bytes:
    return (json.dumps(msg, separators=(",", ":"), allow_nan=True) + "\n").encode()


def stamped(msg: dict[str, Any]) -> dict[str, Any]:
    """``msg`` with the time the worker writes it (``"at"``, ``time.monotonic()``)."""
    return {**msg, "at": time.monotonic()}


def decode(line: bytes) -> dict[str, Any]:
    return json.loads(line)
