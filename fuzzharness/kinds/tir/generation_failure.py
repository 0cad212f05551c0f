"""Repros for failures raised while a schedule was being *drawn* (no case was ever stored).

When a TVM schedule primitive fails an internal check instead of raising a
``ScheduleError``, the campaign records a ``compile_error`` at stage ``schedule`` and no
case: the failing call never made it into a trace.  To write a script for it, the
(minimized) choice sequence is drawn again in this process with every public
``s_tir.Schedule`` method wrapped; the outermost call that raises something other than a
``ScheduleError`` is captured with its arguments, the trace recorded so far, and the
workload parameters.  The script then replays that trace with ``sch.<primitive>(...)`` calls
and makes the failing call.  A dlight rule (the dlight GPU style) that fails in its own Python
— an ``assert``, an unpack — with no schedule call raising is captured as the rule call itself,
``tvm.s_tir.dlight.gpu.<Rule>().apply(sch.mod["main"], target, False)`` in the target's
scope: the rule schedules the unscheduled function, as the style applies it.

Arguments are spelled as TVM's ``Trace.as_python`` spells them: random variables by the
names the trace gives them (``b0``, ``l3``), index maps as lambdas, plain values as
literals.  Anything else (an arbitrary Python callable) cannot be written down:
:class:`~fuzzharness.kinds.tir.script.NotReproducible`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
from collections.abc import Sequence
from typing import Any

from fuzzharness.core.case import Case
from fuzzharness.core.forked import Died, Raised, call_in_fork
from fuzzharness.core.tvm_support import is_schedule_error, replay_trace, trace_to_json
from fuzzharness.engine.worker_deaths import signal_name
from fuzzharness.generators.workloads import workloads
from fuzzharness.generators.workloads.base import Workload
from fuzzharness.minimize import trace_edit
from fuzzharness.minimize.hypothesis_shrink import DRAW_TIMEOUT, draw
from fuzzharness.minimize.passes import exact_mode_allowed
from fuzzharness.repro.kit import NotReproducible, py_literal


@dataclasses.dataclass
class FailingCall:
    method: str
    line: str  # sch.<method>(...)
    trace: Any  # JSON trace before the call
    workload: str
    params: dict[str, Any]
    message: str


class _Capture:
    def __init__(self):
        self.local = threading.local()
        self.failure: tuple | None = None
        self.rule_failure: tuple | None = None  # (rule class, exception)
        self.workload: tuple[str, dict] | None = None


def _outermost(cap: _Capture, counter: str, fn, record):
    """``fn`` wrapped: when the outermost of its nested calls (counted per ``counter``)
    raises something other than a ScheduleError, ``record(self, args, kwargs, error)``."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        depth = getattr(cap.local, counter, 0)
        setattr(cap.local, counter, depth + 1)
        try:
            return fn(self, *args, **kwargs)
        except Exception as e:
            if depth == 0 and not is_schedule_error(e):
                record(self, args, kwargs, e)
            raise
        finally:
            setattr(cap.local, counter, depth)

    return wrapper


def _wrap(cap: _Capture, name: str, fn):
    def record(sch, args, kwargs, e):
        if cap.failure is None:
            trace = sch.trace
            cap.failure = (name, fn, sch, args, kwargs, trace, trace_to_json(trace), e)

    return _outermost(cap, "depth", fn, record)


def _wrap_rule(cap: _Capture, cls, fn):
    """A dlight rule's ``apply``: when it raises and no schedule call inside it did (the
    rule's own Python failed — an assertion, an unpack — instead of returning None), the
    rule call itself is the failing call."""

    def record(rule, args, kwargs, e):
        if cap.rule_failure is None:
            cap.rule_failure = (cls, e)

    return _outermost(cap, "rule_depth", fn, record)


def _dlight_rules() -> list[type]:
    """The dlight GPU rules the dlight schedule style tries (generators/gpu/dlight_style.py)."""
    from fuzzharness.generators.gpu.dlight_style import default_rules

    return [type(rule) for rule in default_rules()]


