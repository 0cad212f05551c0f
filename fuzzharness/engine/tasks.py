"""What a worker does with one task; also callable in-process (replay, tests, benchmarks)."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import blame_tvm
from fuzzharness.core.verdict import Stage, Status, Verdict
from fuzzharness.execution.facts import throw_site
from fuzzharness.execution.stages import execute, out_of_memory_verdict
from fuzzharness.generators.cases import GenSettings, generate_case

Send = Callable[[dict[str, Any]], None]

def run_task(task: dict[str, Any], send: Send) -> Verdict:

    tid = task.get("task")
    t0 = time.perf_counter()
    if "generate" in task:
        g = task["generate"]
        send({"task": tid, "stage": Stage.GENERATE.value})
        try:
            case = _generate(g["seed"], g["index"], g["settings"], g.get("mutation"))
        except Exception as e:  # noqa: BLE001
            v = generation_failure(e)
            v.timings["generate"] = time.perf_counter() - t0
            send({"task": tid, "verdict": v.to_dict()})
            return v
        gen_time = time.perf_counter() - t0
        send({"task": tid, "case": case.to_dict()})
    else:
        case = Case.from_dict(task["case"])
        gen_time = 0.0

    def on_stage(stage: Stage) -> None:
        send({"task": tid, "stage": stage.value})

    outcome = execute(case, on_stage, skip_facts=frozenset(task.get("skip_facts", ())),
                      on_provisional=lambda v: send({"task": tid, "provisional": v.to_dict()}))
    verdict = outcome.verdict
    if task.get("outputs") and verdict.is_finding and outcome.outputs:  # for confirmation
        from fuzzharness.engine import output_arrays

        verdict.details[output_arrays.KEY] = output_arrays.encode(outcome.outputs)
    if gen_time:
        verdict.timings["generate_case"] = gen_time
    send({"task": tid, "verdict": verdict.to_dict()})
    return verdict


def _generate(seed: int, index: int, settings: dict[str, Any],
              mutation: dict[str, Any] | None = None) -> Case:

    return generate_case(seed, index, GenSettings.from_dict(settings), mutation)


def generation_failure(e: Exception) -> Verdict:
    """A TVM exception while building the random schedule is a finding; ours is not."""

    if isinstance(e, MemoryError):
        return out_of_memory_verdict(Stage.GENERATE, e)
    details = {"exception": type(e).__name__, "traceback": traceback.format_exc(limit=-8)}
    if blame_tvm(e):
        if site := throw_site(e):
            details["site"] = site
        return Verdict(Status.COMPILE_ERROR, Stage.SCHEDULE, f"{type(e).__name__}: {e}",
                       details=details)
    return Verdict(Status.HARNESS_ERROR, Stage.GENERATE, f"{type(e).__name__}: {e}",
                   details=details)
