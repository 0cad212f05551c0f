"""The Ray executor, for real: a Ray head on this machine (``ray start --head``, 2 CPUs, on the
loopback address), campaigns run by the CLI with ``--executor ray --ray-address``.

* the same seed gives the same cases and verdicts (and output bits) as the local executor —
  with ``--resume`` halfway, so the durable-resume path is the Ray one too;
* segfaults, aborts, hangs and memory blow-ups in TVM on the cluster are classified as they
  are locally (tests/plugins/chaos.py: real signals, a real endless loop) and survived;
* an actor killed by Ray in mid-task costs nothing: the task runs again on a fresh actor.

One Ray instance serves the module (its start-up costs 5–10 s on the 2-core CI machine).
"""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tests.test_engine_crashes import MEMORY_MB, N_CASES, TIMEOUT, chaos_seed

pytestmark = pytest.mark.slow  # campaigns, subprocesses, clusters

#: Ray on the loopback address only (Ray otherwise binds the machine's outward address), and
#: no cluster token (Ray ≥ 2.5x asks drivers for one by default): a private test cluster.
#: Ray reads these when it is imported, so this test process (a Ray driver in one test) sets
#: them before importing it; no other test module imports Ray.
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled",
           "RAY_USAGE_STATS_ENABLED": "0"}
for _k, _v in RAY_ENV.items():
    os.environ.setdefault(_k, _v)
try:
    import ray
except ImportError:
    if os.environ.get("CI") == "true":  # .ci/run installs the distributed extra: fail, not skip
        raise
    pytest.skip("the distributed extra (Ray) is not installed", allow_module_level=True)
PRIMITIVES = "split,reorder,fuse,vectorize,parallel,unroll"  # no MetaSchedule: ~10 s set-up
N_EQUAL = 10


def ray_test_env(**extra):
    env = dict(os.environ, **RAY_ENV, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def ray_head():
    """``ray start --head --block`` in its own process group; its address; stopped after."""
    temp = Path(tempfile.mkdtemp(prefix="fzray", dir="/tmp"))  # Ray's socket paths must be short
    log = open(temp / "head.log", "wb")  # noqa: SIM115
    head = subprocess.Popen(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--port", "0",
         "--num-cpus", "2", "--object-store-memory", str(100 << 20),  # tasks carry only JSON
         "--include-dashboard", "false", "--disable-usage-stats",
         "--temp-dir", str(temp)],
        stdout=log, stderr=subprocess.STDOUT, env=ray_test_env(), start_new_session=True)
    address_file = temp / "ray_current_cluster"
    deadline = time.monotonic() + 120
    while not (address_file.exists() and address_file.read_text().strip()):
        if head.poll() is not None or time.monotonic() > deadline:
            head.kill()
            pytest.fail(f"ray head did not start: {(temp / 'head.log').read_text()[-2000:]}")
        time.sleep(0.2)
    time.sleep(2)  # the raylet registers after the address is written
    try:
        yield address_file.read_text().strip()
    finally:
        head.send_signal(signal.SIGTERM)  # `ray start --block` stops what it started
        try:
            head.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)  # anything of ours left in its group
        except ProcessLookupError:
            pass
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def results(out):
    con = sqlite3.connect(out / "results.sqlite")
    rows = con.execute("SELECT idx, case_id, status, stage, digest, worker, verdict_json "
                       "FROM results ORDER BY idx").fetchall()
    con.close()
    return rows


def campaign(out, *extra, env=None):
    return run_cli("run", "--seed", 11, "--workers", 2, "--workloads", "row_sum,matmul",
                   "--primitives", PRIMITIVES, "--max-steps", 4, "--no-progress", "--out", out,
                   *extra, env=env or ray_test_env())


def test_same_seed_same_cases_and_verdicts_as_local(ray_head, tmp_path):
    local = campaign(tmp_path / "local", "--max-cases", N_EQUAL)
    assert local.returncode in (0, 1), local.stderr
    # on Ray: half, then the rest through --resume (what a killed driver would do)
    first = campaign(tmp_path / "ray", "--max-cases", N_EQUAL // 2, "--executor", "ray",
                     "--ray-address", ray_head)
    assert first.returncode in (0, 1), first.stderr
    assert f"2 workers (ray at {ray_head})" in first.stderr
    rest = run_cli("run", "--resume", tmp_path / "ray", "--max-cases", N_EQUAL, "--no-progress",
                   env=ray_test_env())
    assert rest.returncode in (0, 1), rest.stderr
    assert f"{N_EQUAL - N_EQUAL // 2} cases in" in rest.stdout, rest.stdout

    here, there = results(tmp_path / "local"), results(tmp_path / "ray")
    assert [r[0] for r in there] == list(range(N_EQUAL))
    # same cases, same verdicts, same output bits
    assert [r[1:5] for r in there] == [r[1:5] for r in here]
    # ... and they really ran in Ray actors (worker = "node/slot/pid"), not in local workers,
    # in worker processes that stayed up between cases (TVM imported once per process)
    workers = [r[5] for r in there]
    assert all(isinstance(w, str) and w.count("/") == 2 for w in workers), workers
    assert all(isinstance(r[5], int) for r in here)
    per_process = {w: workers.count(w) for w in workers}
    assert len(per_process) <= 4 and max(per_process.values()) >= 2, per_process


