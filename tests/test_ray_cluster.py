"""A campaign on a Ray cluster of three nodes, one of which is lost in mid-campaign.

The nodes are simulated on this machine by Ray's own ``ray.cluster_utils.Cluster`` (a head
and two more raylets, 2 CPUs each); the campaign runs in the real CLI, as a driver process
of its own, with ``--executor ray --ray-address``.  Once results come in, the test removes a
node — with it the Ray actor placed there (one per node: ``SPREAD``) and that actor's worker
process.  No case may be lost or stored twice, and the verdicts (and output bits) must be
those of the local executor for the same seed.
"""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import pytest

from tests.conftest import ROOT
from tests.test_ray_executor import RAY_ENV, campaign, ray_test_env, results

ray = pytest.importorskip("ray", reason="the distributed extra (Ray) is not installed")
N_CASES = 9
WORKERS = 3


@pytest.fixture
def three_nodes(monkeypatch):
    """A head and two more nodes on this machine; (cluster, [the two non-head nodes])."""
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="fzcl", dir="/tmp")  # Ray's socket paths must be short
    os.makedirs(os.path.join(temp, "ray"))
    monkeypatch.setenv("RAY_TMPDIR", temp)  # Ray's files (and its address file) go here
    for k, v in RAY_ENV.items():
        monkeypatch.setenv(k, v)
    args = {"num_cpus": 2, "object_store_memory": 100 << 20}
    cluster = Cluster(initialize_head=True, head_node_args={**args, "include_dashboard": False})
    try:
        nodes = [cluster.add_node(**args) for _ in range(2)]
        cluster.wait_for_nodes()
        yield cluster, nodes
    finally:
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def stored(out) -> int:
    try:
        con = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
        try:
            return con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_losing_a_node_mid_campaign_loses_and_duplicates_nothing(three_nodes, tmp_path):
    cluster, nodes = three_nodes
    env = ray_test_env(RAY_TMPDIR=os.environ["RAY_TMPDIR"])
    local = campaign(tmp_path / "local", "--max-cases", N_CASES, env=env)
    assert local.returncode in (0, 1), local.stderr

    out = tmp_path / "ray"
    driver = subprocess.Popen(
        [sys.executable, "-m", "fuzzharness.cli", "run", "--seed", "11", "--workers", str(WORKERS),
         "--workloads", "row_sum,matmul", "--primitives", "split,reorder,fuse,vectorize,parallel,unroll",
         "--max-steps", "4", "--no-progress", "--out", str(out), "--max-cases", str(N_CASES),
         "--executor", "ray", "--ray-address", cluster.address],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while stored(out) < 3:
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < deadline, "no results from the cluster"
            time.sleep(0.2)
        cluster.remove_node(nodes[0])  # and the actor (and its worker) that lived there
        stdout, stderr = driver.communicate(timeout=900)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode in (0, 1), stderr
    assert f"{WORKERS} workers (ray at {cluster.address})" in stderr
    assert f"campaign seed 11: {N_CASES} cases" in stdout, stdout  # each case stored once
    restarts = int(stdout.split(" worker restarts")[0].rsplit(", ", 1)[1])
    assert restarts >= 1, stdout  # the lost actor was replaced

    here, there = results(tmp_path / "local"), results(out)
    assert [r[0] for r in there] == list(range(N_CASES))
    # same cases, same verdicts, same output bits as the local executor
    assert [r[1:5] for r in there] == [r[1:5] for r in here]
    con = sqlite3.connect(out / "results.sqlite")
    sessions = con.execute("SELECT cases FROM sessions").fetchall()
    con.close()
    assert sessions == [(N_CASES,)]
