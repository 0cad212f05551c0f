"""A zygote's child imports nothing: the zygote preloaded what a case imports on first use.

Both sides, in one real process laid out as the zygote is (``engine/worker.py``: TVM, the
harness's worker modules, the plugins, TVM's tensor intrinsics): cases of the default
campaign's mix (llvm, OpenCL, Adreno textures, whole-graph cases) each run in a forked child
through the zygote's own loop, first without the preload — the children import the harness's
lazily imported modules (and ``pyopencl`` for an OpenCL case) — then after
:func:`fuzzharness.engine.preload.case_modules`, when they import nothing at all.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED, CASES = 3, 16


def _zygote_children(seed: int, n: int, gen: dict) -> None:
    """Print, per side, what each child imported and what its case was (one JSON line)."""
    import tvm  # noqa: F401 - the zygote's imports, as engine/worker.py does them

    from fuzzharness.core import tvm_compat, warmup
    from fuzzharness.core.kinds import RELAX_WORKLOAD

    tvm_compat.install()
    import fuzzharness.execution.stages  # noqa: F401
    import fuzzharness.generators.cases  # noqa: F401
    from fuzzharness.core.plugins import load_plugins
    from fuzzharness.engine import fresh, preload
    from fuzzharness.engine.tasks import run_task

    load_plugins()
    warmup.tensor_intrinsics()
    r, w = os.pipe()

    def serve(task) -> None:  # in the child: run the case, then say what it imported
        before = set(sys.modules)
        seen: dict = {}
        run_task(task, lambda m: seen.update(m["case"]) if "case" in m else None)
        target = seen.get("target") or {}
        kind = "graph" if seen.get("workload", {}).get("name") == RELAX_WORKLOAD else "kernel"
        os.write(w, (json.dumps({"imported": sorted(set(sys.modules) - before),
                                 "target": target.get("device") or target.get("kind"),
                                 "kind": kind}) + "\n").encode())

    for side in ("plain", "preload"):
        if side == "preload":
            assert preload.case_modules() == [] or importlib.util.find_spec("pyopencl") is None
        tasks = (json.dumps({"task": i, "generate": {"seed": seed, "index": i, "settings": gen}})
                 .encode() for i in range(n))
        fresh.serve_forked(tasks, serve, lambda msg: None, lambda _: None)
    os.close(w)
    with os.fdopen(r) as f:
        lines = [json.loads(line) for line in f]
    print(json.dumps({"plain": lines[:n], "preload": lines[n:]}))


def _default_generation() -> dict:
    """The default campaign's generation settings: its target mix on this machine."""
    from fuzzharness.generators.cases import GenSettings
    from fuzzharness.generators.targets import default_targets

    mix, shares, _ = default_targets()
    return GenSettings(target=mix[0], targets=tuple(mix), target_shares=tuple(shares)).to_dict()


@pytest.mark.slow
def test_a_zygotes_child_imports_nothing_once_the_zygote_preloaded():
    gen = _default_generation()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, __file__, str(SEED), str(CASES), json.dumps(gen)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    sides = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(sides["plain"]) == len(sides["preload"]) == CASES, sides
    # the sample covers what imports lazily: llvm and OpenCL kernels, whole graphs
    targets = {c["target"] for c in sides["plain"]}
    assert {"llvm", "opencl", "adreno"} <= targets and \
        any(c["kind"] == "graph" for c in sides["plain"]), sides["plain"]
    # without the preload, children import harness modules (and pyopencl for OpenCL cases) ...
    plain = set().union(*(c["imported"] for c in sides["plain"]))
    assert {"fuzzharness.oracles.emulate", "fuzzharness.execution.tir_run"} <= plain, plain
    if importlib.util.find_spec("pyopencl") is not None:
        assert "pyopencl" in plain, plain
    # ... with it, none imports anything
    preloaded = {i: c["imported"] for i, c in enumerate(sides["preload"]) if c["imported"]}
    assert preloaded == {}, f"cases whose child still imported modules: {preloaded} " \
                            "(add them to fuzzharness/engine/preload.py)"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    _zygote_children(int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]))


