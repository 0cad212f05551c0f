"""Remote devices through TVM's RPC, for real: RPC servers (and a tracker) on 127.0.0.1 running
the llvm target; campaigns run by the CLI with ``--rpc-server`` / ``--rpc-tracker``.

* the same cases get the same verdicts and the same output bits remotely as locally;
* generated code that aborts kills the remote session process (not the worker): a ``crash``
  of kind ``remote_died``, and the campaign goes on;
* a session that drops once (its process SIGKILLed in mid-run) is run again and judged;
* TVM's stock server stops serving after one crashed session: the harness reports the device
  unreachable (``inconclusive``, never a finding) instead of hanging.

The misbehaving kernels come from tests/plugins/remote_chaos.py; nothing is mocked.
"""

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

import tests.plugins.remote_chaos as remote_chaos
from fuzzharness.backends import rpc
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status
from fuzzharness.generators.cases import GenSettings, generate_case
from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow  # campaigns, subprocesses, clusters

N_CASES = 8
WORKLOADS = ("row_sum", "matmul", "test_kernel_chaos")
PRIMITIVES = "split,reorder,fuse,vectorize,parallel,unroll"  # no MetaSchedule: ~10 s set-up
PLUGIN = "tests.plugins.remote_chaos"


def env_with(**extra):
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """A server process in its own process group, its output in a file."""

    def __init__(self, cmd, log_path, env, ready: str):
        self.log_path = log_path
        self.log = open(log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True, cwd=ROOT)
        deadline = time.monotonic() + 60
        while ready not in self.text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{cmd} did not start: {self.text()[-2000:]}")
            time.sleep(0.1)

    def text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()


def rpc_server(tmp, *args, stock=False, env=None):
    port = free_port()
    module = "tvm.exec.rpc_server" if stock else "fuzzharness.backends.rpc_server"
    ready = "bind to" if stock else "listening on"
    p = Proc([sys.executable, "-m", module, "--host", "127.0.0.1", "--port", str(port),
              "--port-end", str(port + 1), *args], tmp / f"server-{port}.log",
             env or env_with(FUZZHARNESS_PLUGINS=PLUGIN), ready)
    p.address = f"127.0.0.1:{port}"
    return p


def chaos_seed() -> tuple[int, list[Case]]:
    """The first seed whose first N_CASES cases include a kernel that aborts, one that drops
    its session, and ordinary cases (deterministic)."""
    gen = GenSettings(workloads=WORKLOADS, primitives=tuple(PRIMITIVES.split(",")), max_steps=4)
    for seed in range(300):
        cases = [generate_case(seed, i, gen) for i in range(N_CASES)]
        kinds = [c.params.get("behaviour", "none") for c in cases]
        if "abort" in kinds and "drop_once" in kinds and kinds.count("none") >= 4:
            return seed, cases
    raise AssertionError("no seed covers every misbehaviour")


def campaign(out, seed, *extra, env=None):
    return run_cli("run", "--seed", seed, "--max-cases", N_CASES, "--workers", 2,
                   "--workloads", ",".join(WORKLOADS), "--primitives", PRIMITIVES,
                   "--max-steps", 4, "--no-progress", "--target", "llvm", "--out", out, *extra,
                   env=env or env_with(FUZZHARNESS_PLUGINS=PLUGIN))


def results(out):
    con = sqlite3.connect(out / "results.sqlite")
    rows = con.execute("SELECT idx, case_id, status, stage, digest, verdict_json "
                       "FROM results ORDER BY idx").fetchall()
    con.close()
    return rows


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    seed, cases = chaos_seed()
    out = tmp_path_factory.mktemp("rpc") / "local"
    r = campaign(out, seed)
    assert r.returncode == 1, r.stderr  # the aborting kernel is a new crash
    return seed, cases, results(out)


def behaviour(case: Case) -> str:
    return case.params.get("behaviour", "none")


