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
"""

from __future__ import annotations

import json
from typing import Any


def encode(msg: dict[str, Any]) -> bytes:
    return (json.dumps(msg, separators=(",", ":"), allow_nan=True) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    return json.loads(line)
