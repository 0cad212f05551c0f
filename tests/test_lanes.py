"""Minimization lanes with real processes: a lane that dies costs its one bucket, the next
bucket goes to a fresh lane, and the verified repros land in the owner's database."""

from __future__ import annotations

import json
import os
import signal

import pytest

from fuzzharness.campaign.db import ResultsDB
from fuzzharness.campaign.minimizing.after import lane_tasks
from fuzzharness.campaign.minimizing.lanes import Lanes
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
    assert set(stored) == set(keys)
    assert all(stored[o.key]["reproduced"] and stored[o.key]["root_cause"] for o in others)
    # the lost one is recorded as an attempt that failed, not left as "not minimized"
    lost = stored[killed[0]]
    assert not lost["reproduced"] and not lost["root_cause"] and "failed" in lost["notes"][0]
    db.close()
    st = json.loads(run_cli("status", out, "--json").stdout)
    assert st["repros"]["not reproduced"] == 1 and st["repros"]["not minimized"] == 0, st["repros"]
    text = run_cli("status", out).stdout
    assert "not reproduced: failed: the minimizing process died (SIGKILL)" in text, text


def test_buckets_of_a_root_cause_already_found_are_attached_not_minimized(tmp_path):
    """Cluster before minimizing: of two buckets with one mechanism fact, one is minimized and
    the other waits for its outcome (the lanes go to the next distinct bug meanwhile); once
    that root cause is verified, the waiting bucket and any later one with the mechanism are
    attached to it, unminimized.  Buckets without a mechanism fact — a plain one, or two with
    a shape several bugs leave (reduction_init_repeated) — are all minimized."""
    from fuzzharness.buckets.root_causes import RootCause, mechanism_key
    from fuzzharness.buckets.signatures import Signature
    from fuzzharness.core.verdict import Stage, Status, Verdict

    db = ResultsDB(tmp_path, create=True)
    db.create_campaign(1, {}, {})
    alloc = ("alloc_in_vectorized_loop",)
    sigs = {
        "alloc-a": Signature("wrong_result", "verify", workload="dense", primitives=("compute_at", "vectorize"),
                             facts=alloc),
        "alloc-b": Signature("nan_inf", "verify", workload="pad", primitives=("read_at", "split", "vectorize"),
                             facts=alloc),
        "alloc-c": Signature("wrong_result", "verify", workload="reduce", primitives=("vectorize",), facts=alloc),
        "alloc-init": Signature("wrong_result", "verify", workload="dense", primitives=("loop_partition", "vectorize"),
                                facts=(*alloc, "reduction_init_repeated")),  # maybe a second bug
        "plain": Signature("wrong_result", "verify", workload="dense", primitives=("vectorize",)),
        "init-a": Signature("wrong_result", "verify", workload="row_sum", primitives=("loop_partition",),
                            facts=("reduction_init_repeated",)),
        "init-b": Signature("wrong_result", "verify", workload="matmul", primitives=("loop_partition", "split"),
                            facts=("reduction_init_repeated",)),
    }
    for i, sig in enumerate(sigs.values()):
        v = Verdict(Status(sig.symptom), Stage.VERIFY, message="x")
        db.add_result(i, None, v, elapsed=0.1, worker=0, signature=sig)
    key = {name: sig.key for name, sig in sigs.items()}
    lanes = Lanes(tmp_path, db, lanes=2, batch=1, per_bucket=60, triage=False)
    rows = {b["key"]: b for b in db.buckets()}
    order = [key[n] for n in ("alloc-a", "plain", "alloc-b", "init-a", "init-b")]
    lanes.pending = set(order)
    assert lanes._cluster(order, rows) == [key[n] for n in ("alloc-a", "plain", "init-a", "init-b")]
    assert db.attachments() == {} and lanes.results == []
    # alloc-a minimized and verified: its root cause is the mechanism's
    found = RootCause("wrong_output", "verify", ("compute_at", "vectorize"), facts=alloc)
    assert found.evidence == "ir_shape" and found.key == mechanism_key(sigs["alloc-a"])
    db.add_repro({"bucket": key["alloc-a"], "reproduced": True, "runs": 1, "length": 3, "path": "/r",
                  "title": "t", "root_cause": found.key, "root_cause_fields": found.to_dict()})
    lanes.pending = {key["alloc-b"], key["alloc-c"], key["plain"], key["alloc-init"]}
    assert lanes._cluster([key["alloc-b"], key["alloc-c"], key["plain"], key["alloc-init"]], rows) == \
        [key["plain"], key["alloc-init"]]
    attached = db.attachments()
    assert set(attached) == {key["alloc-b"], key["alloc-c"]}
    assert {(a["root_cause"], a["via"]) for a in attached.values()} == {(found.key, key["alloc-a"])}
    assert {r.key: r.status for r in lanes.results} == {key["alloc-b"]: "attached", key["alloc-c"]: "attached"}
    assert lanes.pending == {key["plain"], key["alloc-init"]}
    (row,) = db.root_causes()
    assert row["buckets"] == [key["alloc-a"]]
    assert row["attached"] == {key["alloc-b"]: "ir_shape", key["alloc-c"]: "ir_shape"}
    db.close()


def test_a_bucket_left_waiting_at_the_end_is_recorded(tmp_path):
    """At the end of the time, a bucket that waited for a minimization that never verified is
    listed with the skipped ones, not lost."""
    from fuzzharness.buckets.signatures import Signature
    from fuzzharness.core.verdict import Stage, Status, Verdict

    db = ResultsDB(tmp_path, create=True)
    db.create_campaign(1, {}, {})
    sig = Signature("wrong_result", "verify", workload="dense", primitives=("vectorize",),
                    facts=("alloc_in_vectorized_loop",))
    db.add_result(0, None, Verdict(Status.WRONG_RESULT, Stage.VERIFY, message="x"), elapsed=0.1,
                  worker=0, signature=sig)
    lanes = Lanes(tmp_path, db, lanes=1, batch=1, per_bucket=60, triage=False)
    lanes.pending = {sig.key}
    lanes.skip_rest()
    assert [(r.key, r.status) for r in lanes.results] == [(sig.key, "skipped (budget)")]
    db.close()
