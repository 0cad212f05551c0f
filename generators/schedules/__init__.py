"""Schedule generation.  Importing this package registers every primitive module below."""

from generators.schedules import fuse, parallel, reorder, split, unroll, vectorize  # noqa: F401
from generators.schedules.base import (
    Primitive,
    ScheduleOptions,
    ScheduleState,
    Step,
    primitives,
    random_schedule,
)

__all__ = ["Primitive", "ScheduleOptions", "ScheduleState", "Step", "primitives", "random_schedule"]
