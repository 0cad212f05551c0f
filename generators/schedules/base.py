"""Random schedules: a sequence of primitive proposals against the current loop structure.

Each schedule primitive (or small idiom of primitives) is one registered :class:`Primitive`.
Its ``propose`` looks at the schedule as it is *now* (blocks, loops, extents, buffers — see
:mod:`fuzzharness.generators.schedules.sites`), draws its arguments through ``state.draw`` and returns a
thunk that applies it, or ``None`` when the schedule offers no site.  Proposals aim to be
accepted, but TVM's ``ScheduleError`` on a proposal is not a failure: the step is recorded
as rejected, the schedule is restored and generation goes on.  Any *other* exception TVM
raises while scheduling propagates: the worker reports it as a ``compile_error`` at stage
``schedule`` (a TVM primitive should refuse an invalid request with a ScheduleError, never
crash on it).

Invariants (after Halide's schedule fuzzer):

* the draws of a step do not depend on whether the primitive is enabled: a disabled primitive
  is proposed (draws made) but not applied.  Switching a primitive off therefore removes its
  steps without reshuffling the draws of the steps before it, so a failing case simplifies by
  switching features off;
* the primitive of every step is drawn from *all* registered primitives, in sorted name order,
  each repeated ``weight`` times, so registering a primitive or changing a weight changes
  generation (a harness version change) while a campaign filter does not;
* a step that is not accepted leaves no trace: the schedule (trace included) is restored from
  a copy taken before the proposal, so lookups a proposal made do not clutter the stored trace;
* the result is TVM's own trace; replaying it on the unscheduled function gives a structurally
  equal module (``tests/test_schedules.py``).

Each step records the schedule methods it actually applied (``calls``, read from the trace
instructions it added), which is what coverage statistics count per TVM primitive.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis import strategies as st

from fuzzharness.core.registry import Registry
from fuzzharness.core.tvm_support import is_schedule_error
from fuzzharness.generators.schedules.sites import FunctionFacts, analyse

Apply = Callable[[], Any]

#: instruction kinds that only look things up (not counted as applied primitives)
LOOKUPS = frozenset({"GetSBlock", "GetLoops", "GetChildBlocks", "GetProducers",
                     "GetConsumers", "GetOutputBlocks"})


@dataclasses.dataclass(frozen=True)
class ScheduleOptions:
    max_steps: int = 8
    primitives: tuple[str, ...] | None = None  # enabled primitives; None: all
    #: always propose at sites where TVM is known to fail (see each primitive's docstring);
    #: off, such a site is still proposed in KNOWN_SITE_PERMILLE ‰ of the draws
    #: (ScheduleState.known_site), so that a fix or a regression of those bugs is seen
    known_bug_sites: bool = False
    #: the per-mille share of those draws without ``known_bug_sites``; 0 for in-process
    #: sweeps (a known site may segfault the process: campaigns run it in a worker)
    known_site_permille: int = 3


#: percent of the proposals of a primitive with a legality filter that drop it (parallel,
#: fuse, compute_inline, reverse_compute_inline, decompose_reduction; compute_at and rfactor
#: have their own): TVM must refuse what breaks its rules with a ScheduleError (a rejected
#: step), and what it accepts is judged like any schedule — "TVM accepts an illegal
#: schedule".  25 %: ~5 % of the proposals that find a site are illegal ones (600 cases)
ILLEGAL_PERCENT = 25

#: per mille of the proposals that may use a site where TVM is known to fail (each primitive
#: names its sites; known_bugs.toml records each bug): low enough that campaigns spend their
#: time on unknown bugs (the failures there are matched as known), high enough that the site
#: is still built — no exclusion without a record and a way back
KNOWN_SITE_PERMILLE = ScheduleOptions.known_site_permille


@dataclasses.dataclass
class Step:
    primitive: str
    outcome: str  # accepted | rejected | no_site | disabled | dropped (undone by finalize)
    error: str = ""
    calls: tuple[str, ...] = ()  # schedule methods applied by an accepted step
    #: the site classes of what its first call acted on, before it (site_classes.py; the
    #: reach census: campaign/reach.py); empty for a plain site
    site: tuple[str, ...] = ()
    illegal: bool = False  # proposed without the primitive's legality filter (state.illegal)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"primitive": self.primitive, "outcome": self.outcome}
        if self.illegal:
            d["illegal"] = True
        if self.error:
            d["error"] = self.error
        if self.calls:
            d["calls"] = list(self.calls)
        if self.site:
            d["site"] = list(self.site)
        return d


class Refused(Exception):
    """A proposal found, while applying, that the site does not fit after all (harness-side
    refusal): recorded and rolled back exactly like a ScheduleError."""


def _refusal(e: BaseException) -> bool:
    return isinstance(e, Refused) or is_schedule_error(e)


class ScheduleState:
    """The schedule being built plus the queries proposals need."""

    def __init__(self, sch, data: Any, options: ScheduleOptions | None = None):
        self.sch = sch
        self.data = data
        self.options = options or ScheduleOptions()
        self._facts: FunctionFacts | None = None
        self._analysed: tuple[Any, FunctionFacts] | None = None  # (PrimFunc, its facts)
        self.proposed_illegal = False  # this step's proposal dropped its legality filter

    def draw(self, strategy):
        return self.data.draw(strategy)

    def known_site(self) -> bool:
        """Whether this proposal may use a site where TVM is known to fail: always with
        ``known_bug_sites``, else in :data:`KNOWN_SITE_PERMILLE` ‰ of the draws.  One draw
        either way, so the switch shifts no other draw."""
        # Hypothesis puts extra weight on the bounds of a range (0, 1, 998, 999 drew 2 % of
        # 20 000 draws); its middle is uniform
        hit = 500 <= self.draw(st.integers(0, 999)) < 500 + self.options.known_site_permille
        return self.options.known_bug_sites or hit

    def illegal(self, percent: int | None = None) -> bool:
        """Whether this proposal drops its legality filter: in ``percent`` (default
        :data:`ILLEGAL_PERCENT`) % of the draws.  One draw either way, so the switch shifts
        no other draw; the step records it (``Step.illegal``)."""
        hit = self.draw(st.integers(0, 99)) < (ILLEGAL_PERCENT if percent is None else percent)
        self.proposed_illegal = self.proposed_illegal or hit
        return hit

    def invalidate(self) -> None:
        self._facts = None

    # -- structure queries ---------------------------------------------------------------
    @property
    def facts(self) -> FunctionFacts:
        """Blocks and buffers of the function as it is at the start of this step.

        Facts depend on the PrimFunc alone, and TVM IR is immutable: after a step that
        changed nothing (no site, disabled, rejected and rolled back) the function is the
        very same object, and its last analysis is reused rather than recomputed.  Blocks
        inside a ``T.init`` join the sites of a step only at the known-bug weight
        (:meth:`known_site`)."""
        if self._facts is None:
            func = self.sch.mod["main"]
            if self._analysed is None or not self._analysed[0].same_as(func):
                self._analysed = (func, analyse(func))
            self._facts = self._analysed[1]
            # blocks inside a T.init are sites at the known-bug weight (one draw, only when
            # the function has such blocks): no exclusion without a record and a way back
            if self._facts.init_blocks and self.known_site():
                self._facts = self._facts.with_init_blocks()
        return self._facts

    def block_names(self) -> list[str]:
        return self.facts.names()

    def pick_name(self, names: list[str]) -> str | None:
        return self.draw(st.sampled_from(names)) if names else None

    def pick_block(self, pred=None):
        """A random block RV among those satisfying ``pred(facts)`` (None when there is none)."""
        name = self.pick_name(self.facts.names(pred))
        return None if name is None else self.sch.get_sblock(name)

    def block_facts(self, block):
        return self.facts.blocks[str(self.sch.get(block).name_hint)]

    def pick_access(self, block) -> tuple[str, int]:
        """``("read" | "write", index)`` of one of ``block``'s buffer accesses (it has one)."""
        facts = self.block_facts(block)
        kinds = [k for k, acc in (("read", facts.reads), ("write", facts.writes)) if acc]
        kind = self.draw(st.sampled_from(kinds))
        n = len(facts.reads if kind == "read" else facts.writes)
        return kind, self.draw(st.integers(0, n - 1))

    def loops(self, block) -> list:
        return list(self.sch.get_loops(block))

    def extent(self, loop) -> int | None:
        from tvm import tirx

        e = self.sch.get(loop).extent
        return int(e.value) if isinstance(e, tirx.IntImm) else None

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

    def access_iters(self, block, kind: str, index: int) -> list[int]:
        """Positions of the block iterators that index its ``kind`` ('read'/'write') access."""
        node = self.sch.get(block)
        region = (node.reads if kind == "read" else node.writes)[index].region
        used: list = []
        for r in region:
            used += _vars_in(r.min)
        return [i for i, iv in enumerate(node.iter_vars) if any(iv.var.same_as(v) for v in used)]

    def annotations(self, block_or_loop) -> list[str]:
        return sorted(str(k) for k in self.sch.get(block_or_loop).annotations)

    # -- applying --------------------------------------------------------------------------
    def attempt(self, fn: Apply) -> bool:
        """Apply an optional part of an idiom; on a ScheduleError undo it and return False."""
        backup = self.sch.copy()
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            if not _refusal(e):
                raise
            self._restore(backup)
            return False
        return True

    def _restore(self, backup) -> None:
        # Thunks hold on to ``state.sch``; swap the state *in place* so they stay valid.
        self.sch = backup
        self.invalidate()


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
    """One schedule primitive (or a small idiom of primitives) the generator can propose.

    ``weight`` is its relative frequency in the step draw.  ``covers`` names the
    ``s_tir.Schedule`` methods its proposals call (checked against the class by
    ``tests/test_schedules.py``: every method is generated by some primitive or excused in
    :mod:`fuzzharness.generators.schedules.excused`).
    """

    name: ClassVar[str]
    weight: ClassVar[int] = 1
    covers: ClassVar[tuple[str, ...]] = ()

    def propose(self, state: ScheduleState) -> Apply | None:
        raise NotImplementedError

    def finalize(self, state: ScheduleState) -> list[Step]:
        """After the last step: undo what later steps made invalid (no draws allowed)."""
        return []


