"""Run one case through its stages and judge it: Case → :class:`CaseRun` (verdict + arrays).

The stages are the same for every kind of case (:mod:`fuzzharness.core.kinds`), each timed
and announced through ``on_stage`` before it starts, so that a process that dies mid-stage
is blamed on the right one:

``generate``  rebuild the program from the workload parameters, the inputs from the seed
``schedule``  replay the stored schedule (trace) on the program
``lower`` / ``codegen`` / ``build``   the back end's compilation steps
``run``       execute on poisoned output buffers (nan for floats), so unwritten elements show
``verify``    float64 reference + error bound → ratio and status; inputs must be unchanged
``baseline``  (TIR cases, when the oracle asks for it) build and run the *unscheduled*
              program on the same inputs — the metamorphic reference

What each stage does for a kind is its :meth:`~fuzzharness.core.kinds.RunKind.run`
(:mod:`fuzzharness.execution.tir_run`, :mod:`fuzzharness.execution.relax_run`); this module owns
what is common: the stage machine, the classification of exceptions, and the verdict of a
judged output (:meth:`Execution.conclude`).

Classification of exceptions: an allocation failure (``MemoryError``, TVM's
``std::bad_alloc``) → ``crash`` of kind ``out_of_memory`` in a TVM stage, ``harness_error`` in
``generate``/``verify`` (see :func:`out_of_memory_verdict`);
``ScheduleError`` while replaying → ``schedule_rejected``;
any other exception raised inside TVM → ``compile_error`` (schedule..build) or ``crash``
(run: an exception escaping the generated code); exceptions raised by harness code →
``harness_error``, never blamed on TVM.  Build errors that TVM documents as refusals of an
invalid schedule (see :mod:`fuzzharness.execution.rejections`) are ``schedule_rejected``.  A
TVM exception while building or running the unscheduled baseline is a ``compile_error`` at
stage ``baseline`` (the unscheduled program itself does not build).

For bucketing (:mod:`fuzzharness.buckets.signatures`) a verdict carries, where it applies,
``details["site"]`` — where inside TVM the exception was thrown (C++ file and function, no
line numbers) — and, for wrong answers, ``details["facts"]`` about the scheduled program
(:mod:`fuzzharness.execution.facts`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from fuzzharness.core.case import Case
from fuzzharness.core.kinds import run_kind
from fuzzharness.core.tvm_support import blame_tvm, is_schedule_error
from fuzzharness.core.verdict import Stage, Status, Verdict
from fuzzharness.execution import rejections
from fuzzharness.execution.facts import throw_site

StageCallback = Callable[[Stage], None]

#: log lines that mean "an allocation failed" (C++, Python, LLVM, glibc, TVM's allocators)
OOM_PATTERNS = re.compile(
    r"std::bad_alloc|MemoryError|Cannot allocate memory|out of memory|Out of memory"
    r"|Unable to allocate|failed to allocate|Failed to allocate|ENOMEM"
)
#: wrong answers carry no error text; facts about the schedule tell their buckets apart
FACT_STATUSES = frozenset({Status.WRONG_RESULT, Status.NAN_INF,
                           Status.ORDER_PRESERVING_DIVERGENCE})


def is_out_of_memory_text(text: str) -> bool:
    return bool(OOM_PATTERNS.search(text or ""))


@dataclasses.dataclass
class CaseRun:
    """What running one case produced: its verdict, and the arrays and IR behind it."""

    verdict: Verdict
    inputs: dict[str, np.ndarray] | None = None
    outputs: dict[str, np.ndarray] | None = None
    expected: dict[str, Any] | None = None
    scheduled: Any = None  # the scheduled IRModule (for repros and triage)
    baseline: dict[str, np.ndarray] | None = None  # outputs of the unscheduled build, when built


class StageFailed(Exception):
    """Raised out of :meth:`Execution.stage`: the stage ended the case with ``verdict``."""

    def __init__(self, verdict: Verdict):
        self.verdict = verdict


def output_digest(outputs: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(outputs):
        a = np.ascontiguousarray(outputs[name])
        h.update(f"{name}:{a.dtype}:{a.shape}:".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


class Execution:
    """One pass through the stages, collecting timings; use :func:`execute`."""

    def __init__(self, case: Case, on_stage: StageCallback | None = None, baseline: str = "auto",
                 skip_facts: frozenset[str] = frozenset(),
                 on_provisional: Callable[[Verdict], None] | None = None):
        self.case = case
        self.on_stage = on_stage
        self.baseline_policy = baseline
        self.skip_facts = skip_facts  # statuses whose facts nobody will read (a confirmation's)
        self.on_provisional = on_provisional  # told the verdict before a probe (before_probe)
        self._concluding: Verdict | None = None
        self.timings: dict[str, float] = {}
        self.features: list[str] | None = None  # fuzzharness.execution.census, once lowered

    def run(self) -> CaseRun:
        result = CaseRun(Verdict(Status.HARNESS_ERROR, Stage.GENERATE))
        try:
            run_kind(self.case).run(self, result)
        except StageFailed as failed:
            result.verdict = failed.verdict
        if self.features is not None:  # the census goes with every verdict reached after lowering
            result.verdict.details["features"] = self.features
        return result

    @contextmanager
    def stage(self, stage: Stage) -> Iterator[None]:
        if self.on_stage is not None:
            self.on_stage(stage)
        t0 = time.perf_counter()
        try:
            yield
        except StageFailed:
            raise
        except Exception as e:  # noqa: BLE001 - every failure becomes a verdict
            raise StageFailed(self._classify(stage, e)) from e
        finally:
            self.timings[stage.value] = self.timings.get(stage.value, 0.0) + time.perf_counter() - t0

    def not_run(self, why: str) -> Verdict:
        """The verdict of a program that compiled but cannot run here (e.g. no GPU)."""
        return Verdict(Status.INCONCLUSIVE, Stage.RUN, message=f"compiled, not run: {why}",
                       timings=self.timings, details={"not_run": why})

    def conclude(self, judgement, outputs: dict[str, np.ndarray], *, status: Status | None = None,
                 message: str = "", details: dict[str, Any] | None = None,
                 problems: list[str] = (), facts: Callable[[], list[str]] | None = None) -> Verdict:
        """The verdict of judged outputs (the one tail of every kind's ``verify`` stage).

        ``status`` overrides the judgement's (e.g. the metamorphic check's conclusion);
        ``problems`` are wrong results the oracle cannot see (inputs overwritten, padding
        not filled): the first one makes a passing or inconclusive case a ``wrong_result``;
        ``facts`` is asked for facts about the program when the status is a wrong answer.
        """
        j = judgement
        status = j.status if status is None else status
        verdict = Verdict(status, Stage.VERIFY if status is not Status.PASS else Stage.DONE,
                          message=message or j.message, worst_error=j.worst_error, ratio=j.ratio,
                          worst_index=j.worst_index, worst_output=j.worst_output,
                          digest=output_digest(outputs), timings=self.timings,
                          details=dict(details or {}))
        if j.inconclusive:
            verdict.details["inconclusive"] = j.inconclusive
        for problem in problems:
            if verdict.status in (Status.PASS, Status.INCONCLUSIVE):
                verdict.status, verdict.stage, verdict.message = \
                    Status.WRONG_RESULT, Stage.VERIFY, problem
        if verdict.status in FACT_STATUSES and facts is not None \
                and verdict.status.value not in self.skip_facts:
            self._concluding = verdict
            try:
                verdict.details["facts"] = facts()
            finally:
                self._concluding = None
        return verdict

    def before_probe(self, facts: list[str]) -> None:
        """A fact is about to be probed by running the kernel built another way (e.g. with
        vectorization off), which may kill the process — the case's own kernel ran fine
        enough to be judged, the probe's need not.  The caller (a worker) is told the
        verdict as it stands, with the ``facts`` known without the probe, so that a death
        from here on is the probe's and the case keeps its verdict
        (:func:`fuzzharness.engine.worker_deaths.ended_verdict`)."""
        if self.on_provisional is not None and self._concluding is not None:
            v = self._concluding
            self.on_provisional(dataclasses.replace(
                v, details={**v.details, "facts": list(facts)}, timings=dict(v.timings)))

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
        if isinstance(e, rejections.InvalidRequest):  # our own invalid request, not TVM's
            status = Status.SCHEDULE_REJECTED
            details["rejection_kind"], details["rejection"] = e.rejection
        elif stage in (Stage.GENERATE, Stage.VERIFY) or not tvm_raised:
            details["traceback"] = traceback.format_exc(limit=-8)
            status = Status.HARNESS_ERROR
        elif stage is Stage.SCHEDULE and is_schedule_error(e):
            status = Status.SCHEDULE_REJECTED
        elif stage is Stage.RUN:
            status = Status.CRASH
            details.setdefault("kind", "exception")  # or what the backend knows (remote_died)
        elif stage is Stage.BASELINE:
            status, details["program"] = Status.COMPILE_ERROR, "unscheduled"
        elif (refusal := rejections.match(str(e))) is not None:
            status = Status.SCHEDULE_REJECTED
            details["rejection_kind"], details["rejection"] = refusal
        else:
            status = Status.COMPILE_ERROR
        return Verdict(status, stage, message=message, timings=self.timings, details=details)


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



def execute(case: Case, on_stage: StageCallback | None = None, *, baseline: str = "auto",
            skip_facts: frozenset[str] = frozenset(),
            on_provisional: Callable[[Verdict], None] | None = None) -> CaseRun:
    """Run ``case`` end to end; never raises for anything TVM or the case does.

    ``baseline``: when to build the unscheduled program as the metamorphic reference —
    ``auto`` (the default policy of :func:`fuzzharness.oracles.metamorphic.plan`), ``order``
    (every order-preserving case), ``always`` or ``never`` (benchmarks compare them).
    ``skip_facts``: statuses whose facts are not computed (see
    :meth:`fuzzharness.campaign.confirm.Confirmer.confirmation_task`); ``on_provisional``:
    told the verdict before a probe that may kill the process (:meth:`Execution.before_probe`).
    """
    return Execution(case, on_stage, baseline, skip_facts, on_provisional).run()