def test_crashing_cases_are_classified_as_locally_and_survived(ray_head, tmp_path):
    seed, params = chaos_seed()
    out = tmp_path / "chaos"
    r = run_cli("run", "--seed", seed, "--max-cases", N_CASES, "--workers", 2,
                "--workloads", "test_chaos", "--target", "test_chaos", "--max-steps", 0,
                "--timeout", TIMEOUT, "--memory-mb", MEMORY_MB, "--out", out, "--no-progress",
                "--executor", "ray", "--ray-address", ray_head,
                env=ray_test_env(FUZZHARNESS_PLUGINS="tests.plugins.chaos"))
    assert r.returncode == 1, r.stderr  # new findings: the crashes
    assert f"campaign seed {seed}: {N_CASES} cases" in r.stdout, r.stdout
    rows = results(out)
    assert [row[0] for row in rows] == list(range(N_CASES))
    deaths = 0
    for (idx, _cid, status, stage, _d, _w, verdict_json), p in zip(rows, params, strict=True):
        v = json.loads(verdict_json)
        where = f"case #{idx} {p}: {v['message']}"
        b = p["behaviour"]
        if b == "none":
            assert status == "pass", where
            continue
        assert stage == p["at"], where  # the stage that was running when the worker died
        if b in ("segfault", "abort"):
            deaths += 1
            assert status == "crash" and v["details"]["kind"] == "signal", where
            assert v["details"]["signal"] == {"segfault": "SIGSEGV", "abort": "SIGABRT"}[b], where
        elif b == "hang":
            deaths += 1
            assert status == "timeout" and v["details"]["timeout_s"] == TIMEOUT, where
        elif b in ("oom", "oom_numpy"):
            assert status == "crash" and v["details"]["kind"] == "out_of_memory", where
        elif b == "harness_bug":
            assert status == "harness_error", where
    assert deaths
    # every dead worker was replaced, inside its actor
    restarts = int(r.stdout.split(" worker restarts")[0].rsplit(", ", 1)[1])
    assert restarts >= deaths, r.stdout


def test_an_actor_lost_in_mid_task_costs_nothing(ray_head, monkeypatch):
    """Ray kills an actor while its task runs: the task runs again on a fresh actor."""
    from fuzzharness.engine.executor import ExecutorConfig, make_executor
    from fuzzharness.generators.cases import GenSettings, generate_case

    monkeypatch.setenv("PYTHONPATH", ray_test_env()["PYTHONPATH"])
    gen = GenSettings(workloads=("row_sum",), max_steps=0)
    # enough tasks that some result arrives while the other actor runs one (with 6, a CI run
    # once saw every result arrive with the other actor idle, and nothing was killed)
    n = 16
    tasks = [{"task": i, "case": generate_case(3, i, gen).to_dict()} for i in range(n)]
    ex = make_executor("ray", ExecutorConfig(workers=2, timeout=60,
                                             options={"ray_address": ray_head}))
    try:
        got = {}
        killed = False
        for res in ex.run(tasks):
            got[res.task["task"]] = res
            # an actor that has answered before (one that never did counts as a start failure)
            busy = [s for s in ex._slots if s.task is not None and s.answered]
            if not killed and busy:
                ray.kill(busy[0].actor)  # the task it runs is lost with it
                killed = True
        assert killed
        assert sorted(got) == list(range(n))
        assert all(r.verdict.status.value == "pass" for r in got.values()), \
            {k: r.verdict.line() for k, r in got.items()}
        assert ex.restarts >= 1
    finally:
        ex.close()
    assert not ray.is_initialized()  # the executor disconnects what it connected


def test_ray_executor_errors_are_one_line(tmp_path):
    r = run_cli("run", "--executor", "ray", "--ray-address", "127.0.0.1:1", "--max-cases", 1,
                "--out", tmp_path / "o", env=ray_test_env(),
                timeout=300)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "cannot connect to the Ray cluster at 127.0.0.1:1" in r.stderr
    assert "Traceback" not in r.stderr


def test_without_ray_installed_the_ray_executor_is_a_one_line_error(tmp_path):
    code = ("import sys; sys.modules['ray'] = None  # as if Ray were not installed\n"
            "from fuzzharness.cli import main\n"
            f"sys.exit(main(['run', '--executor', 'ray', '--max-cases', '1', '--out', "
            f"{str(tmp_path / 'o')!r}]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=ray_test_env(), timeout=120)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "needs Ray, which is not installed: pip install 'tvm-fuzzharness[distributed]'" \
        in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "o").exists()
