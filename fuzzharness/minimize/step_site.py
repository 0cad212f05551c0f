"""The *site* of a schedule step: what the block or loop it acts on looked like before it.

A schedule-level bug is reached by many routes (a cache_write and a reverse_compute_at, a
cache_read and a compute_at, a merge, a write_at … all put a second block under the loop a
later ``reindex`` or ``decompose_padding`` acts on), and the minimized trace keeps the route.
What the routes share is the culprit step (:mod:`fuzzharness.minimize.step_bisect`) and
the shape of the place it acts on.  :func:`site_facts` replays the trace up to that step (a
TIR case's, or a graph's scheduled function's: :func:`fuzzharness.minimize.step_bisect.probed_trace`) and
describes each block and loop among the step's inputs in a few route-free classes:

``site_reduction``          a block with a reduction iterator (an init, an identity to keep),
                            or a loop that a reduction iterator of a block under it is
                            bound to (partitioning it splits the sum, not the outputs);
``site_reduction_not_sum``  that reduction's combiner is not ``+`` (max, min, an argmax's
                            select): its identity is not 0, a bias cannot be folded into it,
                            padding with 0 is not neutral;
``site_shares_loop``        the innermost loop around the block (or the loop itself) holds
                            another block: a sibling the primitive must respect;
``site_shares_outer_loop``  the outermost loop around the block holds another block;
``site_nested``             the block or loop sits inside a block other than the root (a
                            blockize or loop-partition wrapper, an opaque block);
``site_dependence_hidden``  a buffer the site reads or writes is also accessed by a block
                            inside a wrapper whose declared reads/writes leave it out (a
                            loop_partition wrapper's empty regions): a primitive that reads
                            dependences from regions cannot see that producer or consumer.

Measured on the hand-labelled repros (benchmarks/dedup_precision.py, distinct bugs with
known bugs grouped): keying a trigger by its culprit step and these classes instead of its
primitive set took root causes per real bug from 1.54 to 1.36 (tuning seed) and 1.76 to
1.34 (held-out seed; graphs keyed without operators included), 0 false merges on the tuning
seed; the step alone merged 6 pairs of different bugs, the sharing classes alone 2.  The
classes were chosen on the tuning seed; ``site_dependence_hidden`` keeps a cache_write after
blockize apart from one after loop_partition (as a mechanism of its own, keyed without the
step, it merged 7 loop_partition bugs: it is a class, not a mechanism).  ``site_reduction``
of a *loop* keeps a second loop_partition of a spatial loop (iterations dropped) apart from
one of a reduction loop (inits re-run), which the step and the other classes merged.

Invariants: a function of the case's plain data (workload, parameters, trace); the facts of
a trace without a schedule step are empty; nothing here runs a kernel or compiles.
"""

from __future__ import annotations

from typing import Any

from fuzzharness.core.case import Case
from fuzzharness.core.kinds import shrink_kind
from fuzzharness.generators.schedules.site_classes import SITE_FACTS, site_classes
from fuzzharness.minimize import trace_edit

__all__ = ["SITE_FACTS", "last_step_index", "program_and_trace", "site_facts"]


def last_step_index(trace: Any) -> int | None:
    """The index of the trace's last schedule step (not a lookup or a sampler)."""
    steps = trace_edit.step_indices(trace)
    return steps[-1] if steps else None


def site_facts(case: Case) -> tuple[str, ...]:
    """The site classes of the inputs of ``case``'s last schedule step, in the program as it
    was just before that step (see the module docstring)."""
    from fuzzharness.core.tvm_support import replay_trace

    func, trace = program_and_trace(case)
    index = last_step_index(trace) if func is not None else None
    if index is None:
        return ()
    insts = trace_edit.instructions(trace)
    before = trace_edit.remove(trace, range(index, len(insts)), with_dependents=False)
    sch = replay_trace(func, before)
    replayed = list(sch.trace.insts)
    kept = trace_edit.instructions(before)
    if len(replayed) != len(kept):
        return ()  # the replay recorded other instructions: names cannot be mapped
    objects: dict[str, Any] = {}
    for inst, done in zip(kept, replayed, strict=True):
        objects.update(zip(trace_edit.outputs(inst), done.outputs, strict=False))
    return site_classes(sch, [objects[n] for n in insts[index][1]
                              if isinstance(n, str) and n in objects])


def program_and_trace(case: Case) -> tuple[object, object]:
    """The unscheduled PrimFunc the probed trace applies to, and that trace ((None, None)
    when the case has none): a TIR workload's function, or a graph's fused function as
    its schedule found it (legalized the way the case's run legalizes it)."""
    return shrink_kind(case).program_and_trace(case)
