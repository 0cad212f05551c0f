"""Findings that hold up alone: guard zones, heap hygiene and confirmation, with real TVM,
real worker processes and real campaigns (``tests/plugins/memory_bugs.py``: kernels that
write out of bounds, damage their worker for the next case, or compute noise).

Both sides each time: the buggy case gets the finding, the correct cases around it pass and
are in no bucket.
"""

import json
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from fuzzharness.core import hygiene
from fuzzharness.core.case import Case
from fuzzharness.engine.pool import WorkerPool
from fuzzharness.generators.cases import GenSettings, generate_case
from tests.conftest import ROOT, run_cli

PLUGIN = "tests.plugins.memory_bugs"


@pytest.fixture
def memory_env(monkeypatch):
    monkeypatch.setenv("FUZZHARNESS_PLUGINS", PLUGIN)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    import tests.plugins.memory_bugs  # noqa: F401  (registers the workloads here too)

    return dict(os.environ)


def rows(out):
    con = sqlite3.connect(out / "results.sqlite")
    got = {r[0]: r for r in con.execute(
        "SELECT idx, case_json, status, stage, bucket, confirmation, verdict_json FROM results")}
    confirmations = {r[0]: r for r in con.execute(
        "SELECT idx, outcome, campaign_verdict, alone_verdict, outputs, culprit, search "
        "FROM confirmations")}
    buckets = dict(con.execute("SELECT key, count FROM buckets").fetchall())
    con.close()
    return got, confirmations, buckets


def first_seed(workloads, n, ok):
    gen = GenSettings(workloads=workloads, max_steps=0)
    for seed in range(100):
        cases = [generate_case(seed, i, gen) for i in range(n)]
        if ok(cases):
            return seed, cases
    raise AssertionError("no seed has the sequence the test needs")


def campaign(out, env, seed, n, workloads, *extra):
    # llvm only: the guard zones and the cases first_seed drew are llvm's (the default
    # campaign mixes in OpenCL and Adreno cases where an OpenCL runtime is found)
    return run_cli("run", "--seed", seed, "--max-cases", n, "--workers", 1, "--max-steps", 0,
                   "--target", "llvm",
                   "--workloads", ",".join(workloads), "--timeout", 60, "--out", out,
                   "--no-progress", *extra, env=env)


@pytest.mark.slow
def test_an_out_of_bounds_write_is_caught_at_the_case_that_did_it(tmp_path, memory_env):
    workloads = ("test_oob_write", "row_sum")
    seed, cases = first_seed(workloads, 5, lambda cs: (
        {c.params.get("side") for c in cs} >= {"after", "before"}
        and any(a.workload_name == "test_oob_write" and b.workload_name == "row_sum"
                for a, b in zip(cs, cs[1:], strict=False))))
    r = campaign(tmp_path / "run", memory_env, seed, len(cases), workloads)
    assert r.returncode == 1, r.stderr  # a new bucket: the out-of-bounds write
    got, confirmations, _ = rows(tmp_path / "run")
    for idx, case in enumerate(cases):
        _, _, status, stage, bucket, confirmation, verdict_json = got[idx]
        v = json.loads(verdict_json)
        if case.workload_name == "row_sum":  # in the same worker, right after a bad write too
            assert (status, bucket, confirmation) == ("pass", None, None), v["message"]
            continue
        m = case.params["M"]
        assert (status, stage) == ("crash", "run"), v["message"]
        assert v["details"]["kind"] == "out_of_bounds"
        oob = v["details"]["oob_write"]
        expected = m if case.params["side"] == "after" else -1
        assert (oob["buffer"], oob["element"]) == ("B", expected), oob
        assert f"element {expected} " in v["message"]
        assert confirmation == "confirmed" and bucket is not None  # the same alone
        assert confirmations[idx][1] == "confirmed"


