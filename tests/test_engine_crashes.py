"""Crash-proof execution with real processes: segfaults, aborts, hangs, memory blow-ups and
harness bugs each get the right verdict, and the campaign runs to completion.

The misbehaving cases come from ``tests/plugins/chaos.py`` (a workload + backend loaded into
the workers through FUZZHARNESS_PLUGINS); nothing here is mocked.
"""

import json
import os
import sqlite3

import pytest

import tests.plugins.chaos as chaos
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status
from fuzzharness.engine.executor import ExecutorConfig, make_executor
from fuzzharness.engine.pool import WorkerPool, WorkerStartError
from fuzzharness.generators.cases import GenSettings, generate_case
from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow  # campaigns, subprocesses, clusters

N_CASES = 10
TIMEOUT = 5
MEMORY_MB = 1024
MISBEHAVIOURS = {"segfault", "abort", "hang", "oom", "harness_bug"}
CHAOS_GEN = GenSettings(workloads=("test_chaos",), max_steps=0, target={"kind": "test_chaos"})


def chaos_env():
    env = dict(os.environ)
    env["FUZZHARNESS_PLUGINS"] = "tests.plugins.chaos"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return env


def chaos_seed() -> tuple[int, list[dict]]:
    """The first seed whose first N_CASES cases include every misbehaviour (deterministic)."""
    for seed in range(200):
        params = [generate_case(seed, i, CHAOS_GEN).params for i in range(N_CASES)]
        if MISBEHAVIOURS <= {p["behaviour"] for p in params}:
            return seed, params
    raise AssertionError("no seed covers every misbehaviour")


@pytest.fixture(scope="module")
def chaos_campaign(tmp_path_factory):
    seed, params = chaos_seed()
    out = tmp_path_factory.mktemp("chaos") / "run"
    r = run_cli("run", "--seed", seed, "--max-cases", N_CASES, "--workers", 2,
                "--workloads", "test_chaos", "--target", "test_chaos", "--max-steps", 0,
                "--timeout", TIMEOUT, "--memory-mb", MEMORY_MB, "--out", out, "--no-progress",
                env=chaos_env())
    return seed, params, out, r


def stored(out):
    con = sqlite3.connect(out / "results.sqlite")
    rows = con.execute("SELECT idx, status, stage, case_json, verdict_json, bucket "
                       "FROM results ORDER BY idx").fetchall()
    buckets = con.execute("SELECT key, count, example_idx FROM buckets").fetchall()
    con.close()
    return rows, buckets


def test_campaign_survives_every_misbehaviour(chaos_campaign):
    seed, params, out, r = chaos_campaign
    assert r.returncode == 1, r.stderr  # new failures (crashes, a hang) found
    assert f"campaign seed {seed}: {N_CASES} cases" in r.stdout, r.stdout
    rows, _ = stored(out)
    assert [row[0] for row in rows] == list(range(N_CASES))


@pytest.mark.parametrize("behaviour", ["segfault", "abort", "hang", "oom", "oom_numpy",
                                       "harness_bug", "none"])
def test_each_misbehaviour_is_classified(chaos_campaign, behaviour):
    seed, params, out, _ = chaos_campaign
    rows, _ = stored(out)
    checked = 0
    for (idx, status, stage, case_json, verdict_json, bucket), p in zip(rows, params, strict=True):
        if p["behaviour"] != behaviour:
            continue
        v = json.loads(verdict_json)
        where = f"case #{idx} {p}: {v['message']}"
        # The case was reported before it ran, so even a case that killed its worker is stored.
        assert Case.from_json(case_json) == generate_case(seed, idx, CHAOS_GEN), where
        if behaviour == "none":
            assert status == "pass" and bucket is None, where
            checked += 1
            continue
        assert stage == p["at"], where  # blamed on the stage that was running
        if behaviour in ("segfault", "abort"):
            assert status == "crash", where
            assert v["details"]["signal"] == {"segfault": "SIGSEGV", "abort": "SIGABRT"}[behaviour]
            assert v["details"]["kind"] == "signal"
            # a stack in the log: faulthandler's, or TVM's own segfault handler's
            tail = v["details"]["log_tail"]
            assert "Fatal Python error" in tail or "Segfault encountered" in tail, where
        elif behaviour == "hang":
            assert status == "timeout", where
            assert v["details"]["timeout_s"] == TIMEOUT
        elif behaviour in ("oom", "oom_numpy"):
            assert status == "crash", where
            assert v["details"]["kind"] == "out_of_memory", where
        elif behaviour == "harness_bug":
            assert status == "harness_error", where
            assert not Status(status).is_finding
        assert bucket is not None, where
        checked += 1
    if behaviour in MISBEHAVIOURS:
        assert checked, f"seed chosen to include {behaviour}"


