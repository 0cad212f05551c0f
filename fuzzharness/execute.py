"""Run one case through the pipeline and judge it: Case → Outcome (verdict + arrays).

Stages, in order (each timed, each announced through ``on_stage`` before it starts so that a
process that dies mid-stage can be blamed on the right one):

``generate``  rebuild the PrimFunc from the workload parameters and the inputs from the seed
``schedule``  replay the stored trace on a fresh ``s_tir.Schedule``; note parameters that
              ``transform_layout`` re-laid out (the kernel then takes and returns them in
              the new layout: inputs are laid out before the call, outputs read back
              through the same map — :mod:`generators.schedules.relayout`)
``lower`` / ``codegen`` / ``build``   the backend's compilation steps
``run``       execute on poisoned output buffers (nan for floats), so unwritten elements show
``verify``    float64 reference + error bound → ratio and status; inputs must be unchanged;
              the order-preservation analysis of the scheduled IR
``baseline``  (only when :func:`oracles.metamorphic.plan` asks for it) build and run the
              *unscheduled* program on the same inputs: the metamorphic reference for the
              order-aware bitwise check and the cross-check of the numpy reference

Classification of exceptions: an allocation failure (``MemoryError``, TVM's
``std::bad_alloc``) → ``crash`` of kind ``out_of_memory`` in a TVM stage, ``harness_error`` in
``generate``/``verify`` (see :func:`out_of_memory_verdict`);
``ScheduleError`` while replaying → ``schedule_rejected``;
any other exception raised inside TVM → ``compile_error`` (schedule..build) or ``crash``
(run: an exception escaping the generated code); exceptions raised by harness code →
``harness_error``, never blamed on TVM.  Build errors that TVM documents as refusals of an
invalid schedule (see :mod:`fuzzharness.rejections`) are ``schedule_rejected``.  A TVM
exception while building or running the unscheduled baseline is a ``compile_error`` at stage
``baseline`` (the unscheduled program itself does not build).

In the exact-integer input mode (``case.oracle["mode"] == "exact"``) the reference is the
correctly rounded exact result with bound 0 (:func:`oracles.bounds.exact_mode`).

For bucketing (:mod:`fuzzharness.buckets`) a verdict carries, where it applies,
``details["site"]`` — where inside TVM the exception was thrown (C++ file and function, no
line numbers) — and, for wrong answers, ``details["facts"]`` about the scheduled loop nest
(:mod:`fuzzharness.triage`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from fuzzharness import rejections
from fuzzharness.case import Case
from fuzzharness.census import census
from fuzzharness.engine.outcomes import is_out_of_memory_text
from fuzzharness.triage import schedule_facts, throw_site
from fuzzharness.tvm_support import blame_tvm, is_schedule_error, replay_trace
from fuzzharness.verdict import Stage, Status, Verdict

StageCallback = Callable[[Stage], None]
GRAPH_WORKLOAD = "graph"  # generators.graphs.spec.GRAPH_WORKLOAD: graph cases run elsewhere

#: compiled unscheduled programs (see oracles.metamorphic), least recently used first
_BASELINES: dict[tuple[str, str, str], Any] = {}


@dataclasses.dataclass
class Outcome:
    verdict: Verdict
    inputs: dict[str, np.ndarray] | None = None
    outputs: dict[str, np.ndarray] | None = None
    expected: dict[str, Any] | None = None
    scheduled: Any = None  # the scheduled IRModule (for repros and triage)
    baseline: dict[str, np.ndarray] | None = None  # outputs of the unscheduled build, when built


class _StageFailed(Exception):
    def __init__(self, verdict: Verdict):
        self.verdict = verdict


def output_digest(outputs: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(outputs):
        a = np.ascontiguousarray(outputs[name])
        h.update(f"{name}:{a.dtype}:{a.shape}:".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def poison(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return np.full(shape, np.iinfo(dtype).min, dtype=dtype)
    return np.full(shape, np.nan, dtype=dtype)


class Execution:
    """One pass through the stages, collecting timings; use :func:`execute`."""

    def __init__(self, case: Case, on_stage: StageCallback | None = None, baseline: str = "auto"):
        self.case = case
        self.on_stage = on_stage
        self.baseline_policy = baseline
        self.timings: dict[str, float] = {}
        self.features: list[str] | None = None  # fuzzharness.census, once lowering succeeded

    @contextmanager
    def stage(self, stage: Stage) -> Iterator[None]:
        if self.on_stage is not None:
            self.on_stage(stage)
        t0 = time.perf_counter()
        try:
            yield
        except _StageFailed:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes a verdict
            raise _StageFailed(self._classify(stage, e)) from e
        finally:
            self.timings[stage.value] = self.timings.get(stage.value, 0.0) + time.perf_counter() - t0

    def _classify(self, stage: Stage, e: Exception) -> Verdict:
        message = f"{type(e).__name__}: {e}"
        tvm_raised = blame_tvm(e)
        if isinstance(e, MemoryError) or (tvm_raised and is_out_of_memory_text(str(e))):
            v = out_of_memory_verdict(stage, e)
            v.timings = self.timings
            return v
        details: dict[str, Any] = {"exception": type(e).__name__}
        # Backends attach what failed (device source, compiler log) as plain data.
        details.update(getattr(e, "fuzz_details", None) or {})
        if (not_run := getattr(e, "not_run", None)) is not None:  # e.g. a remote device gone
            details["not_run"] = not_run
            return Verdict(Status.INCONCLUSIVE, stage, message=f"compiled, not run: {not_run}",
                           timings=self.timings, details=details)
        tvm_raised = tvm_raised or getattr(e, "blame_tvm", False)  # e.g. nvcc refusing TVM's code
        if tvm_raised and (site := throw_site(e)):
            details["site"] = site
        if stage in (Stage.GENERATE, Stage.VERIFY) or not tvm_raised:
            details["traceback"] = traceback.format_exc(limit=-8)
            status = Status.HARNESS_ERROR
        elif stage is Stage.SCHEDULE and is_schedule_error(e):
            status = Status.SCHEDULE_REJECTED
        elif stage is Stage.RUN:
            status = Status.CRASH
            details.setdefault("kind", "exception")  # or what the backend knows (remote_died)
        elif stage is Stage.BASELINE:
            status, details["program"] = Status.COMPILE_ERROR, "unscheduled"
        elif (reason := rejections.match(str(e))) is not None:
            status, details["rejection"] = Status.SCHEDULE_REJECTED, reason
        else:
            status = Status.COMPILE_ERROR
        return Verdict(status, stage, message=message, timings=self.timings, details=details)

    def _run_baseline(self, backend, workload, func, specs, out_specs, inputs):
        """The unscheduled program's outputs; its build is cached per program, target, options."""
        from fuzzharness.case import canonical_json
        from oracles.metamorphic import BASELINE_CACHE_SIZE, baseline_target

        case = self.case
        target = baseline_target(case.target)  # GPU: the unscheduled program runs on llvm
        if target is not case.target:
            from fuzzharness.backends import backends

            backend = backends["llvm"]
        key = (workload.source(case.params), canonical_json(target),
               canonical_json(case.pass_config))
        program = _BASELINES.pop(key, None)
        if program is None:
            program = backend.build(backend.codegen(
                backend.lower(tvm_module(func), target, case.pass_config), target))
        _BASELINES[key] = program  # most recently used last
        while len(_BASELINES) > BASELINE_CACHE_SIZE:
            _BASELINES.pop(next(iter(_BASELINES)))
        args = [inputs[s.name].copy() for s in specs]
        args += [poison(o.shape, np.dtype(inputs_dtype(o.dtype))) for o in out_specs]
        results = backend.run(program, args, len(out_specs))
        return {o.name: r for o, r in zip(out_specs, results, strict=True)}

    def run(self) -> Outcome:
        from fuzzharness.backends.rpc import backend_for
        from fuzzharness.tvm_support import structural_equal
        from generators.inputs import make_inputs
        from generators.schedules import relayout
        from generators.workloads import workloads
        from oracles import bounds, metamorphic
        from oracles.compare import judge
        from oracles.order import accumulation_order
        from oracles.program import Numerics

        case = self.case
        if case.workload_name == GRAPH_WORKLOAD:  # a whole Relax graph, not one PrimFunc
            from fuzzharness.pipelines.relax import run_graph

            return self._with_features(run_graph(self))
        outcome = Outcome(Verdict(Status.HARNESS_ERROR, Stage.GENERATE))
        try:
            with self.stage(Stage.GENERATE):
                workload = workloads[case.workload_name]
                backend = backend_for(case.target)  # a remote device if one is set
                func = workload.prim_func(case.params)
                kernel_func = workload.kernel_prim_func(case.params, func)
                specs = workload.inputs(case.params)
                out_specs = workload.outputs(case.params)
                inputs = make_inputs(specs, case.inputs["distribution"], case.inputs["seed"])
                outcome.inputs = inputs
            with self.stage(Stage.SCHEDULE):
                sch = replay_trace(kernel_func, case.trace)
                outcome.scheduled = sch.mod
                layouts = relayout.param_layouts(kernel_func, case.trace)
            with self.stage(Stage.LOWER):
                lowered = backend.lower(sch.mod, case.target, case.pass_config)
            self.features = census(sch.mod, lowered)  # never raises
            with self.stage(Stage.CODEGEN):
                rt_mod = backend.codegen(lowered, case.target)
            with self.stage(Stage.BUILD):
                program = backend.build(rt_mod)
                not_run = backend.not_runnable(program)
            if not_run is not None:  # e.g. CUDA compiled by nvcc on a host without a GPU
                outcome.verdict = Verdict(
                    Status.INCONCLUSIVE, Stage.RUN, message=f"compiled, not run: {not_run}",
                    timings=self.timings, details={"not_run": not_run},
                )
                return outcome
            with self.stage(Stage.RUN):
                kernel_in = {s.name: relayout.kernel_array(layouts, s.name, inputs[s.name])
                             for s in specs}
                args = [kernel_in[s.name].copy() for s in specs]
                args += [poison(relayout.kernel_shape(layouts, o.name, o.shape),
                                np.dtype(inputs_dtype(o.dtype))) for o in out_specs]
                results = backend.run(program, args, len(out_specs))
                raw = {o.name: r for o, r in zip(out_specs, results, strict=True)}
                outputs = {n: relayout.reference_array(layouts, n, r) for n, r in raw.items()}
                outcome.outputs = outputs
            with self.stage(Stage.VERIFY):
                clobbered = [s.name for s, a in zip(specs, args, strict=False)
                             if not np.array_equal(a, kernel_in[s.name], equal_nan=True)]
                unpadded = {n: k for n, r in raw.items()
                            if (k := relayout.unfilled_padding(layouts, n, r))}
                with np.errstate(all="ignore"):  # special-value inputs make nan/inf on purpose
                    expected = workload.reference(case.params, inputs, Numerics(func))
                exact = case.oracle.get("mode") == "exact"
                if exact:
                    expected = {name: bounds.exact_mode(e) for name, e in expected.items()}
                # all-zero bounds (integers, max, copies) already demand bitwise equality
                exact = exact or not any(e.bound.any() for e in expected.values())
                outcome.expected = expected
                j = judge(expected, outputs)
                scheduled = sch.mod["main"]
                order = accumulation_order(func, scheduled)
                how = metamorphic.plan(j, order, structural_equal(func, scheduled), exact,
                                       self.baseline_policy, metamorphic.sample_point(case.id),
                                       case.target)
            baseline = outputs if how == "self" else None
            if how == "build":
                with self.stage(Stage.BASELINE):
                    baseline = self._run_baseline(backend, workload, func, specs, out_specs, inputs)
                outcome.baseline = baseline
            with self.stage(Stage.VERIFY):
                c = metamorphic.conclude(j, order, expected, outputs, baseline, how)
            final = c.status
            verdict = Verdict(
                final, Stage.VERIFY if final is not Status.PASS else Stage.DONE,
                message=c.message or j.message, worst_error=j.worst_error, ratio=j.ratio,
                worst_index=j.worst_index, worst_output=j.worst_output,
                digest=output_digest(outputs), timings=self.timings, details=c.details,
            )
            if j.inconclusive:
                verdict.details["inconclusive"] = j.inconclusive
            if clobbered and verdict.status in (Status.PASS, Status.INCONCLUSIVE):
                verdict.status, verdict.stage = Status.WRONG_RESULT, Stage.VERIFY
                verdict.message = f"the kernel overwrote its input(s) {', '.join(clobbered)}"
            if unpadded and verdict.status in (Status.PASS, Status.INCONCLUSIVE):
                verdict.status, verdict.stage = Status.WRONG_RESULT, Stage.VERIFY
                verdict.message = "transform_layout padding not filled with the pad value: " + \
                    ", ".join(f"{n} ({k} elements)" for n, k in unpadded.items())
            if verdict.status in FACT_STATUSES and outcome.scheduled is not None:
                verdict.details["facts"] = schedule_facts(outcome.scheduled)
            outcome.verdict = verdict
        except _StageFailed as failed:
            outcome.verdict = failed.verdict
        return self._with_features(outcome)

    def _with_features(self, outcome: Outcome) -> Outcome:
        """The census of the lowered program goes with every verdict reached after lowering."""
        if self.features is not None:
            outcome.verdict.details["features"] = self.features
        return outcome