@pytest.mark.slow
def test_a_case_that_damages_its_worker_gets_the_finding_not_the_innocent_case_after_it(
        tmp_path, memory_env):
    workloads = ("test_damaging", "row_sum")

    def sequence(cs):
        names = [c.workload_name for c in cs]
        pairs = list(zip(names, names[1:], strict=False))
        return (("test_damaging", "row_sum") in pairs and ("test_damaging", "test_damaging") not in pairs
                and names[0] == "row_sum")

    seed, cases = first_seed(workloads, 4, sequence)
    r = campaign(tmp_path / "run", memory_env, seed, len(cases), workloads, "--minimize-budget", 60)
    assert r.returncode == 1, r.stderr
    got, confirmations, buckets = rows(tmp_path / "run")
    names = [c.workload_name for c in cases]
    victims = culprits = 0
    for idx, name in enumerate(names):
        _, case_json, status, stage, bucket, confirmation, verdict_json = got[idx]
        v = json.loads(verdict_json)
        after_damage = idx > 0 and names[idx - 1] == "test_damaging"
        followed = idx + 1 < len(names)
        if name == "row_sum" and after_damage:
            # it failed in the campaign's worker, passes alone: never a finding by itself
            assert (status, bucket, confirmation) == ("pass", None, "not reproduced alone"), v
            c = confirmations[idx]
            assert json.loads(c[2])["status"] != "pass"  # what the campaign's worker saw
            assert c[5] == idx - 1  # the culprit: the case before it
            victims += 1
        elif name == "row_sum":
            assert (status, bucket, confirmation) == ("pass", None, None), v
        elif followed:  # the damaging case, found by replaying its worker's cases
            assert (status, stage, v["details"]["kind"]) == ("crash", "run", "heap_damage"), v
            assert confirmation == "damages the worker" and bucket is not None
            assert v["details"]["victim"] == idx + 1
            assert v["details"]["replay"]["pair_reproduces"] is True
            culprits += 1
        else:  # damaging, but nothing ran after it: nothing to see
            assert (status, bucket) == ("pass", None), v
    assert victims and culprits
    # every bucket holds damaging cases only
    members = [got[i][4] for i in got if got[i][4] is not None]
    assert sum(buckets.values()) == len(members)
    assert all(names[i] == "test_damaging" for i in got if got[i][4] is not None)
    assert "not reproduced alone" in r.stdout and "damages the worker" in r.stdout
    # the search ran before the minimization, so each such bucket was offered to it and its outcome says why there is no script — not "skipped (budget)"
    con = sqlite3.connect(tmp_path / "run" / "results.sqlite")
    attempts = dict(con.execute("SELECT bucket, notes FROM repros").fetchall())
    con.close()
    assert set(attempts) == set(buckets), (attempts, buckets)
    assert all("damages its worker process" in n for n in attempts.values()), attempts


@pytest.mark.slow
def test_a_confirmed_nondeterministic_failure_keeps_both_outputs(tmp_path, memory_env):
    out = tmp_path / "run"
    r = campaign(out, memory_env, 1, 1, ("test_noisy",))
    assert r.returncode == 1, r.stderr
    got, confirmations, buckets = rows(out)
    _, _, status, _, bucket, confirmation, verdict_json = got[0]
    assert status == "wrong_result" and bucket is not None
    assert confirmation == "confirmed, nondeterministic output"
    files = json.loads(confirmations[0][4])
    assert files == ["outputs/0-campaign.npz", "outputs/0-alone.npz"]
    campaign_out, alone_out = (np.load(out / f) for f in files)
    assert campaign_out.files == alone_out.files == ["B"]
    assert not np.array_equal(campaign_out["B"], alone_out["B"])  # other bits alone
    digests = {json.loads(confirmations[0][2])["digest"], json.loads(confirmations[0][3])["digest"]}
    assert len(digests) == 2
    # replay says why its bits differ from the stored ones, instead of a bare "NO"
    r = run_cli("replay", "--db", out, "0", env=memory_env)
    assert "nondeterministic output" in r.stdout and "reproduced: NO" not in r.stdout, r.stdout
    assert "outputs/0-campaign.npz" in r.stdout


def test_a_kernel_reading_memory_it_never_wrote_reads_the_same_garbage_after_other_cases(
        memory_env):
    """TVM's workspace pool hands a kernel's temporary the pages an earlier kernel used; with
    hygiene the kernel runs in a fresh thread (fresh pools) on perturbed memory, so what it
    reads — and its verdict — does not depend on the cases before it."""
    def case(name):
        return Case(workload={"name": name, "params": {"M": 16, "N": 64, "dtype": "float32"}},
                    inputs={"distribution": "uniform", "seed": 1}, target={"kind": "llvm"}).to_dict()

    tasks = [{"task": 0, "case": case("test_via_temp")}, {"task": 1, "case": case("test_reads_unwritten")},
             {"task": 2, "case": case("test_reads_unwritten"), "fresh": True}]
    with WorkerPool(1, timeout=60) as pool:
        got = {r.task["task"]: r.verdict for r in pool.run(tasks)}
    assert got[0].status.value == "pass", got[0].line()  # the correct kernel
    after, alone = got[1], got[2]
    assert after.is_finding and after.status == alone.status, (after.line(), alone.line())
    assert after.digest == alone.digest  # the same garbage: glibc's perturbation, 0xFE bytes


