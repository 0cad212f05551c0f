"""Durability: SIGKILL the campaign driver mid-run, resume it, lose and duplicate nothing."""

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow  # campaigns, subprocesses, clusters

N_CASES = 40
WORKERS = 2
KILL_AFTER = 8  # results committed before the driver is killed


def rows(out):
    con = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
    try:
        return con.execute("SELECT idx, case_json, verdict_json, status, finished, session, bucket, "
                           "confirmation FROM results ORDER BY idx").fetchall()
    finally:
        con.close()


def count(out) -> int:
    try:
        return len(rows(out))
    except sqlite3.OperationalError:  # not created yet
        return 0


def children(pid: int) -> list[int]:
    """Live processes whose parent is ``pid`` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_the_driver_then_resume_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "run"
    driver = subprocess.Popen(
        [sys.executable, "-m", "fuzzharness.cli", "run", "--seed", "7", "--max-cases", str(N_CASES),
         "--workers", str(WORKERS), "--out", str(out), "--no-progress"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while count(out) < KILL_AFTER:
            assert driver.poll() is None, "the campaign ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        workers = children(driver.pid)
        # the workers, and the zygote of fresh workers once a failure was being confirmed
        assert WORKERS <= len(workers) <= WORKERS + 1
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    finally:
        if driver.poll() is None:
            driver.kill()
    before = rows(out)
    done = [r[0] for r in before]

    # The orphaned workers notice that their parent died and exit.
    deadline = time.monotonic() + 15
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(w) for w in workers), "worker processes outlived the killed driver"

    # Lost: only what was running (at most one case per worker) — holes below the highest index.
    holes = set(range(max(done) + 1)) - set(done)
    assert len(holes) <= WORKERS

    r = run_cli("run", "--resume", out, "--no-progress")
    assert r.returncode in (0, 1), r.stderr
    after = rows(out)
    assert [row[0] for row in after] == list(range(N_CASES))  # each index exactly once
    by_idx = {row[0]: row for row in after}
    for row in before:  # nothing stored before the kill was touched, but for ...
        if row[7] == "pending":  # ... failures whose confirmation the kill interrupted
            assert by_idx[row[0]][:2] == row[:2] and by_idx[row[0]][4:6] == row[4:6]
            assert by_idx[row[0]][7] != "pending"  # the resumed session settled them
        else:
            assert by_idx[row[0]] == row
    assert "pending" not in {row[7] for row in after}
    assert {by_idx[i][5] for i in holes} <= {2}  # the holes were run by the resumed session

    con = sqlite3.connect(out / "results.sqlite")
    sessions = con.execute("SELECT id, ended, cases FROM sessions ORDER BY id").fetchall()
    counted = dict(con.execute("SELECT key, count FROM buckets").fetchall())
    actual = dict(con.execute("SELECT bucket, COUNT(*) FROM results WHERE bucket IS NOT NULL "
                              "GROUP BY bucket").fetchall())
    con.close()
    assert sessions[0][1] is None and sessions[1][1] is not None  # killed, then finished
    assert sessions[1][2] == N_CASES - len(before)
    assert counted == actual  # bucket counts survived the kill consistently

    # A finished campaign can be extended (stopping rule), but not re-aimed (generation).
    r = run_cli("run", "--resume", out, "--max-cases", N_CASES + 4, "--no-progress")
    assert r.returncode in (0, 1), r.stderr
    assert [row[0] for row in rows(out)] == list(range(N_CASES + 4))
    r = run_cli("run", "--resume", out, "--workloads", "matmul")
    assert r.returncode == 2 and "cannot change a stored campaign" in r.stderr


HANGING_DRIVER = """
import sys
from fuzzharness.core.case import Case
from fuzzharness.engine.pool import WorkerPool
case = Case(workload={"name": "test_chaos", "params": {"M": 2, "N": 2, "dtype": "float32",
                                                       "behaviour": "hang", "at": "run"}},
            inputs={"distribution": "uniform", "seed": 1}, target={"kind": "test_chaos"})
pool = WorkerPool(1, timeout=3600, log_dir=sys.argv[1])
list(pool.run([{"task": 0, "case": case.to_dict()}]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_stuck_in_an_endless_loop_dies_with_its_driver(tmp_path, plugin_env):
    env = dict(plugin_env, FUZZHARNESS_PLUGINS="tests.plugins.chaos")
    driver = subprocess.Popen([sys.executable, "-c", HANGING_DRIVER, str(tmp_path)], cwd=ROOT,
                              env=env)
    log = tmp_path / "worker-0.log"
    try:
        deadline = time.monotonic() + 120
        while not (log.exists() and "chaos: hang" in log.read_text(errors="replace")):
            assert driver.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        (worker,) = children(driver.pid)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    finally:
        if driver.poll() is None:
            driver.kill()
    deadline = time.monotonic() + 5
    while alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(worker):
        os.kill(worker, signal.SIGKILL)
        pytest.fail("a worker busy in a case outlived its killed driver")