#: wrong answers carry no error text; facts about the schedule tell their buckets apart
FACT_STATUSES = frozenset({Status.WRONG_RESULT, Status.NAN_INF,
                           Status.ORDER_PRESERVING_DIVERGENCE})


def out_of_memory_verdict(stage: Stage, e: BaseException) -> Verdict:
    """An allocation failed under the worker's memory limit.

    In a TVM stage (schedule … run) that is a ``crash`` of kind ``out_of_memory`` — whichever
    allocation hit the limit, the stage running is the one that consumed the memory.  In
    ``generate`` and ``verify`` (harness code: inputs, float64 references) it is a
    ``harness_error``: the harness asked for too much, TVM is not to blame.
    """
    status = Status.HARNESS_ERROR if stage in (Stage.GENERATE, Stage.VERIFY) else Status.CRASH
    return Verdict(status, stage, message=f"out of memory in stage {stage.value}: "
                   f"{type(e).__name__}: {str(e)[:200]}",
                   details={"kind": "out_of_memory", "exception": type(e).__name__})


def inputs_dtype(dtype: str):
    from oracles.numerics import numpy_dtype

    return numpy_dtype(dtype)


def tvm_module(func):
    import tvm

    return tvm.IRModule({"main": func})


def execute(case: Case, on_stage: StageCallback | None = None, *, baseline: str = "auto") -> Outcome:
    """Run ``case`` end to end; never raises for anything TVM or the case does.

    ``baseline``: when to build the unscheduled program as the metamorphic reference —
    ``auto`` (the default policy of :func:`oracles.metamorphic.plan`), ``order`` (every
    order-preserving case), ``always`` or ``never`` (benchmarks compare them).
    """
    return Execution(case, on_stage, baseline).run()
