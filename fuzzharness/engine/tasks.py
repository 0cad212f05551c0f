"""What a worker does with one task; also callable in-process (replay, tests, benchmarks)."""

from __future__ import annotations

import importlib
import os
import time
import traceback
from collections.abc import Callable
from typing import Any

from fuzzharness.case import Case
from fuzzharness.tvm_support import blame_tvm
from fuzzharness.verdict import Stage, Status, Verdict

Send = Callable[[dict[str, Any]], None]

PLUGINS_ENV = "FUZZHARNESS_PLUGINS"


def load_plugins() -> list[str]:
    """Import the modules named in $FUZZHARNESS_PLUGINS (comma-separated).

    A plugin registers extra workloads, primitives or backends from outside the package —
    the test suite uses one to add backends that really segfault, abort or hang.
    """
    from fuzzharness.errors import UsageError

    names = [n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",") if n.strip()]
    for n in names:
        try:
            importlib.import_module(n)
        except ImportError as e:
            raise UsageError(f"cannot import plugin {n!r} named in ${PLUGINS_ENV}: {e}") from None
    return names


def run_task(task: dict[str, Any], send: Send) -> Verdict:
    from fuzzharness.execute import execute

    tid = task.get("task")
    t0 = time.perf_counter()
    if "generate" in task:
        g = task["generate"]
        send({"task": tid, "stage": Stage.GENERATE.value})
        try:
            case = _generate(g["seed"], g["index"], g["settings"])
        except Exception as e:  # noqa: BLE001
            v = _generation_failure(e)
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

    outcome = execute(case, on_stage)
    verdict = outcome.verdict
    if task.get("outputs") and verdict.is_finding and outcome.outputs:  # for confirmation
        from fuzzharness.engine import output_arrays

        verdict.details[output_arrays.KEY] = output_arrays.encode(outcome.outputs)
    if gen_time:
        verdict.timings["generate_case"] = gen_time
    send({"task": tid, "verdict": verdict.to_dict()})
    return verdict


def _generate(seed: int, index: int, settings: dict[str, Any]) -> Case:
    from generators.cases import GenSettings, generate_case

    return generate_case(seed, index, GenSettings.from_dict(settings))


def _generation_failure(e: Exception) -> Verdict:
    """A TVM exception while building the random schedule is a finding; ours is not."""
    from fuzzharness.execute import out_of_memory_verdict
    from fuzzharness.triage import throw_site

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