def test_remote_verdicts_equal_local_ones_and_remote_crashes_are_survived(local_run, tmp_path):
    seed, cases, here = local_run
    drop_dir = tmp_path / "drop"
    drop_dir.mkdir()
    server = rpc_server(tmp_path, env=env_with(FUZZHARNESS_PLUGINS=PLUGIN,
                                               **{remote_chaos.DROP_DIR_ENV: str(drop_dir)}))
    try:
        r = campaign(tmp_path / "remote", seed, "--rpc-server", server.address)
    finally:
        server.stop()
    assert r.returncode == 1, r.stderr
    assert f"target llvm on RPC server {server.address}" in r.stderr
    assert f"campaign seed {seed}: {N_CASES} cases" in r.stdout, r.stdout  # it went on
    there = results(tmp_path / "remote")
    assert [row[1] for row in there] == [c.id for c in cases] == [row[1] for row in here]
    for case, a, b in zip(cases, here, there, strict=True):
        va, vb = json.loads(a[5]), json.loads(b[5])
        where = f"case #{a[0]} {case.workload}: local {va['message'][:200]} / remote {vb['message'][:200]}"
        if behaviour(case) == "abort":
            assert (a[2], a[3], va["details"]["signal"]) == ("crash", "run", "SIGABRT"), where
            assert (b[2], b[3], vb["details"]["kind"]) == ("crash", "run", "remote_died"), where
        else:  # the same verdict and the same output bits
            assert a[2:5] == b[2:5], where
    # the drop really happened (one session process SIGKILLed) and was survived
    assert (drop_dir / "dropped").exists()
    log = server.text()
    assert "ended with exit code -9; still serving" in log, log[-3000:]
    assert "ended with exit code -6; still serving" in log  # the aborts, on the server side


def test_cases_reach_a_device_through_the_tracker(local_run, tmp_path):
    """The way TVM reaches phones: a tracker, a server registered under a device key."""
    seed, cases, here = local_run
    port = free_port()
    tracker = Proc([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1",
                    "--port", str(port), "--port-end", str(port + 1)],
                   tmp_path / "tracker.log", env_with(), "bind to")
    server = None
    try:
        server = rpc_server(tmp_path, "--tracker", f"127.0.0.1:{port}", "--key", "test-device")
        r = campaign(tmp_path / "tracked", seed, "--rpc-tracker", f"127.0.0.1:{port}",
                     "--rpc-key", "test-device")
    finally:
        if server is not None:
            server.stop()
        tracker.stop()
    assert f"RPC tracker 127.0.0.1:{port}, key test-device" in r.stderr
    there = results(tmp_path / "tracked")
    for case, a, b in zip(cases, here, there, strict=True):
        if behaviour(case) != "abort":
            assert a[1:5] == b[1:5], (case.workload, a[5][:300], b[5][:300])


def test_stock_tvm_server_that_stopped_serving_makes_cases_inconclusive(tmp_path, monkeypatch):
    """TVM 0.27's own server stops accepting after a session dies: no hang, no false finding."""
    server = rpc_server(tmp_path, stock=True)
    monkeypatch.setenv(rpc.ENV, json.dumps({"server": server.address, "connect_timeout": 3}))
    rpc.device_from_env.cache_clear()
    from fuzzharness.execution.stages import execute

    def case(b):
        return Case(workload={"name": "test_kernel_chaos", "params": {
            "M": 3, "N": 5, "dtype": "float32", "behaviour": b}},
            inputs={"distribution": "uniform", "seed": 1})

    try:
        ok = execute(case("none")).verdict
        assert ok.status is Status.PASS, ok.line()
        crashed = execute(case("abort")).verdict  # the session dies; so does TVM's listener
        t0 = time.monotonic()
        after = execute(case("none")).verdict
        waited = time.monotonic() - t0
        server.stop()
        gone = execute(case("none")).verdict  # nothing listens any more: refused
    finally:
        rpc.device_from_env.cache_clear()
        server.stop()
    assert crashed.status is Status.INCONCLUSIVE, crashed.line()
    assert "could not be reached again" in crashed.details["not_run"]
    for v in (after, gone):
        assert v.status is Status.INCONCLUSIVE and v.stage.value == "run", v.line()
        assert v.details["kind"] == "device_unreachable" and not v.is_finding
    assert "no session within" in after.details["not_run"]
    assert waited < 30


