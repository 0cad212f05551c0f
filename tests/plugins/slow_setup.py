"""A workload whose first use in a process pays a slow one-time setup (through warmup.once),
like the first MetaSchedule case of a worker paying for TVM's tensor-intrinsic import."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fuzzharness.core import warmup
from fuzzharness.generators.workloads.base import register
from fuzzharness.generators.workloads.row_reduce import RowSum

SETUP_SECONDS = 3.0
#: a directory where a slow case leaves a file named by its N when it starts (tests wait on it)
STARTED_DIR_ENV = "FUZZHARNESS_TEST_STARTED_DIR"


@register
class SlowSetupRowSum(RowSum):
    name = "test_slow_setup"
    default = False

    def prim_func(self, params):
        warmup.once("test_slow_setup", lambda: time.sleep(SETUP_SECONDS))
        return super().prim_func(params)


@register
class SlowRowSum(RowSum):
    """The same delay paid by every case, not as a setup: that is what a timeout is for."""

    name = "test_slow_case"
    default = False

    def prim_func(self, params):
        if os.environ.get(STARTED_DIR_ENV):
            (Path(os.environ[STARTED_DIR_ENV]) / str(params["N"])).touch()
        time.sleep(SETUP_SECONDS)
        return super().prim_func(params)
