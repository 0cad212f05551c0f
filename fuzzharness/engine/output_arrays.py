"""Output arrays of a failing case, carried in its verdict and kept as ``.npz`` files.

Confirmation (:mod:`fuzzharness.campaign.confirm`) compares the outputs of a failure seen in a
campaign's worker with those of the same case run alone.  When they differ — the signature
of a kernel that reads memory nothing wrote — both are kept beside the database, so that
the difference can be looked at and attached to a bug report.  The worker runs a task whose
``"outputs"`` key is true, and whose verdict is a finding with outputs, with the arrays in
``verdict.details[KEY]``: an ``.npz`` archive (numpy's own format, no pickle), base64 text,
so it crosses the JSON-lines protocol and Ray as plain data.  The driver takes it out again
before anything is stored (:func:`take`).
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import numpy as np

KEY = "outputs_npz"


def encode(outputs: dict[str, np.ndarray]) -> str:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{name: np.asarray(a) for name, a in outputs.items()})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def decode(text: str) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(base64.b64decode(text)), allow_pickle=False) as z:
        return {name: z[name] for name in z.files}


def take(details: dict[str, Any]) -> str | None:
    """Remove and return the encoded outputs from a verdict's details (None: none there)."""
    return details.pop(KEY, None)


def write(text: str, path: Path) -> Path:
    """Write encoded outputs as the ``.npz`` file ``path`` (its folder is created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(text))
    return path
