"""Shrink a generated case through Hypothesis' own shrinker, on its stored choice sequence.

Every generated case records the choice sequence that drew it (``origin["choices"]``,
:mod:`fuzzharness.generators.draw`).  Replaying a choice sequence through
:func:`fuzzharness.generators.cases.draw_case` regenerates the case, so Hypothesis' shrinker — which
deletes and lowers choices, and knows the structure of the draws (spans) — shrinks the case
in the generator's own parameter space: fewer schedule steps, smaller extents drawn by the
workload itself (so the shapes stay valid), the exact-integer input mode (its draw shrinks
toward "yes"), optional compiler options off (:func:`fuzzharness.generators.draw.chance` shrinks toward
"no").  A candidate is interesting when it regenerates to a case whose verdict is the same
bug (:class:`fuzzharness.minimize.predicate.SameBug`).

This is the only module that touches Hypothesis' internal engine (``ConjectureRunner``,
``Shrinker`` via ``new_shrinker`` and its ``check_calls`` hook for the deadline,
``StopShrinking``, ``Status``, ``InterestingOrigin``); the narrow version pin in
``pyproject.toml`` covers it, and ``tests/test_minimize.py`` exercises it.

Where it runs: drawing a case runs TVM's schedule primitives, here in the minimizing
process (the engine needs the draws); the generated case then runs in a worker process like
every other candidate.  A TVM exception raised while drawing is classified exactly as the
campaign's worker classifies it (``compile_error`` at ``schedule``), so a bucket found
during generation can be shrunk too.  A TVM *crash* while drawing (an abort, a segfault)
would kill this process, so each candidate is first drawn in a forked child
(:func:`fuzzharness.core.forked.call_in_fork`) that reports every draw it makes; when the
child dies, its draws are replayed here on the same ``ConjectureData`` (the same choices,
spans and constraints, without TVM) and the candidate's verdict is the death — classified as
the campaign's worker classifies one (:func:`fuzzharness.engine.worker_deaths.death_verdict`,
stage ``generate``) — so a crash bucket born in the schedule draw shrinks like any other.
The shrinker is sequential by design: one candidate at a time.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from fuzzharness.core.case import Case
from fuzzharness.core.forked import Died, Messages, call_in_fork
from fuzzharness.core.verdict import Verdict
from fuzzharness.engine import worker_deaths
from fuzzharness.engine.tasks import generation_failure
from fuzzharness.generators import draw as draws
from fuzzharness.generators.cases import draw_case

# (case or None when generation raised, verdict or None when abandoned)
Evaluate = Callable[[Case], Verdict | None]
Interesting = Callable[[dict[str, Any] | None, Verdict], bool]


DRAW_TIMEOUT = 60.0  # seconds a forked draw may take before it counts as a hang


class _OutOfTime(BaseException):
    """Raised from the test function to stop the shrinker at the deadline."""


@dataclasses.dataclass
class ShrinkResult:
    choices: list[Any]
    case: Case | None  # None: generation itself fails with the bug
    verdict: Verdict
    calls: int
    improved: bool
    error: BaseException | None = None  # the generation exception, when case is None


def generation_verdict(e: BaseException) -> Verdict:

    return generation_failure(e)  # type: ignore[arg-type]


def draw(choices: Sequence[Any], settings) -> tuple[Case | None, Verdict | None, BaseException | None]:
    """Regenerate from ``choices``: (case, None, None), or (None, verdict, error) if drawing
    raised.  Used by the repro writer too, for cases whose generation fails."""

    data = draws.from_choices(choices)
    try:
        case = draw_case(data, settings)
    except Exception as e:  # noqa: BLE001 - classified like the worker does
        return None, generation_verdict(e), e
    origin = dict(case.origin, choices=draws.recorded_choices(data))
    return case.replace(origin=origin), None, None


def shrink_choices(choices: Sequence[Any], settings, *, evaluate: Evaluate,
                   interesting: Interesting, deadline: float | None,
                   on_improve: Callable[[ShrinkResult], None] | None = None) -> ShrinkResult | None:
    """Shrink ``choices`` (a case's recorded choice sequence) with Hypothesis' shrinker.

    None when the choices do not reproduce an interesting case to start with (other
    generation settings, another harness version).  Otherwise the smallest interesting
    result found by the deadline (possibly the start itself, ``improved`` False).
    """
    from hypothesis import HealthCheck, Phase
    from hypothesis import settings as hsettings
    from hypothesis.errors import StopTest, UnsatisfiedAssumption
    from hypothesis.internal.conjecture.data import Status
    from hypothesis.internal.conjecture.engine import ConjectureRunner, RunIsComplete
    from hypothesis.internal.conjecture.shrinker import StopShrinking
    from hypothesis.internal.escalation import InterestingOrigin


    origin = InterestingOrigin.from_exception(AssertionError("same bug"))
    found: dict[tuple, ShrinkResult] = {}
    calls = [0]

    holder: dict[str, Any] = {}

    def test_function(data) -> None:
        calls[0] += 1
        error = None
        death = death_while_drawing(data, settings)
        if death is not None:  # its draws are replayed on data: the same choices
            case, verdict = None, death
        else:
            try:
                case = draw_case(data, settings)
            except (StopTest, UnsatisfiedAssumption):
                raise
            except Exception as e:  # noqa: BLE001 - TVM failing while the schedule is drawn
                case, verdict, error = None, generation_verdict(e), e
            else:
                case = case.replace(origin=dict(case.origin, choices=draws.recorded_choices(data)))
                verdict = None
        if deadline is not None and time.monotonic() >= deadline:
            # Out of time: not interesting, and the shrinker stops at its next step
            # (check_calls below).  Not by raising before drawing: Hypothesis' record of the
            # choice tree would see a known prefix stop early and call the generator flaky.
            if "shrinker" not in holder:
                raise _OutOfTime
            return
        if case is not None:
            verdict = evaluate(case)
        if verdict is not None and interesting(case.to_dict() if case else None, verdict):
            result = ShrinkResult(list(data.choices), case, verdict, calls[0], False, error)
            found[tuple(map(repr, data.choices))] = result
            if on_improve is not None:
                on_improve(result)
            data.mark_interesting(origin)

    runner = ConjectureRunner(
        test_function,
        settings=hsettings(database=None, phases=[Phase.shrink], deadline=None,
                           suppress_health_check=list(HealthCheck), max_examples=10_000),
        random=random.Random(0),
    )
    # the same provider as generation: no draws that depend on the imported modules
    runner.provider = draws.SeededProvider
    try:
        start = runner.cached_test_function(list(choices))
    except _OutOfTime:
        return None
    if start.status != Status.INTERESTING:
        return None
    initial = found[tuple(map(repr, start.choices))]
    shrinker = runner.new_shrinker(start, lambda d: d.status == Status.INTERESTING)
    holder["shrinker"] = shrinker
    check_calls = shrinker.check_calls

    def check_calls_and_time() -> None:  # the shrinker asks before every call
        if deadline is not None and time.monotonic() >= deadline:
            raise StopShrinking
        check_calls()

    shrinker.check_calls = check_calls_and_time
    try:
        shrinker.shrink()
    except (_OutOfTime, RunIsComplete):
        pass
    best = found.get(tuple(map(repr, shrinker.shrink_target.choices)), initial)
    best.calls = calls[0]
    best.improved = best is not initial
    return best


# -- drawing in a forked child ---------------------------------------------------------------------
def death_while_drawing(data, settings, timeout: float = DRAW_TIMEOUT) -> Verdict | None:
    """Draw from ``data`` in a forked child first.  None when the child lived (the caller
    then draws here, safely: the same choices give the same draws).  When it died, the draws
    it made are replayed on ``data`` (so ``data`` holds the choices a crash needs, for the
    shrinker) and the death's verdict is returned."""
    died, events = draw_events(data, settings, timeout)
    if died is None:
        return None
    replay(data, events)
    if died.timed_out:
        return worker_deaths.timeout_verdict(timeout, "generate", died.log_tail)
    return worker_deaths.death_verdict(died.returncode, "generate", died.log_tail)


def draw_events(data, settings, timeout: float = DRAW_TIMEOUT) -> tuple[Died | None, list]:
    """(None or how the child died, the draws and spans it made, in order)."""

    def child(messages: Messages) -> None:
        draw, start, stop = data._draw, data.start_span, data.stop_span

        def recorded_draw(choice_type, constraints, *, observe, forced):
            value = draw(choice_type, constraints, observe=observe, forced=forced)
            messages.send(["draw", choice_type, _encode(constraints), observe,
                           _encode(forced), _encode(value)])
            return value

        def recorded_start(label):
            messages.send(["start", label])
            return start(label)

        def recorded_stop(*, discard=False):
            messages.send(["stop", discard])
            return stop(discard=discard)

        data._draw, data.start_span, data.stop_span = recorded_draw, recorded_start, recorded_stop
        try:
            draw_case(data, settings)
        except BaseException:  # noqa: BLE001 - the parent draws again and sees it itself
            pass

    result, events = call_in_fork(child, timeout=timeout)
    return (result if isinstance(result, Died) else None), events


def replay(data, events: list) -> None:
    """Make on ``data`` the draws and spans a child made (without running anything)."""
    for ev in events:
        if ev[0] == "draw":
            data._draw(ev[1], _decode(ev[2]), observe=ev[3], forced=_decode(ev[4]))
        elif ev[0] == "start":
            data.start_span(ev[1])
        else:
            data.stop_span(discard=ev[1])


def drawn_values(events: list) -> list[Any]:
    """The choice values of a child's draws (its choice sequence so far: the observed
    draws, as ``data.choices`` holds them)."""
    return [_decode(ev[5]) for ev in events if ev[0] == "draw" and ev[3]]


def _encode(x: Any) -> Any:
    """Hypothesis' constraints and choices as JSON (bytes, interval sets, int-keyed dicts)."""
    from hypothesis.internal.intervalsets import IntervalSet

    if isinstance(x, bytes):
        return {"$bytes": x.hex()}
    if isinstance(x, IntervalSet):
        return {"$intervals": [list(i) for i in x.intervals]}
    if isinstance(x, dict):
        return {"$dict": [[_encode(k), _encode(v)] for k, v in x.items()]}
    if isinstance(x, list | tuple):
        return [_encode(v) for v in x]
    return x


def _decode(x: Any) -> Any:
    from hypothesis.internal.intervalsets import IntervalSet

    if isinstance(x, dict):
        if "$bytes" in x:
            return bytes.fromhex(x["$bytes"])
        if "$intervals" in x:
            return IntervalSet([tuple(i) for i in x["$intervals"]])
        return {_decode(k): _decode(v) for k, v in x["$dict"]}
    if isinstance(x, list):
        return [_decode(v) for v in x]
    return x