def _rule_call(cls: type, target: dict[str, Any]) -> str:
    """The failing rule call as one line of Python that stands alone (``tvm`` imported): the
    rule on the unscheduled function, in its target's scope, as the dlight style applies it
    (the rule builds its own schedule)."""
    path = cls.__module__.split(".s_tir.dlight.", 1)[-1].split(".")[0]
    return (f"with tvm.target.Target({py_literal(target)}) as target: "
            f"tvm.s_tir.dlight.{path}.{cls.__name__}().apply(sch.mod[\"main\"], target, False)")


def capture(choices: Sequence[Any], settings) -> FailingCall:
    """Draw ``choices`` again and capture the schedule call that fails (see module doc)."""
    from tvm import s_tir


    cap = _Capture()
    originals = {}
    for name, fn in vars(s_tir.Schedule).items():
        if not name.startswith("_") and inspect.isfunction(fn):
            originals[name] = fn
    rules = {cls: vars(cls)["apply"] for cls in _dlight_rules() if "apply" in vars(cls)}
    orig_prim_func = Workload.prim_func

    def prim_func(self, params):
        cap.workload = (self.name, dict(params))
        return orig_prim_func(self, params)

    try:
        for name, fn in originals.items():
            setattr(s_tir.Schedule, name, _wrap(cap, name, fn))
        for cls, fn in rules.items():
            cls.apply = _wrap_rule(cap, cls, fn)
        Workload.prim_func = prim_func
        case, verdict, error = draw(choices, settings)
    finally:
        for name, fn in originals.items():
            setattr(s_tir.Schedule, name, fn)
        for cls, fn in rules.items():
            cls.apply = fn
        Workload.prim_func = orig_prim_func
    if case is not None:
        raise NotReproducible("the choices generate a case; its failure is not in the schedule draw")
    if cap.failure is None and cap.rule_failure is not None and cap.workload is not None:
        cls, exc = cap.rule_failure
        target = dict(settings.target) if settings is not None else {"kind": "llvm"}
        return FailingCall(f"dlight.{cls.__name__}.apply", _rule_call(cls, target), [],
                           cap.workload[0], cap.workload[1], f"{type(exc).__name__}: {exc}")
    if cap.failure is None or cap.workload is None:
        what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        raise NotReproducible(f"the generation failure was not raised by a schedule call: {what}")
    name, fn, sch, args, kwargs, trace, trace_json, exc = cap.failure
    names = _rv_names(trace, trace_json)
    bound = inspect.signature(fn).bind(sch, *args, **kwargs)
    parts = [f"{k}={_render(v, names)}" for k, v in list(bound.arguments.items())[1:]]
    line = f"sch.{name}({', '.join(parts)})"
    trace_json, line = _renumbered(cap.workload,
                                   _without_unused_lookups(trace_json, line), line)
    return FailingCall(name, line, trace_json, cap.workload[0], cap.workload[1],
                       f"{type(exc).__name__}: {exc}")


def capture_isolated(choices: Sequence[Any], settings, timeout: float = DRAW_TIMEOUT) -> FailingCall:
    """:func:`capture` in a forked child: a TVM crash while the schedule is drawn again
    costs this bucket its script (:class:`NotReproducible`, saying so), never the process."""

    def child(_messages) -> dict[str, Any]:
        return dataclasses.asdict(capture(choices, settings))

    try:
        result, _ = call_in_fork(child, timeout=timeout)
    except Raised as e:
        if e.type_name == NotReproducible.__name__:
            raise NotReproducible(e.message) from None
        raise RuntimeError(str(e)) from None
    if isinstance(result, Died):
        what = ("it hung" if result.timed_out else
                f"killed by {signal_name(result.returncode) or f'exit {result.returncode}'}")
        raise NotReproducible(f"drawing the schedule again kills the process ({what}): no "
                              "failing call returns to be written down")
    return FailingCall(**result)


