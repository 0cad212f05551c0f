"""Random schedules: a sequence of primitive proposals against the current loop structure.

Each schedule primitive is one registered :class:`Primitive`.  Its ``propose`` looks at the
schedule as it is *now* (blocks, loops, extents), draws its arguments through ``data.draw``
and returns a thunk that applies the primitive — or ``None`` when the schedule offers no site.
Proposals aim to be accepted, but TVM's ``ScheduleError`` on a proposal is not a failure: the
step is recorded as rejected, the schedule is restored and generation goes on.

Invariants (after Halide's schedule fuzzer):

* the draws of a step do not depend on whether the primitive is enabled: a disabled primitive
  is proposed (draws made) but not applied.  Switching a primitive off therefore removes its
  steps without reshuffling the draws of the steps before it, so a failing case simplifies by
  switching features off;
* the primitive of every step is drawn from *all* registered primitives, in sorted name order,
  so registering a primitive changes generation (that is a harness version change) while a
  campaign filter does not;
* the result is TVM's own trace; replaying it on the unscheduled function gives a structurally
  equal module (``tests/test_schedules.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import strategies as st

from fuzzharness.registry import Registry
from fuzzharness.tvm_support import is_schedule_error

Apply = Callable[[], Any]


@dataclasses.dataclass(frozen=True)
class ScheduleOptions:
    max_steps: int = 8
    primitives: tuple[str, ...] | None = None  # enabled primitives; None: all


@dataclasses.dataclass
class Step:
    primitive: str
    outcome: str  # accepted | rejected | no_site | disabled
    error: str = ""

    def to_dict(self) -> dict[str, str]:
        d = {"primitive": self.primitive, "outcome": self.outcome}
        if self.error:
            d["error"] = self.error
        return d


class ScheduleState:
    """The schedule being built plus the queries proposals need."""

    def __init__(self, sch, data: Any):
        self.sch = sch
        self.data = data

    def draw(self, strategy):
        return self.data.draw(strategy)

    # -- structure queries (fresh every call: the schedule changes under us) -------------
    def block_names(self) -> list[str]:
        from oracles.program import blocks

        return sorted(blocks(self.sch.mod["main"]))

    def block_infos(self):
        from oracles.program import blocks

        return blocks(self.sch.mod["main"])

    def pick_block(self):
        """A random block RV (or None when the function has none)."""
        names = self.block_names()
        if not names:
            return None
        return self.sch.get_sblock(self.draw(st.sampled_from(names)))

    def loops(self, block) -> list:
        return list(self.sch.get_loops(block))

    def extent(self, loop) -> int:
        return int(self.sch.get(loop).extent)

    def loop_kinds(self, block) -> list[str]:
        """Per loop of ``block``: 'R' if it feeds a reduction (or opaque) iter, else 'S'."""
        realize = _block_realize(self.sch.mod["main"], str(self.sch.get(block).name_hint))
        reduce_vars: list = []
        for iv, value in zip(realize.block.iter_vars, realize.iter_values, strict=True):
            if int(iv.iter_type) != 0:  # not kDataPar
                reduce_vars += _vars_in(value)
        return [
            "R" if any(self.sch.get(lp).loop_var.same_as(r) for r in reduce_vars) else "S"
            for lp in self.loops(block)
        ]


def _block_realize(func, name: str):
    import tvm_ffi
    from tvm import s_tir

    found: list = []
    tvm_ffi.structural_walk(
        func,
        [(s_tir.SBlockRealize, lambda r: found.append(r) if r.block.name_hint == name else None)],
    )
    if not found:
        raise KeyError(name)
    return found[0]


def _vars_in(expr) -> list:
    import tvm_ffi
    from tvm import tirx

    found: list = []
    tvm_ffi.structural_walk(expr, [(tirx.Var, found.append)])
    return found


class Primitive:
    """One schedule primitive (or a small idiom of primitives) the generator can propose."""

    name: ClassVar[str]

    def propose(self, state: ScheduleState) -> Apply | None:
        raise NotImplementedError


primitives: Registry[Primitive] = Registry("schedule primitive")


def register(cls: type[Primitive]) -> type[Primitive]:
    primitives.add(cls.name, cls())
    return cls


def random_schedule(func, data: Any, options: ScheduleOptions):
    """Build a random schedule of ``func``; return ``(schedule, steps)``.

    TVM's own sampling instructions (``sample_perfect_tile``, ...) draw from the schedule's
    random state, seeded here from ``data``; their decisions are recorded in the trace.
    """
    from tvm import s_tir

    sch = s_tir.Schedule(func, seed=data.draw(st.integers(1, 2**31 - 1)))
    state = ScheduleState(sch, data)
    enabled = set(primitives.names() if options.primitives is None else options.primitives)
    names = primitives.names()
    steps: list[Step] = []
    n = data.draw(st.integers(0, options.max_steps))
    for _ in range(n):
        name = data.draw(st.sampled_from(names))
        thunk = primitives[name].propose(state)
        if thunk is None:
            steps.append(Step(name, "no_site"))
            continue
        if name not in enabled:
            steps.append(Step(name, "disabled"))
            continue
        backup = state.sch.copy()
        try:
            thunk()
        except Exception as e:  # noqa: BLE001
            if not is_schedule_error(e):
                raise
            state.sch = backup
            steps.append(Step(name, "rejected", _first_line(e)))
        else:
            steps.append(Step(name, "accepted"))
    return state.sch, steps


def _first_line(e: BaseException) -> str:
    text = str(e)
    for line in text.splitlines():
        if line.startswith("Error message:"):
            return line[len("Error message:") :].strip()[:200]
    return text.strip().splitlines()[0][:200] if text.strip() else type(e).__name__