primitives: Registry[Primitive] = Registry("schedule primitive")


def register(cls: type[Primitive]) -> type[Primitive]:
    primitives.add(cls.name, cls())
    return cls


def menu() -> list[str]:
    """The step draw: every registered name, sorted, repeated ``weight`` times (steered:
    :mod:`generators.steering` raises what the feature census finds rare)."""
    from fuzzharness.generators.steering import primitive_weight

    return [n for n, p in primitives.items() for _ in range(primitive_weight(n, p.weight))]


def random_schedule(func, data: Any, options: ScheduleOptions):
    """Build a random schedule of ``func``; return ``(schedule, steps)``.

    TVM's own sampling instructions (``sample_perfect_tile``, ...) draw from the schedule's
    random state, seeded here from ``data``; their decisions are recorded in the trace.
    """
    from tvm import s_tir

    sch = s_tir.Schedule(func, seed=data.draw(st.integers(1, 2**31 - 1)))
    state = ScheduleState(sch, data, options)
    enabled = set(primitives.names() if options.primitives is None else options.primitives)
    choices = menu()
    steps: list[Step] = []
    n = data.draw(st.integers(0, options.max_steps))
    for _ in range(n):
        name = data.draw(st.sampled_from(choices))
        steps.append(_step(state, name, name in enabled))
    for _, primitive in primitives.items():
        if type(primitive).finalize is Primitive.finalize:
            continue  # the default repairs nothing (and schedules after it draw nothing)
        state.invalidate()
        backup = state.sch.copy()
        repairs = primitive.finalize(state)
        if not repairs:  # leave no lookups behind
            state._restore(backup)
        steps += repairs
    return state.sch, steps


