"""The Relax case kind: a whole Relax graph (``workload["name"] == "graph"``) through TVM's
Relax pipeline, each fused PrimFunc re-scheduled by its own stored trace.

Its stages are :mod:`fuzzharness.execution.relax_run` (the execution layer); its minimizer passes edit the graph
(:mod:`fuzzharness.kinds.relax.minimize`); its repro is the Relax module as TVMScript
(:mod:`fuzzharness.kinds.relax.script`); its issue text names the operators and the
compilation mode (:mod:`fuzzharness.kinds.relax.issue_text`).  The lowering-pass bisection
probes single PrimFuncs, so it is not run for graphs; the culprit schedule step is
(:mod:`fuzzharness.minimize.step_bisect`, a graph with one scheduled function): a graph
that reaches a schedule bug is keyed by the step and site like a kernel that does.
"""

from __future__ import annotations

from typing import Any

from fuzzharness.buckets.root_causes import graph_schedule_primitives
from fuzzharness.core.case import Case
from fuzzharness.core.kinds import CaseKind
from fuzzharness.core.traces import primitive_sequence
from fuzzharness.core.verdict import Verdict
from fuzzharness.execution.relax_run import RUN
from fuzzharness.generators.graphs.spec import graph_primitives
from fuzzharness.kinds.relax import issue_text, minimize, script
from fuzzharness.minimize import step_bisect, trace_edit
from fuzzharness.repro.triage import Triage


class RelaxKind(CaseKind):
    name = "relax"
    tag = "[Relax]"
    size_unit = "graph nodes + trace instructions"

    def root_cause_primitives(self, case: dict[str, Any] | None, sig) -> tuple[str, ...]:
        # its per-function schedule primitives, else its operators
        return graph_schedule_primitives(case, sig)

    def probed_trace(self, case: Case):
        functions = (case.schedule or {}).get("functions") or {}
        if len(functions) != 1:
            return None
        (name, entry), = functions.items()
        return (name, entry.get("trace")) if entry.get("trace") else None

    def one_function_cases(self, case: Case) -> list[Case]:
        functions = (case.schedule or {}).get("functions") or {}
        names = [n for n, e in functions.items() if primitive_sequence(e.get("trace") or [])]
        if len(names) < 2:
            return []
        return [case.replace(schedule=dict(case.schedule, functions={n: functions[n]}))
                for n in names]

    def program_and_trace(self, case: Case):
        functions = (case.schedule or {}).get("functions") or {}
        if len(functions) != 1:
            return None, None
        from fuzzharness.core.relax_pipeline import graph_target, legalize, prim_functions
        from fuzzharness.generators.graphs.program import build_module
        from fuzzharness.generators.graphs.spec import Graph

        (name, entry), = functions.items()
        mod = legalize(build_module(Graph.from_dict(case.params)), graph_target(case.target),
                       case.schedule.get("layout"))
        return prim_functions(mod).get(name), entry.get("trace")
    no_schedule = "the default pipeline"

    def run(self, execution, result) -> None:
        RUN.run(execution, result)

    def check_case(self, case: Case) -> str | None:
        return RUN.check_case(case)

    def bucket_primitives(self, case: dict[str, Any], status: str) -> tuple[str, ...]:
        # the operators and every fused function's primitives: a wrong answer's bucket
        # shrinks to a subset of them as the graph is minimized
        return graph_primitives(case)

    def size(self, case: Case) -> int:
        nodes = len((case.params or {}).get("nodes") or [])
        traces = minimize.function_traces(case).values()
        return nodes + sum(trace_edit.length(t) for t in traces)

    def minimize_schedule(self, case, first, stop, stage: str) -> Case:
        return minimize.minimize_function_traces(case, first, stop)

    def simplifications(self):
        return [("graph", minimize.propose)]

    def write_script(self, case: Case, verdict: Verdict, **kwargs: Any):
        return script.write_script(case, verdict, **kwargs)

    def bisect_passes(self, case: Case, verdict: Verdict, pattern: str | None, workdir):
        """Only the culprit schedule step (a schedule-level failure of a graph: its one
        scheduled function's, or the one that fails alone's); None when there is nothing to
        probe."""
        import time

        from fuzzharness.buckets.signatures import signature

        sig = signature(case.to_dict(), verdict)
        if sig is None or sig.has_text or not step_bisect.probeable(case):
            return None
        started = time.monotonic()
        try:
            step, facts, site = step_bisect.culprit_step(case, sig)
        except Exception:  # noqa: BLE001 - a triage hint, never a failure
            return None
        return Triage(culprit_step=step, step_facts=list(facts), step_site=list(site),
                      note="graph: the culprit schedule step only (no pass probe)",
                      seconds=time.monotonic() - started)

    def describe(self, case: Case) -> str:
        return issue_text.describe(case)

    def issue_primitives(self, case: Case) -> list[str]:
        ops = {str(n.get("op")) for n in case.params.get("nodes") or []}
        return [p for p in graph_primitives(case.to_dict()) if p not in ops]

    def error_title(self, verdict: Verdict, prims: str, where: str, msg: str,
                    raised_in: str | None) -> str:
        return f"[Bug] [Relax] Compiling a {where} fails: {msg}"

    def expected_behaviour(self, case: Case, verdict: Verdict, exact: bool) -> str:
        return issue_text.expected_behaviour(case, verdict, exact)

    def program_excerpt(self, script_text: str, schedule_lines: list[str],
                        failing_call: str | None) -> str:
        return issue_text.program_excerpt(script_text)

    def hints(self, case: Case, triage) -> list[str]:
        return issue_text.hints(case)


KIND = RelaxKind()