def test_workers_run_with_glibcs_allocator_checks():
    env = hygiene.hygiene_env({"GLIBC_TUNABLES": "glibc.malloc.mxfast=0", "LD_PRELOAD": "x.so"})
    if hygiene.glibc_version() is None or hygiene.debug_library() is None:
        pytest.skip("not glibc ≥ 2.34 with libc_malloc_debug")
    assert env["GLIBC_TUNABLES"] == ("glibc.malloc.mxfast=0:glibc.malloc.perturb=1:glibc.malloc.check=3"
                                     ":glibc.malloc.mmap_threshold=33554432"
                                     ":glibc.malloc.trim_threshold=67108864")
    assert env["LD_PRELOAD"].split() == [hygiene.debug_library(), "x.so"]
    assert hygiene.active(env) == {"malloc_check": 3, "malloc_perturb": 1, "guard_zones": True}
    assert hygiene.active(hygiene.hygiene_env({}, enabled=False))["malloc_check"] == 0
    case = Case(workload={"name": "row_sum", "params": {"M": 2, "N": 3, "dtype": "float32"}},
                inputs={"distribution": "uniform", "seed": 1}, target={"kind": "llvm"})
    with WorkerPool(1, timeout=60) as pool:
        (r,) = list(pool.run([{"task": 0, "case": case.to_dict()}]))  # a worker up and running
        (pid,) = pool.pids().values()
        assert r.verdict.status.value == "pass" and r.process == str(pid)
        with open(f"/proc/{pid}/environ", "rb") as f:
            worker_env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        with open(f"/proc/{pid}/maps") as f:
            mapped = f.read()
    # (glibc consumes glibc.malloc.check from the variable at start-up: its effect is checked
    # by the next test, which needs it)
    assert b"glibc.malloc.perturb=1" in worker_env[b"GLIBC_TUNABLES"]
    assert hygiene.DEBUG_LIBRARY in mapped


_MAPPED_PROBE = """
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
p = libc.malloc(1 << 20)
print(ctypes.c_size_t.from_address(p - 8).value & 2)  # the chunk's IS_MMAPPED bit
"""


def test_the_checking_allocator_keeps_large_blocks_on_the_heap():
    """glibc's checking ``free`` never raises the mmap threshold, so without our fixed
    thresholds every block over 128 KiB is mapped and unmapped per use (page faults); with
    them a 1 MiB block comes from the heap — under the checks, as plain glibc would do."""
    if hygiene.glibc_version() is None or hygiene.debug_library() is None:
        pytest.skip("not glibc ≥ 2.34 with libc_malloc_debug")

    def mapped(env):
        out = subprocess.run([sys.executable, "-c", _MAPPED_PROBE], env=env, check=True,
                             capture_output=True, text=True).stdout
        return out.strip() == "2"

    env = hygiene.hygiene_env(dict(os.environ))
    assert not mapped(env)
    for name in hygiene.THRESHOLDS:  # the checks alone: the 128 KiB default
        env["GLIBC_TUNABLES"] = env["GLIBC_TUNABLES"].replace(
            f":{name}={hygiene.THRESHOLDS[name]}", "")
    assert hygiene.active(env)["malloc_check"] == 3 and mapped(env)


def test_a_repro_scripts_child_gets_the_workers_allocator_settings():
    """The standalone script's copy of the policy (``hygiene.SCRIPT_SOURCE``) sets the same
    tunables as a worker's: another heap layout or threshold could change its verdict."""
    if hygiene.glibc_version() is None or hygiene.debug_library() is None:
        pytest.skip("not glibc ≥ 2.34 with libc_malloc_debug")
    space = {"os": os}
    exec(hygiene.SCRIPT_SOURCE, space)
    script_env = space["_hygiene_env"]()
    worker_env = hygiene.hygiene_env(dict(os.environ))

    def tunables(env):
        return set(env["GLIBC_TUNABLES"].split(":"))

    assert tunables(script_env) == tunables(worker_env)
    assert hygiene.DEBUG_LIBRARY in script_env["LD_PRELOAD"]