def _step(state: ScheduleState, name: str, enabled: bool) -> Step:
    state.invalidate()
    state.proposed_illegal = False
    backup = state.sch.copy()
    before = len(state.sch.trace.insts)
    try:
        thunk = primitives[name].propose(state)
        if thunk is None:
            state._restore(backup)
            return Step(name, "no_site")
        if not enabled:
            state._restore(backup)
            return Step(name, "disabled", illegal=state.proposed_illegal)
        thunk()
    except Exception as e:  # noqa: BLE001
        if not _refusal(e):
            raise
        state._restore(backup)
        return Step(name, "rejected", first_line(e), illegal=state.proposed_illegal)
    from fuzzharness.generators.schedules.site_classes import step_site_classes

    added = state.sch.trace.insts[before:]
    calls = tuple(method_name(i.kind.name) for i in added if i.kind.name not in LOOKUPS)
    return Step(name, "accepted", calls=calls, site=step_site_classes(backup, added, LOOKUPS),
                illegal=state.proposed_illegal)


@functools.cache
def method_name(kind: str) -> str:
    """The ``s_tir.Schedule`` method behind a trace instruction kind (``ComputeAt`` → ``compute_at``)."""
    special = {"RFactor": "rfactor", "ReIndex": "reindex", "UnsafeSetDType": "unsafe_set_dtype",
               "GetSBlock": "get_sblock"}
    if kind in special:
        return special[kind]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def first_line(e: BaseException) -> str:
    """The message of a refusal, with memory addresses erased (TVM prints some objects by
    address: the same seed must record the same case)."""
    text = re.sub(r"0x[0-9a-fA-F]+", "0xADDR", str(e))
    for line in text.splitlines():
        if line.startswith("Error message:"):
            return line[len("Error message:") :].strip()[:200]
    return text.strip().splitlines()[0][:200] if text.strip() else type(e).__name__