def test_buckets_count_every_failure_once(chaos_campaign):
    _, params, out, r = chaos_campaign
    rows, buckets = stored(out)
    per_bucket = {}
    for idx, _status, _stage, _c, _v, bucket in rows:
        if bucket is not None:
            per_bucket.setdefault(bucket, []).append(idx)
    assert {k: n for k, n, _ in buckets} == {k: len(v) for k, v in per_bucket.items()}
    assert {k: e for k, _, e in buckets} == {k: min(v) for k, v in per_bucket.items()}
    # segfaults in the same stage of the same workload are one bucket
    seg = [(p["at"], row[5]) for p, row in zip(params, rows, strict=True)
           if p["behaviour"] == "segfault"]
    for at, key in seg:
        assert all(k == key for a, k in seg if a == at)
    # harness errors are listed apart from TVM's failures
    assert "harness errors (bugs in fuzzharness, not in TVM)" in r.stdout
    tvm_part = r.stdout.split("harness errors")[0]
    assert "harness_error@" not in tvm_part


def test_known_bugs_file_makes_them_known(chaos_campaign, tmp_path):
    """Resuming a finished campaign re-reports it; with every TVM finding known it is no
    longer 1 — but 3, not 0: its harness_bug cases are harness errors (exit codes:
    fuzzharness.core.errors)."""
    _, _, out, _ = chaos_campaign
    known = tmp_path / "known.toml"
    known.write_text("\n".join(
        f'[[bug]]\nid = "chaos-{symptom}"\ntitle = "deliberate {symptom}"\nlink = ""\n'
        f'[bug.match]\nsymptom = "{symptom}"\nworkloads = ["test_chaos"]\n'
        for symptom in ("crash", "timeout")))
    r = run_cli("run", "--resume", out, "--known-bugs", known, "--no-progress", env=chaos_env())
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "0 new buckets, 2 known bugs" in r.stdout and "NEW" not in r.stdout
    assert "harness errors (bugs in fuzzharness, not in TVM)" in r.stdout
    assert "× chaos-crash (not yet reported): deliberate crash" in r.stdout
    # without it the same findings are new again
    r = run_cli("run", "--resume", out, "--no-progress", env=chaos_env())
    assert r.returncode == 1


def chaos_case(behaviour, at="run"):
    return Case(workload={"name": "test_chaos", "params": {
                    "M": 4, "N": 8, "dtype": "float32", "behaviour": behaviour, "at": at}},
                inputs={"distribution": "uniform", "seed": 1}, target={"kind": "test_chaos"})


def test_worker_near_its_memory_limit_is_recycled_not_counted_as_a_crash(monkeypatch):
    """A case that leaves the worker's data memory high gets a fresh worker afterwards."""
    monkeypatch.setenv("FUZZHARNESS_PLUGINS", "tests.plugins.chaos")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    tasks = [{"task": 0, "case": chaos_case("leak").to_dict()},
             {"task": 1, "case": chaos_case("none").to_dict()},
             {"task": 2, "case": chaos_case("none").to_dict()}]
    with WorkerPool(1, timeout=60, memory_mb=1024) as pool:
        results = {r.task["task"]: r for r in pool.run(tasks)}
        assert [results[i].verdict.status for i in range(3)] == [Status.PASS] * 3
        assert pool.recycled == 1 and pool.restarts == 0


def test_workers_that_cannot_start_stop_the_run():
    """A memory cap too small to import TVM: a clear error instead of endless respawning."""
    with WorkerPool(1, timeout=60, memory_mb=64) as pool, \
            pytest.raises(WorkerStartError, match="exit before they are ready"):
        list(pool.run([{"task": 0, "case": chaos_case("none").to_dict()}]))


