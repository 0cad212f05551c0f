"""The second schedule source: MetaSchedule design spaces, sampled without measuring.

TVM's auto-scheduler sketches are part of the compiler under test, and they produce
schedules a random primitive walk rarely reaches (multi-level tiling, rfactor of
cross-thread reductions, parallel/vectorise/unroll rewriting by postprocessors).  A case
drawn from this source:

1. builds a ``TuneContext`` with the ``post-order-apply`` space generator for a *fixed* CPU
   target (:data:`MS_TARGET`: the design space must not depend on the generating machine);
2. picks one design space (a sketch) by draw;
3. replays the sketch's instructions on a fresh ``Schedule`` seeded from the draws *without*
   their decisions, so every sampling instruction (tile sizes, compute locations, unroll
   budgets) is sampled anew;
4. applies the space generator's postprocessors (after ``enter_postproc``), as the tuner would
   before measuring.  A sample a postprocessor refuses is re-drawn (up to
   :data:`ATTEMPTS` times; the case then keeps the unscheduled function and records the step
   as rejected).

The result is an ordinary trace (sampling decisions included) stored and replayed like any
other case.  Non-ScheduleError exceptions from TVM propagate: they are findings.

Cost: the first ``TuneContext`` of a process imports ``tvm.s_tir.tensor_intrin``, which parses
some 250 TVMScript functions (≈ 4 s with the speed-up in :mod:`fuzzharness.core.warmup`, which
also keeps that one-time cost out of the case's timeout).  Workers are persistent, so this is
paid once per worker, on its first MetaSchedule case.  After that a sample costs milliseconds.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzzharness.core import warmup
from fuzzharness.core.tvm_support import is_schedule_error
from fuzzharness.generators.schedules.base import LOOKUPS, Step, method_name

#: design spaces are generated for this target, whatever the case's target: ``num-cores``
#: decides parallel extents, and must not come from the generating machine
MS_TARGET = {"kind": "llvm", "num-cores": 4}
ATTEMPTS = 3
SOURCE = "metaschedule"


def prepare() -> None:
    """Import MetaSchedule's tensor intrinsics once per process (see fuzzharness.core.warmup)."""

    warmup.tensor_intrinsics()


def metaschedule_schedule(func, data: Any):
    """Sample one MetaSchedule design space of ``func``; return ``(schedule, steps)``."""
    import tvm
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms

    prepare()
    mod = tvm.IRModule({"main": func})
    ctx = ms.TuneContext(mod=mod, target=tvm.target.Target(MS_TARGET),
                         space_generator="post-order-apply",
                         rand_state=data.draw(st.integers(1, 2**31 - 1)), num_threads=1)
    spaces = ctx.generate_design_space()
    sketch = spaces[data.draw(st.integers(0, len(spaces) - 1))].trace
    last = ""
    for _ in range(ATTEMPTS):
        sch = s_tir.Schedule(mod, seed=data.draw(st.integers(1, 2**31 - 1)))
        try:
            s_tir.Trace(sketch.insts, {}).apply_to_schedule(sch, remove_postproc=True)
            sch.enter_postproc()
            ok = all(p.apply(sch) for p in ctx.space_generator.postprocs)
        except Exception as e:  # noqa: BLE001
            if not is_schedule_error(e):
                raise
            last = str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__
            continue
        if ok:
            calls = tuple(method_name(i.kind.name) for i in sch.trace.insts
                          if i.kind.name not in LOOKUPS)
            return sch, [Step(SOURCE, "accepted", calls=calls)]
        last = "a postprocessor refused the sample"
    return s_tir.Schedule(func), [Step(SOURCE, "rejected", last)]