@pytest.mark.slow
def test_the_zygote_preloads_and_a_persistent_worker_does_not(tmp_path):
    """The wiring in ``engine/worker.py``, both sides: a confirmation's child (a real pool's
    zygote) finds the modules imported and the dry runs done; a persistent worker, which pays
    them at its first case (and may never need them), does neither before it."""
    from fuzzharness.core.case import Case
    from fuzzharness.core.verdict import Status
    from fuzzharness.engine.pool import WorkerPool
    from fuzzharness.engine.worker import WARM_START_ENV
    from tests.plugins.preload_probe import PROBE_FILE_ENV

    probe = tmp_path / "probe.jsonl"
    env = {k: v for k, v in os.environ.items() if k != WARM_START_ENV}
    env.update({"FUZZHARNESS_PLUGINS": "tests.plugins.preload_probe", PROBE_FILE_ENV: str(probe),
                "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    case = Case(workload={"name": "test_preload_probe",
                          "params": {"M": 3, "N": 5, "dtype": "float32"}},
                inputs={"distribution": "uniform", "seed": 1}).to_dict()
    with WorkerPool(1, timeout=120.0, env=env) as pool:
        results = list(pool.run([{"task": 0, "case": case},
                                 {"task": 1, "case": case, "fresh": True}]))
    assert sorted(r.verdict.status for r in results) == [Status.PASS, Status.PASS], \
        [r.verdict.line() for r in results]
    process = {r.task["task"]: r.process for r in results}  # "fresh/<pid>" for the child
    assert process[1].startswith("fresh/") and not process[0].startswith("fresh/"), process
    lines = [json.loads(line) for line in probe.read_text().splitlines()]
    assert len(lines) == 2, lines
    fresh = [ln for ln in lines if f"fresh/{ln['pid']}" == process[1]]
    persistent = [ln for ln in lines if str(ln["pid"]) == process[0]]
    assert len(fresh) == 1 and fresh[0]["missing"] == [], lines
    assert len(persistent) == 1 and "fuzzharness.core.interpreter" in persistent[0]["missing"], lines
    # the zygote also did its dry runs (they parsed their programs); a worker does none
    from fuzzharness.engine.preload import DRY_RUN_WORKLOADS

    assert fresh[0]["parsed"] >= len(DRY_RUN_WORKLOADS) and persistent[0]["parsed"] == 0, lines


def test_a_dry_run_compiles_a_case_and_runs_no_kernel():
    """Both sides, in this process with the real TVM: a case that passes when its kernel
    runs goes, within ``dry_runs()``, through lower, codegen and build and on to the oracles
    with its output buffers untouched — still the poison the harness fills them with."""
    import numpy as np

    from fuzzharness.backends.rpc import dry_runs
    from fuzzharness.core.verdict import Stage, Status
    from fuzzharness.engine import preload
    from fuzzharness.execution.stages import execute
    from fuzzharness.generators.cases import generate_case

    case = generate_case(preload.DRY_RUN_SEED, 0, preload.dry_run_settings("matmul"))
    run = execute(case)
    assert run.verdict.status is Status.PASS, run.verdict.line()
    assert all(np.isfinite(o).all() for o in run.outputs.values())
    with dry_runs():
        dry = execute(case)
    assert dry.verdict.is_finding and dry.verdict.stage is Stage.VERIFY, dry.verdict.line()
    assert {"lower", "codegen", "build"} <= set(dry.verdict.timings), dry.verdict.timings
    assert all(np.isnan(o).all() for o in dry.outputs.values()), dry.outputs
    assert dry.baseline is None  # unscheduled: the program is its own baseline, none is built
    assert execute(case).verdict.status is Status.PASS  # the switch is off again


def test_the_zygotes_dry_runs_reach_the_oracles():
    """Every dry run of the zygote's warm-up gets to the oracles: a renamed workload or a
    setting generation refuses would leave the children to pay for it again, silently but
    for a line in the zygote's log."""
    from fuzzharness.engine import preload

    assert preload.dry_runs() == []


def test_a_confirming_pools_zygote_starts_with_its_workers(tmp_path):
    """Both sides: a pool told that fresh tasks will come (a confirming campaign) starts its
    zygote with its workers, and the first fresh task goes to that zygote, not to a new one;
    a pool not told starts none before a fresh task.  A campaign tells its pool when it
    confirms and is long enough to meet a finding all but surely."""
    from fuzzharness.campaign.driver import Campaign
    from fuzzharness.campaign.settings import CampaignSettings
    from fuzzharness.core.case import Case
    from fuzzharness.engine.pool import WorkerPool
    from fuzzharness.engine.worker_process import FRESH_SLOT

    case = Case(workload={"name": "row_sum", "params": {"M": 2, "N": 3, "dtype": "float32"}},
                inputs={"distribution": "uniform", "seed": 1}, target={"kind": "llvm"}).to_dict()
    for fresh_tasks in (True, False):
        with WorkerPool(1, timeout=120.0, fresh_tasks=fresh_tasks) as pool:
            (r,) = pool.run([{"task": 0, "case": case}])
            assert r.verdict.status.value == "pass", r.verdict.line()
            assert (FRESH_SLOT in pool.pids()) is fresh_tasks, pool.pids()
            if fresh_tasks:
                zygote = pool.pids()[FRESH_SLOT]
                (r,) = pool.run([{"task": 1, "case": case, "fresh": True}])
                assert r.process.startswith("fresh/") and pool.pids()[FRESH_SLOT] == zygote
    from fuzzharness.campaign.driver import ZYGOTE_AT_START_CASES as LONG

    for confirm, max_cases, time_budget, eager in [(True, LONG, 0.0, True), (True, 0, 60.0, True),
                                                   (True, LONG - 1, 0.0, False),
                                                   (False, LONG, 0.0, False)]:
        settings = CampaignSettings(seed=1, time_budget=time_budget, max_cases=max_cases,
                                    confirm=confirm)
        campaign = Campaign(tmp_path / f"{confirm}-{max_cases}", settings)
        assert campaign._executor_config().fresh_tasks is eager, (confirm, max_cases)
        assert campaign._fresh_pool().fresh_tasks is False  # after the run: only when needed