def test_local_executor_is_chosen_by_name():
    ex = make_executor("local", ExecutorConfig(workers=1, timeout=10))
    assert isinstance(ex, WorkerPool)
    ex.close()


def test_unknown_executor_is_a_usage_error(tmp_path):
    r = run_cli("run", "--executor", "nope", "--max-cases", "1", "--out", tmp_path / "o")
    assert r.returncode == 2 and "unknown executor 'nope'" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()


assert set(chaos.BEHAVIOURS) >= MISBEHAVIOURS


def test_a_caller_that_holds_the_results_does_not_make_workers_look_dead(monkeypatch):
    """The differential plugin holds the pool's generator while a failing test writes its
    repro and runs it under a baseline TVM; results and "ready" messages that arrive
    meanwhile are read, not mistaken for a hang or a worker that never started."""
    import time

    import fuzzharness.engine.pool as pool_module

    monkeypatch.setenv("FUZZHARNESS_PLUGINS", "tests.plugins.chaos")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(pool_module, "READY_TIMEOUT", 12.0)
    tasks = [{"task": i, "case": chaos_case("none").to_dict()} for i in range(3)]
    with WorkerPool(2, timeout=12) as pool:
        results = []
        for r in pool.run(tasks):
            results.append(r)
            if len(results) < len(tasks):
                time.sleep(14)  # longer than both timeouts: the other worker's result waits
        assert [r.verdict.status for r in results] == [Status.PASS] * 3
        assert pool.restarts == 0


#: a real TVM segfault inside a schedule primitive: reindex of a block with no enclosing loop
#: (what a README campaign's graph drew: crash/SIGSEGV@generate)
LOOPLESS_REINDEX = '''
from tvm import s_tir
from tvm.script import tirx as T


@T.prim_func(s_tir=True)
def main(A: T.Buffer((1, 1), "float32"), B: T.Buffer((1,), "float32")):
    with T.sblock("mean"):
        v0 = T.axis.spatial(1, 0)
        vk = T.axis.reduce(1, 0)
        T.reads(A[v0, vk])
        T.writes(B[v0])
        with T.init():
            B[v0] = T.float32(0)
        B[v0] = B[v0] + A[v0, vk]


sch = s_tir.Schedule(main)
sch.reindex(sch.get_sblock("mean"), ("read", 0))
'''


def test_a_compiler_crash_is_bucketed_where_it_crashed(tmp_path):
    """A worker killed by a signal while TVM compiles (a schedule drawn or replayed, lowering,
    codegen) gets the site of the innermost TVM frame of the backtrace TVM prints, as a
    compile error gets its throw site: two primitives that segfault are two buckets, not
    one "crash in stage schedule".  A crash while a kernel runs gets none (the crashing code
    is the kernel).  The pool keeps its workers' logs even without a log directory."""
    import signal
    import subprocess
    import sys

    from fuzzharness.buckets.known_identities import witness_case
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.engine.worker_deaths import death_verdict

    script = tmp_path / "crash.py"
    script.write_text(LOOPLESS_REINDEX)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == -signal.SIGSEGV, r.stderr[-2000:]
    assert death_verdict(r.returncode, "generate", r.stderr).details["site"] == ":tvm::s_tir::ReIndex"
    assert "site" not in death_verdict(r.returncode, "run", r.stderr).details
    names = ("loop-partition-multiple-blocks-segfault", "reindex-cache-read-of-written-buffer-segfault")
    docs = [witness_case(json.loads((ROOT / "fuzzharness/known_witnesses" / f"{n}.json").read_text()))
            for n in names]
    with WorkerPool(2, timeout=120) as pool:
        verdicts = {names[r.task["task"]]: r.verdict
                    for r in pool.run([{"task": i, "case": d} for i, d in enumerate(docs)])}
    sites = {n: (v.status.value, v.stage.value, v.details.get("site")) for n, v in verdicts.items()}
    assert sites == {names[0]: ("crash", "schedule", ":tvm::s_tir::LoopPartition"),
                     names[1]: ("crash", "schedule", ":tvm::s_tir::ReindexCacheRead")}, sites
    keys = {signature(d, verdicts[n]).key for n, d in zip(names, docs, strict=True)}
    assert len(keys) == 2
