"""The TIR case kind: one PrimFunc of a registered workload, scheduled by one stored trace.

Its stages are :mod:`fuzzharness.execution.tir_run` (the execution layer); its repro is a TVMScript PrimFunc with the
schedule as ``sch.<primitive>(...)`` calls (:mod:`fuzzharness.kinds.tir.script`); its issue text
names the workload and the lowering pass the bisection implicates
(:mod:`fuzzharness.kinds.tir.issue_text`).
"""

from __future__ import annotations

from typing import Any

from fuzzharness.buckets.signatures import signature
from fuzzharness.core.case import Case
from fuzzharness.core.kinds import CaseKind
from fuzzharness.core.traces import primitive_sequence, trace_primitives
from fuzzharness.core.verdict import Status, Verdict
from fuzzharness.execution.tir_run import RUN
from fuzzharness.kinds.tir import generation_failure, issue_text, pass_bisect, script
from fuzzharness.minimize import passes, step_bisect, trace_edit
from fuzzharness.repro.triage import Triage


class TirKind(CaseKind):
    name = "tir"
    tag = "[TIR]"
    size_unit = "trace instructions"
    no_schedule = "no schedule"

    def run(self, execution, result) -> None:
        RUN.run(execution, result)

    def check_case(self, case: Case) -> str | None:
        return RUN.check_case(case)

    def bucket_primitives(self, case: dict[str, Any], status: str) -> tuple[str, ...]:
        if status == Status.REFERENCE_MISMATCH.value:
            # TVM's build of the *unscheduled* program disagrees with the reference: the
            # schedule the case also carried has nothing to do with it
            return ()
        return trace_primitives((case.get("schedule") or {}).get("trace"))

    def size(self, case: Case) -> int:
        return trace_edit.length(case.trace)

    def minimize_schedule(self, case, first, stop, stage: str) -> Case:
        return passes.minimize_trace(case, first, stop, passes.replay_fixer(stage))

    def simplifications(self):
        return [("decisions", passes.propose_decisions)]

    def write_script(self, case: Case, verdict: Verdict, **kwargs: Any):
        return script.write_script(case, verdict, **kwargs)

    def bisect_passes(self, case: Case, verdict: Verdict, pattern: str | None, workdir):
        if verdict.status is Status.TIMEOUT:
            return None
        if case.target.get("kind") != "llvm" and verdict.stage.value in ("run", "verify"):
            # the pass probe runs kernels on the CPU: a device kernel's passes are not
            # probed, but its culprit step is (the step probe runs the prefixes on the
            # device, as `known check` does for a witness: the same root-cause key either way)
            t = Triage(note="lowering passes: not probed (the pass probe runs kernels on the "
                            "CPU; this one runs on the device)")
        else:
            t = pass_bisect.triage(case, symptom=verdict.status.value, pattern=pattern,
                                   workdir=workdir, verdict=verdict)
        sig = signature(case.to_dict(), verdict)
        if sig is not None and not sig.has_text and case.trace:  # a schedule-level bug's step
            try:
                step, facts, site = step_bisect.culprit_step(case, sig)
                t.culprit_step, t.step_facts, t.step_site = step, list(facts), list(site)
            except Exception:  # noqa: BLE001 - a triage hint, never a failure
                pass
        return t

    def root_cause_primitives(self, case: dict[str, Any] | None, sig) -> tuple[str, ...]:
        return primitive_sequence(((case or {}).get("schedule") or {}).get("trace"))

    def probed_trace(self, case: Case):
        return ("", case.trace) if case.trace else None

    def program_and_trace(self, case: Case):
        from fuzzharness.generators.workloads import workloads

        return (workloads[case.workload_name].prim_func(case.params), case.trace) if case.trace \
            else (None, None)

    def generation_failure_case(self, choices, generation, origin, verdict):
        call = generation_failure.capture_isolated(choices, generation)
        return generation_failure.as_case(call, generation, origin, verdict), call.line

    def describe(self, case: Case) -> str:
        return issue_text.describe(case)

    def issue_primitives(self, case: Case) -> list[str]:
        return list(trace_primitives(case.trace))

    def culprit_calls(self, case: Case) -> list[str]:
        """The schedule calls an issue title names: the trace's primitives in order
        (``sch.cache_write``, ``sch.vectorize``), a repeat counted (``sch.split ×2``)."""
        out: list[list] = []
        for name in primitive_sequence(case.trace):
            if out and out[-1][0] == name:
                out[-1][1] += 1
            else:
                out.append([name, 1])
        return [f"sch.{n}" + (f" ×{k}" if k > 1 else "") for n, k in out]

    def error_title(self, verdict: Verdict, prims: str, where: str, msg: str,
                    raised_in: str | None) -> str:
        return issue_text.error_title(verdict, prims, msg, raised_in)

    def program_excerpt(self, script_text: str, schedule_lines: list[str],
                        failing_call: str | None) -> str:
        return issue_text.program_excerpt(script_text, schedule_lines, failing_call)

    def hints(self, case: Case, triage) -> list[str]:
        return issue_text.triage_lines(triage)


KIND = TirKind()
