"""Kernels that misbehave *in the generated code*, wherever it runs: for the remote-device tests.

Loaded through ``FUZZHARNESS_PLUGINS=tests.plugins.remote_chaos`` into the workers and into
the RPC server (:mod:`fuzzharness.backends.rpc_server` imports plugins too).

Workload ``test_kernel_chaos`` (drawn only when named): a float32 row sum whose ``T.init()``
also calls into the runtime, chosen by the drawn ``behaviour``:

``abort``      ``call_extern("abort")``: the process running the kernel dies of SIGABRT — the
               worker locally, the session process on an RPC server;
``drop_once``  ``call_packed("test_remote_chaos.drop_once")``: in a process whose environment
               names a marker folder (``$FUZZHARNESS_TEST_DROP_DIR``, given to the RPC server
               only), the first call anywhere kills its own process with SIGKILL — to the
               client, a session whose connection dropped; every later call (and every call
               in a process without the variable, e.g. a local worker) does nothing;
``none``       behaves.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import tvm_ffi
from hypothesis import strategies as st

from fuzzharness.generators.workloads.base import GenOptions
from fuzzharness.generators.workloads.base import register as register_workload
from fuzzharness.generators.workloads.row_reduce import RowSum

BEHAVIOURS = ("none", "none", "abort", "drop_once")  # "none" twice: mostly behaving cases
DROP_DIR_ENV = "FUZZHARNESS_TEST_DROP_DIR"


@tvm_ffi.register_global_func("test_remote_chaos.drop_once", override=True)
def drop_once() -> int:
    folder = os.environ.get(DROP_DIR_ENV)
    if folder:
        marker = os.path.join(folder, "dropped")
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return 0
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)
    return 0


@register_workload
class KernelChaosRowSum(RowSum):
    name = "test_kernel_chaos"
    description = "row sum whose generated code aborts or drops its RPC session (tests only)"
    dtype_labels = ("float32",)
    default = False

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        return {"M": data.draw(st.integers(1, 8)), "N": data.draw(st.integers(1, 16)),
                "dtype": "float32", "behaviour": data.draw(st.sampled_from(BEHAVIOURS))}

    def source(self, p: dict[str, Any]) -> str:
        src = super().source(p)
        call = {"none": None,
                "abort": 'T.call_extern("int32", "abort")',
                "drop_once": 'T.call_packed("test_remote_chaos.drop_once")'}[p["behaviour"]]
        if call is None:
            return src
        init = "B[vi] = T.float32(0)"
        assert init in src
        return src.replace(init, f'B[vi] = T.float32(0) + T.Cast("float32", {call})')
