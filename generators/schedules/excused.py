"""Which ``s_tir.Schedule`` methods the generators do *not* produce, and why.

``tests/test_schedules.py`` lists every public method of ``tvm.s_tir.Schedule`` from the
class itself and fails when one is neither covered by a registered primitive (its
``covers``), by a schedule source (:data:`SOURCE_COVERS`), by a lookup every proposal makes
(:data:`LOOKUPS`), nor excused here with a reason.  A TVM upgrade that adds a primitive
therefore fails the suite until someone decides.
"""

from __future__ import annotations

#: methods that only look things up; proposals call them to find their sites (they are in
#: the traces, but not counted as applied primitives)
LOOKUPS = ("get_sblock", "get_loops", "get_child_blocks")

#: methods produced by a schedule source other than the random primitives
SOURCE_COVERS = {
    "metaschedule": ("enter_postproc",),
}

EXCUSED: dict[str, str] = {
    # -- not schedule transformations ------------------------------------------------------
    "work_on": "selects the function of a multi-function module; every workload is one function",
    "copy": "bookkeeping (the generator copies the schedule before each step to roll back)",
    "seed": "re-seeds the sampler; the generator seeds each Schedule once from the case's draws",
    "fork_seed": "derives a seed for another schedule; nothing to transform",
    "show": "prints the module; no effect on the IR",
    "get": "returns the IR node behind a random variable (used by proposals, not traced)",
    "get_sref": "returns the sref behind a random variable (used internally, not traced)",
    "remove_rv": "drops a random variable from the symbol table; no effect on the IR",
    "get_producers": "a lookup with no effect on the IR: proposals read producers and consumers "
                     "from the IR itself (generators/schedules/sites.py); MetaSchedule's "
                     "sketches call it",
    "get_consumers": "a lookup with no effect on the IR: proposals read producers and consumers "
                     "from the IR itself (generators/schedules/sites.py); MetaSchedule's "
                     "sketches call it",
    "get_output_blocks": "a lookup with no effect on the IR: proposals tell outputs from "
                         "intermediates by the buffers blocks allocate (sites.py)",
    "same_as": "object identity (inherited from the FFI object)",
    "is_": "object identity (inherited from the FFI object)",
    # -- outside what an llvm schedule can do correctly ------------------------------------
    "bind": "binds a loop to a GPU thread axis; the llvm build refuses thread bindings. "
            "GPU schedules belong to the GPU back ends (generators/gpu/)",
    "tensorize": "needs a registered tensor intrinsic whose pattern the block matches (x86: "
                 "int8 VNNI/AMX dot products with packed layouts and host support); tensor-core "
                 "tensorize belongs to the GPU back ends (generators/gpu/). MetaSchedule's design spaces "
                 "may still emit it for int8 workloads on a VNNI target",
    "unsafe_hide_buffer_access": "hides accesses from dependence analysis by design: later "
                                 "primitives may then produce wrong programs that are the "
                                 "schedule's fault, not the compiler's",
}
