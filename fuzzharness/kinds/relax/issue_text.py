"""The Relax kind's words in issue text: the graph's operators and compilation mode, the
Relax module as the program, and why no lowering pass is named."""

from __future__ import annotations

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Verdict


def describe(case: Case) -> str:
    ops = ", ".join(dict.fromkeys(str(n.get("op")) for n in case.params.get("nodes") or []))
    mode = (case.schedule or {}).get("source", "graph:default").split(":", 1)[-1]
    return f"Relax graph ({ops}; {case.params.get('dtype')}, {case.target.get('kind')}, {mode} mode)"


def expected_behaviour(case: Case, verdict: Verdict, exact: bool) -> str:
    if verdict.status.value in ("wrong_result", "nan_inf"):
        how = ("exactly equal to the float64 reference (small-integer inputs: every op's result "
               "is an exact integer)" if exact else
               "within the error bound of the float64 reference, composed op by op from each "
               "op's stated floating-point error model")
        return f"The compiled Relax graph's outputs should be {how}."
    return ("`relax.build` of the module should succeed and the compiled graph should "
            "compute the correct result.")


def program_excerpt(script_text: str) -> str:
    """The Relax module and the fused functions' schedules, as the script has them."""
    lines = script_text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith("@I.ir_module"))
        end = next(i for i, ln in enumerate(lines) if i > start and ln.startswith("# -- inputs"))
    except StopIteration:
        return ""
    return "\n".join(lines[start:end]).rstrip()


def mode(case: Case) -> str:
    schedule = case.schedule or {}
    text = {"graph:default": "TVM's default Relax pipeline (LegalizeOps, FuseOps, FuseTIR, "
                             "default schedules)",
            "graph:dlight": "the default pipeline with dlight's default schedules",
            "graph:random": "the default pipeline, fused PrimFuncs re-scheduled at random",
            "graph:metaschedule": "the default pipeline, fused PrimFuncs scheduled by "
                                  "MetaSchedule design-space samples"}.get(
        schedule.get("source", "graph:default"), str(schedule.get("source")))
    if schedule.get("layout"):
        text += f", after ConvertLayout to {schedule['layout']}"
    return text


def hints(case: Case) -> list[str]:
    return ["- compiled by: " + mode(case),
            "- lowering passes: not probed (the pass bisection covers single PrimFuncs)"]
