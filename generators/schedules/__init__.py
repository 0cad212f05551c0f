"""Schedule generation.  Importing this package registers every primitive module below."""

from fuzzharness.generators.schedules import (  # noqa: F401  (registration)
    block_iter_order,
    blockize,
    buffer_access,
    cache,
    compute_location,
    fuse,
    fuse_epilogue,
    inline,
    layout,
    loop_partition,
    merge,
    padding,
    parallel,
    pipeline,
    pragma,
    read_write_at,
    reduction,
    reindex,
    reorder,
    rolling_buffer,
    split,
    storage,
    unit_loop,
    unroll,
    vectorize,
)
from fuzzharness.generators.schedules.base import (
    Primitive,
    ScheduleOptions,
    ScheduleState,
    Step,
    primitives,
    random_schedule,
)

__all__ = ["Primitive", "ScheduleOptions", "ScheduleState", "Step", "primitives", "random_schedule"]
