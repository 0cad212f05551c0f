"""The TIR kind's words in issue text: what the case is, its title for errors, the program
excerpt, and the pass-bisection hints (:mod:`fuzzharness.kinds.tir.pass_bisect`)."""

from __future__ import annotations

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Verdict
from fuzzharness.kinds.tir.pass_bisect import Triage


def describe(case: Case) -> str:
    parts = [_shape_text(case), case.origin.get("dtype") or case.params.get("dtype", ""),
             case.target.get("kind")]
    return f"{case.workload_name} ({', '.join(str(p) for p in parts if p)})"


def _shape_text(case: Case) -> str:
    """The workload's integer parameters (extents, strides; lists of them too), as k=v."""
    def plain(v) -> bool:
        if isinstance(v, list):
            return bool(v) and all(plain(x) for x in v)
        return isinstance(v, int) and not isinstance(v, bool)
    return ", ".join(f"{k}={v}" for k, v in case.params.items() if plain(v))


def error_title(verdict: Verdict, prims: str, msg: str, raised_in: str | None) -> str:
    if verdict.stage.value == "schedule" and prims.startswith("dlight."):
        return (f"[Bug] [TIR][dlight] {prims} fails in its own code instead of returning a "
                f"schedule or None: {msg}")
    if verdict.stage.value == "schedule":
        return f"[Bug] [TIR][Schedule] {prims} fails instead of raising a ScheduleError: {msg}"
    what = {"lower": "Lowering", "codegen": "Code generation", "build": "Building"}.get(
        verdict.stage.value, verdict.stage.value.capitalize())
    if raised_in:
        what = raised_in.split(".")[-1]
    return f"[Bug] [TIR] {what} fails after {prims}: {msg}"


def program_excerpt(script_text: str, schedule_lines: list[str], failing_call: str | None) -> str:
    """The program (TVMScript) and the schedule calls, cut from the script."""
    lines = script_text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith("@T.prim_func"))
        end = next(i for i, ln in enumerate(lines) if i > start and ln.startswith("# -- the schedule"))
        program = "\n".join(lines[start:end]).rstrip()
    except StopIteration:
        program = ""
    sched = ["sch = tvm.s_tir.Schedule(main)", *schedule_lines]
    if failing_call:
        sched.append(failing_call + "  # raises")
    return program + "\n\n" + "\n".join(sched)


#: a located defect as the scheduled TIR shows it, and what disabling a pass does to it (why
#: the pass the probe implicated is no culprit)
_LOCATED_TEXT = {
    "binding_outside_domain": ("a block runs outside its domain without a guard",
                               "moves where the out-of-domain accesses land"),
    "init_without_reduction_iterator": (
        "a block keeps its `T.init()` with no reduction iterator left (TVM runs such an init "
        "at every iteration)", "changes how the reset sum shows"),
    "read_undeclared_buffer": (
        "a block loads a buffer its `T.reads` does not name (primitives order blocks by "
        "the declared regions)", "changes where the misordered reads land"),
}


def triage_lines(t: Triage | None) -> list[str]:
    if t is None:
        return ["- lowering passes: not probed"]
    out = []
    if t.raised_in:
        out.append(f"- the error is raised inside the lowering pass `{t.raised_in}`")
    elif t.located:
        shows, probe = _LOCATED_TEXT.get(t.located[0], ("it has a defect", "changes how it shows"))
        out.append(f"- the scheduled program is already wrong: after `sch.{t.culprit_step}` "
                   f"{shows} ({', '.join(t.located)}, read from the scheduled TIR below), so no "
                   "lowering pass is the culprit"
                   + (f"; the pass probe found the output right with `{t.implicated[0]}` "
                      f"disabled, which only {probe}" if t.implicated else ""))
    elif t.implicated and t.fix_test == "not confirmed":
        out.append(f"- the pass probe found the output right with `{t.implicated[0]}` disabled, "
                   "but this repro run with that pass disabled still fails: no culprit pass is "
                   "named")
    elif t.implicated:
        out.append(f"- first lowering pass after which the output goes wrong: `{t.implicated[0]}` "
                   f"(disabling it gives the correct result"
                   + (f"; so does disabling {', '.join(f'`{p}`' for p in t.implicated[1:])}"
                      if len(t.implicated) > 1 else "")
                   + ("; confirmed by running this repro with it disabled" if t.fix_test else "")
                   + ")")
    elif t.note:
        out.append(f"- {t.note}")
    if t.required:
        out.append(f"- passes that cannot be disabled for this program: "
                   f"{', '.join(f'`{p}`' for p in t.required)}")
    if t.crashed:
        out.append(f"- disabling {', '.join(f'`{p}`' for p in t.crashed)} crashes TVM itself")
    if t.passes:
        out.append(f"- probed by disabling each of the {len(t.passes)} passes of the default "
                   f"TIR pipeline in turn (`PassContext(disabled_pass=[...])`)")
    return out
