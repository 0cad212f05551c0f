"""A TVM that aborts inside a schedule primitive (tests only).

Loaded into workers and minimization lanes through ``FUZZHARNESS_PLUGINS``:
``s_tir.Schedule.reorder`` calls ``os.abort()`` — what a fatal check inside a TVM primitive
does (``LOG(FATAL)`` outside a ``ScheduleError``), which kills the process drawing the
schedule: a campaign's worker while it generates a case, and a minimization lane while it
shrinks that case's choices, unless the lane draws in a child.
"""

from __future__ import annotations

import os

from tvm import s_tir


def _aborting_reorder(self, *loops):  # noqa: ARG001
    os.abort()


s_tir.Schedule.reorder = _aborting_reorder
