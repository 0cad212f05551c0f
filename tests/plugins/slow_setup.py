"""A workload whose first use in a process pays a slow one-time setup (through warmup.once),
like the first MetaSchedule case of a worker paying for TVM's tensor-intrinsic import."""

from __future__ import annotations

import time

from fuzzharness.core import warmup
from fuzzharness.generators.workloads.base import register
from fuzzharness.generators.workloads.row_reduce import RowSum

SETUP_SECONDS = 3.0


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
        time.sleep(SETUP_SECONDS)
        return super().prim_func(params)