def _renumbered(workload: tuple[str, dict], trace_json: Any, line: str) -> tuple[Any, str]:
    """The trace as TVM numbers its variables after replay (``as_python`` numbers them
    anew: b0, l1, ...), and the failing call with its variables renamed to match."""
    import re


    if not trace_json or not trace_json[0]:
        return trace_json, line
    func = workloads[workload[0]].prim_func(workload[1])
    fresh = trace_to_json(replay_trace(func, trace_json).trace)
    rename = {}
    for old, new in zip(trace_json[0], fresh[0], strict=True):
        rename.update(zip(old[3], new[3], strict=True))
    return fresh, re.sub(r"\b[a-z]\d+\b", lambda m: rename.get(m.group(), m.group()), line)


def _without_unused_lookups(trace_json: Any, line: str) -> Any:
    """Drop lookups that neither the trace nor the failing call uses."""
    import re


    if not trace_json or not trace_json[0]:
        return trace_json
    used = sorted(set(re.findall(r"\b[a-z]\d+\b", line)))
    call = ["FailingCall", used, [], []]  # stands for the call: keeps what it uses alive
    dce = trace_edit.drop_dead_lookups([[*trace_edit.instructions(trace_json), call],
                                        trace_edit.decisions(trace_json)])
    return trace_edit.remove(dce, [len(dce[0]) - 1], with_dependents=False)


def _rv_names(trace, trace_json) -> list[tuple[Any, str]]:
    out = []
    for inst, js in zip(trace.insts, trace_json[0] if trace_json else [], strict=False):
        for rv, name in zip(inst.outputs, js[3], strict=False):
            out.append((rv, name))
    return out


def _render(v: Any, names: list[tuple[Any, str]]) -> str:
    from tvm import s_tir, tirx

    if v is None or isinstance(v, bool | int | float | str):
        return repr(v)
    if isinstance(v, tirx.IntImm):
        return repr(int(v.value))
    if isinstance(v, tirx.FloatImm):
        return repr(float(v.value))
    if isinstance(v, s_tir.schedule.SBlockRV | s_tir.schedule.LoopRV | tirx.Var):
        for rv, name in names:
            if rv.same_as(v):
                return name
        raise NotReproducible(f"an argument {v!r} is not a random variable of the trace")
    if isinstance(v, list | tuple):
        inner = ", ".join(_render(x, names) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})" if isinstance(v, tuple) else f"[{inner}]"
    if isinstance(v, tirx.IndexMap):
        text = str(v)
        prefix = "T.index_map("
        return text[len(prefix):-1] if text.startswith(prefix) and text.endswith(")") else text
    if hasattr(v, "items"):
        return "{" + ", ".join(f"{_render(k, names)}: {_render(x, names)}" for k, x in v.items()) + "}"
    raise NotReproducible(f"cannot write the argument {v!r} ({type(v).__name__}) as Python")


def _portable(verdict) -> dict[str, Any] | None:
    """The verdict without machine-specific parts (tracebacks with local paths, timings)."""
    if verdict is None:
        return None
    d = verdict.to_dict()
    d["timings"] = {}
    d["details"] = {k: v for k, v in d.get("details", {}).items() if k in ("exception", "site")}
    return d


def as_case(call: FailingCall, settings, origin: dict[str, Any], verdict=None) -> Case:
    """A case holding the trace *before* the failing call (what the script replays first).

    Its ``origin`` keeps the call (``failing_call``) and the verdict it got
    (``failing_verdict``): replaying the case itself does not fail — the call is not part of
    its trace — so ``fuzzharness repro`` and the corpus take both from there.
    """

    target = dict(settings.target) if settings is not None else {"kind": "llvm"}
    case = Case(workload={"name": call.workload, "params": call.params},
                inputs={"distribution": "ones", "seed": 0},
                schedule={"source": "random", "trace": call.trace},
                target=target, pass_config={}, oracle={"mode": "bound"},
                origin=dict(origin, dtype=workloads[call.workload].dtype_label(call.params),
                            failing_call=call.line,
                            failing_verdict=_portable(verdict)))
    if exact_mode_allowed(case):
        case = case.replace(oracle={"mode": "exact"})
    return case
