"""Minimization lanes with real processes: a lane that dies costs its one bucket, the next
bucket goes to a fresh lane, and the verified repros land in the owner's database."""

from __future__ import annotations

import os
import signal

import pytest

from fuzzharness.campaign.db import ResultsDB
from fuzzharness.campaign.lanes import Lanes
from fuzzharness.campaign.minimize_buckets import lane_tasks
from fuzzharness.engine.pool import WorkerPool
from tests.conftest import run_cli


@pytest.mark.slow
def test_a_dead_lane_costs_one_bucket_and_the_others_go_on(tmp_path, plugin_env):
    out = tmp_path / "c"
    r = run_cli("run", "--seed", "2", "--max-cases", "3", "--workers", "1", "--workloads",
                "test_matmul_off_by_one", "--primitives", "split,reorder", "--no-progress",
                "--target", "llvm", "--out", out, "--no-minimize", env=plugin_env)
    assert r.returncode == 1, r.stderr
    db = ResultsDB(out)
    keys = [b["key"] for b in db.buckets()]
    assert len(keys) == 3
    lanes = Lanes(out, db, lanes=1, batch=1, per_bucket=60, triage=False)
    for k in keys:
        lanes.offer(k)
    pool = WorkerPool(1, timeout=30)
    killed = []
    try:
        for res in pool.run(lane_tasks(lanes, 1), wakeup_fd=lanes.wakeup_fd, abandon_at=0.0):
            lanes.deliver(res)
            if not killed:  # the first lane is minimizing its first bucket: kill it
                (lane,) = lanes._lanes.values()
                os.kill(lane.proc.pid, signal.SIGKILL)
                killed.append(lane.job["key"])
    finally:
        pool.close()
        lanes.pump()
        lanes.skip_rest()
        lanes.close()
    by_key = {r.key: r for r in lanes.results}
    assert set(by_key) == set(keys)
    assert by_key[killed[0]].status == "failed" and "SIGKILL" in by_key[killed[0]].note
    others = [by_key[k] for k in keys if k != killed[0]]
    assert all(o.status == "reproduced" for o in others), [(o.status, o.note) for o in others]
    stored = {r["bucket"]: r for r in db.repros()}
    assert set(stored) == {o.key for o in others} and all(r["root_cause"] for r in stored.values())
    db.close()
