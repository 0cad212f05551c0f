"""A workload that records, when its program is built, whether the modules a zygote preloads
(``fuzzharness/engine/preload.py``) are already imported in the process that runs it, and how
many programs that process parsed before (the zygote's dry runs parse theirs)."""

from __future__ import annotations

import json
import os
import sys

from fuzzharness.core.tvm_support import parse_prim_func
from fuzzharness.engine import preload
from fuzzharness.generators.workloads.base import register
from fuzzharness.generators.workloads.row_reduce import RowSum

PROBE_FILE_ENV = "FUZZHARNESS_TEST_PRELOAD_PROBE"


@register
class PreloadProbeRowSum(RowSum):
    name = "test_preload_probe"
    default = False

    def prim_func(self, params):
        missing = [m for m in (*preload.CASE_MODULES, "fuzzharness.kinds.relax")
                   if m not in sys.modules]
        with open(os.environ[PROBE_FILE_ENV], "a") as f:
            f.write(json.dumps({"pid": os.getpid(), "missing": missing,
                                "parsed": parse_prim_func.cache_info().currsize}) + "\n")
        return super().prim_func(params)