def test_heap_damage_out_of_the_guard_zones_stops_the_case_that_did_it(memory_env, monkeypatch,
                                                                       tmp_path):
    """Without guard zones, a kernel writing past a TVM tensor damages the heap; with glibc's
    checks the worker dies at the free of that tensor, in the same case, with glibc's message
    — classified as heap damage, and the next case in a fresh worker passes."""
    if hygiene.debug_library() is None:
        pytest.skip("glibc's checking allocator is not installed")
    monkeypatch.setenv(hygiene.GUARD_ZONES_ENV, "0")

    def case(name, **params):
        return Case(workload={"name": name, "params": {"M": 16, "N": 8, "dtype": "float32", **params}},
                    inputs={"distribution": "uniform", "seed": 1}, target={"kind": "llvm"}).to_dict()

    tasks = [{"task": 0, "case": case("test_oob_write", side="after")},
             {"task": 1, "case": case("row_sum")}]
    with WorkerPool(1, timeout=60, log_dir=tmp_path) as pool:  # the log holds glibc's message
        got = {r.task["task"]: r.verdict for r in pool.run(tasks)}
    v = got[0]
    assert (v.status.value, v.stage.value, v.details["kind"]) == ("crash", "run", "heap_damage"), v.line()
    assert v.details["malloc_error"] == "free(): invalid pointer"
    assert got[1].status.value == "pass"


def test_a_kernel_that_overflows_its_own_workspace_is_heap_damage_at_that_case(memory_env, tmp_path):
    """One float past the end of a kernel's temporary (TVM's workspace, no guard zone there):
    in a default worker — glibc's checks and guard zones — the case that did it is a crash of
    kind heap_damage; the same program without the overflow passes.  (Which defence catches
    which damage: ``benchmarks/heap_checks.py``; glibc alone misses this one.)"""
    if hygiene.debug_library() is None:
        pytest.skip("glibc's checking allocator is not installed")

    def case(name, **params):
        return Case(workload={"name": name, "params": {"M": 16, "N": 64, "dtype": "float32", **params}},
                    inputs={"distribution": "uniform", "seed": 1}, target={"kind": "llvm"}).to_dict()

    tasks = [{"task": 0, "case": case("test_workspace_overflow", elements=1)},
             {"task": 1, "case": case("test_via_temp")}]
    with WorkerPool(1, timeout=60, log_dir=tmp_path) as pool:
        got = {r.task["task"]: r.verdict for r in pool.run(tasks)}
    assert (got[0].status.value, got[0].details.get("kind")) == ("crash", "heap_damage"), got[0].line()
    assert got[1].status.value == "pass", got[1].line()


def test_a_schema_3_database_is_read_and_extended_additively(tmp_path):
    """Results stored before confirmation existed read as unconfirmed; new ones get it."""
    from fuzzharness.campaign.db import ResultsDB
    from fuzzharness.core.verdict import Stage, Status, Verdict

    db = ResultsDB(tmp_path, create=True)
    db.create_campaign(1, {}, {})
    db.add_result(0, {"id": "a"}, Verdict(Status.PASS, Stage.DONE), elapsed=0.1, worker=0)
    db.close()
    con = sqlite3.connect(tmp_path / "results.sqlite")  # as schema 3 wrote it
    con.execute("DROP TABLE confirmations")
    con.execute("ALTER TABLE results DROP COLUMN confirmation")
    con.execute("ALTER TABLE results DROP COLUMN process")
    con.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    con.commit()
    con.close()
    db = ResultsDB(tmp_path)
    assert db.find_case("0")["verdict"]["status"] == "pass" and db.confirmations() == []
    v = Verdict(Status.WRONG_RESULT, Stage.VERIFY, digest="d")
    assert db.add_result(1, {"id": "b"}, v, elapsed=0.1, worker=0, process="7",
                         confirmation="pending")
    assert [r["idx"] for r in db.with_confirmation("pending")] == [1]
    assert [r["idx"] for r in db.predecessors(1, 10)] == []  # #0 ran in no known process
    db.confirm(1, verdict=v, signature=None, outcome="confirmed", campaign_verdict=v,
               alone_verdict=v)
    assert db.confirmation(1)["outcome"] == "confirmed"
    db.close()
    con = sqlite3.connect(tmp_path / "results.sqlite")
    assert con.execute("SELECT idx, confirmation FROM results ORDER BY idx").fetchall() == \
        [(0, None), (1, "confirmed")]
    con.close()