def test_bad_rpc_settings_are_one_line_errors(tmp_path):
    r = run_cli("run", "--rpc-key", "phone", "--max-cases", 1, "--out", tmp_path / "a")
    assert r.returncode == 2 and "rpc needs exactly one of server" in r.stderr, r.stderr
    config = tmp_path / "c.toml"
    config.write_text('[campaign]\nrpc = { server = "127.0.0.1" }\n')
    r = run_cli("run", "--config", config, "--max-cases", 1, "--out", tmp_path / "b")
    assert r.returncode == 2 and "rpc server must be HOST:PORT" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_device_and_executor_settings_round_trip_through_toml_and_resume(tmp_path):
    """Where cases run is a stored, resumable campaign setting; it is not part of any case."""
    from fuzzharness.campaign.settings import RESUMABLE, CampaignSettings, load_toml

    config = tmp_path / "c.toml"
    config.write_text('[campaign]\nexecutor = "ray"\nray_address = "127.0.0.9:6379"\n'
                      'timeout = 12\nrpc = { tracker = "127.0.0.9:9190", key = "android" }\n')
    s = load_toml(config).validate()
    again = CampaignSettings.from_dict(json.loads(json.dumps(s.to_dict())))
    assert again == s
    device = again.remote_device()
    assert (device.tracker, device.key, device.timeout) == ("127.0.0.9:9190", "android", 12)
    assert {"executor", "ray_address", "rpc"} <= RESUMABLE
    # the device is not part of what a campaign generates: its cases never mention it
    for i in range(10):
        try:
            case = generate_case(5, i, again.generation)
        except Exception:  # noqa: BLE001 - TVM failing while scheduling: a finding, not ours
            continue
        assert "127.0.0.9" not in case.to_json()
        break
    else:
        raise AssertionError("no case of seed 5 generated")


def test_server_listens_on_this_machine_only_by_default_and_a_high_port_alone_works(tmp_path):
    port = free_port()  # above the old default --port-end 9199: TVM's range would be empty
    p = Proc([sys.executable, "-m", "fuzzharness.backends.rpc_server", "--port", str(port)],
             tmp_path / "server.log", env_with(), "listening on")
    try:
        assert f"listening on 127.0.0.1:{port}" in p.text()
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            pass
    finally:
        p.stop()


@pytest.mark.parametrize("args", [["--port", "19391", "--port-end", "100"],
                                  ["--host", "192.0.2.1", "--port", "19391"],
                                  ["--tracker", "nohostport", "--key", "k"]])
def test_server_bad_options_are_one_line_and_exit_2(args):
    r = subprocess.run([sys.executable, "-m", "fuzzharness.backends.rpc_server", *args],
                       capture_output=True, text=True, timeout=120, env=env_with(), cwd=ROOT)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("fuzzharness rpc server: error:"), r.stderr
    assert "Traceback" not in r.stderr


def test_server_warns_in_one_line_when_it_listens_beyond_loopback(tmp_path):
    port = free_port()
    p = Proc([sys.executable, "-m", "fuzzharness.backends.rpc_server", "--host", "0.0.0.0",
              "--port", str(port)], tmp_path / "server.log", env_with(), "listening on")
    try:
        deadline = time.monotonic() + 30
        while "warning:" not in p.text() and time.monotonic() < deadline:
            time.sleep(0.1)
        warnings = [ln for ln in p.text().splitlines() if "warning:" in ln]
        assert len(warnings) == 1 and "reachable from other machines" in warnings[0]
    finally:
        p.stop()
    quiet = Proc([sys.executable, "-m", "fuzzharness.backends.rpc_server", "--port", str(free_port())],
                 tmp_path / "quiet.log", env_with(), "listening on")
    try:
        time.sleep(1)
        assert "warning:" not in quiet.text()
    finally:
        quiet.stop()
