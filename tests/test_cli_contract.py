"""The CLI's contract with CI jobs and people (issue 20), driven with real processes:

* every malformed input is refused *before* any work, with one line on stderr and exit
  status 2, and nothing already stored is touched (compared byte for byte);
* a campaign directory in a read-only file system (a real read-only bind mount, with and
  without a pending write-ahead log) can be read: status, replay, report;
* Ctrl-C (a real SIGINT to the process group, as a terminal sends it) and SIGTERM stop every
  phase within seconds — cases, the end-of-run minimization, `minimize`, `replay`, `report` —
  with exit status 3, one line saying how to go on, no traceback (also not after a second
  Ctrl-C), every child process gone and the database consistent (SQLite's own check) and
  resumable;
* harness errors alone exit 3, never 0.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

WRONG = "fuzzharness.testing.wrong_programs"
STOP_WITHIN = 15.0  # seconds from the signal to the exit (a loaded 2-core machine)


def plugin_env(plugins: str = WRONG, **extra) -> dict[str, str]:
    env = dict(os.environ, FUZZHARNESS_PLUGINS=plugins, **extra)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return env


def one_line(r, needle: str, code: int = 2) -> str:
    """The process exited ``code`` with exactly one non-empty stderr line, containing needle."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert needle in lines[0], lines[0]
    return lines[0]


def db_bytes(d: Path) -> tuple[bytes, bytes]:
    """The stored data: the database file and its write-ahead log (absent = empty).  The
    ``-shm`` index is SQLite's scratch space, which any reader may create."""
    wal = d / "results.sqlite-wal"
    return (d / "results.sqlite").read_bytes(), wal.read_bytes() if wal.exists() else b""


def quick_check(d: Path) -> str:
    con = sqlite3.connect(f"file:{d / 'results.sqlite'}?mode=ro", uri=True)
    try:
        return con.execute("PRAGMA quick_check").fetchone()[0]
    finally:
        con.close()


def count(d: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{d / 'results.sqlite'}?mode=ro", uri=True)
        try:
            return con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    """A finished campaign with new findings (a deliberately wrong program) and passes."""
    out = tmp_path_factory.mktemp("contract") / "run"
    r = run_cli("run", out, "--seed", 3, "--max-cases", 6, "--workers", 2, "--workloads",
                "matmul,test_matmul_off_by_one", "--dtypes", "float32", "--max-steps", 2,
                "--json", env=plugin_env())
    assert r.returncode == 1, r.stderr  # new findings
    (out / "summary.json").write_text(r.stdout)
    return out


@pytest.mark.slow
def test_json_summary_is_the_whole_answer(campaign):
    """`run --json`: one JSON object on stdout — the exit status, counts, the new findings
    with severity and repro status — agreeing with the database; nothing else on stdout."""
    summary = json.loads((campaign / "summary.json").read_text())
    assert summary["exit_code"] == 1 and summary["exit_meaning"] == "new TVM findings"
    con = sqlite3.connect(f"file:{campaign / 'results.sqlite'}?mode=ro", uri=True)
    stored = dict(con.execute("SELECT status, COUNT(*) FROM results GROUP BY status"))
    keys = {k for (k,) in con.execute("SELECT key FROM buckets WHERE symptom = 'wrong_result'")}
    con.close()
    assert summary["counts"] == stored and summary["cases"] == sum(stored.values()) == 6
    new = summary["new"]
    assert new and {f["key"] for f in new} >= keys and summary["new_buckets"] == len(new)
    assert all(f["severity"] == "high" for f in new if f["symptom"] == "wrong_result")
    # (the test suite switches the end-of-run minimization off: $FUZZHARNESS_MINIMIZE_BUDGET=0)
    assert all(f["repro_status"] == "not minimized" for f in new)
    assert all(f["repro_note"].startswith("minimization was off") for f in new), new


def test_config_prints_a_settings_file_run_reads_back(tmp_path):
    first = run_cli("config", "--workers", 3, "--workloads", "matmul,row_sum", "--seed", 9)
    assert first.returncode == 0, first.stderr
    cfg = tmp_path / "c.toml"
    cfg.write_text(first.stdout)
    again = run_cli("config", "--config", cfg)
    assert again.returncode == 0, again.stderr
    body = lambda text: [ln for ln in text.splitlines() if not ln.startswith("#")]  # noqa: E731
    assert body(again.stdout) == body(first.stdout)
    assert 'workloads = [\n    "matmul",\n    "row_sum",\n]' in first.stdout
    listed = json.loads(run_cli("list", "workloads", "targets", "--json").stdout)
    assert "matmul" in {w["name"] for w in listed["workloads"]}
    assert {"llvm": True} == {t["name"]: t["runs_here"] for t in listed["targets"]
                              if t["name"] == "llvm"}


@pytest.fixture
def copy(campaign, tmp_path) -> Path:
    d = tmp_path / "copy"
    shutil.copytree(campaign, d)
    return d


# -- bad inputs: one line, exit 2, nothing touched ----------------------------------------------------
BAD_RUNS = [
    (["--time-budget", "nan"], "--time-budget: must be a finite number, not 'nan'"),
    (["--time-budget", "inf"], "--time-budget: must be a finite number, not 'inf'"),
    (["--timeout", "0"], "--timeout: must be > 0 seconds"),
    (["--workers", "0"], "--workers: must be ≥ 1"),
    (["--minimize-budget", "-1"], "--minimize-budget: must be ≥ 0 seconds"),
    (["--workloads", ","], "--workloads ',': no names given"),
    (["--dtypes", ""], "--dtypes '': no names given"),
    (["--primitives", " , "], "--primitives ' , ': no names given"),
    (["--workloads", "graph", "--dtypes", "int8"],
     "unknown dtype 'int8' of workload(s) graph; known: float16, float32"),
    (["--graph-fraction", "1.5"], "--graph-fraction: must be between 0 and 1"),
    (["--force"], "--force only applies to --resume"),
]


@pytest.mark.parametrize("flags, needle", BAD_RUNS, ids=[" ".join(f) for f, _ in BAD_RUNS])
def test_bad_run_flags(tmp_path, flags, needle):
    one_line(run_cli("run", tmp_path / "o", "--max-cases", 1, *flags), needle)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text, needle", [
    ("[generation]\nspecial_fraction = 5.0\n", "special_fraction must be between 0 and 1 (got 5.0)"),
    ("[campaign]\ntime_budget = nan\n", "time_budget must be a finite number of seconds"),
    ("[campaign]\ntimeout = inf\n", "timeout must be a finite number of seconds"),
    ("[generation]\nworkloads = []\n", "workloads: an empty list selects nothing"),
])
def test_bad_settings_values(tmp_path, text, needle):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    one_line(run_cli("run", tmp_path / "o", "--config", cfg), needle)
    one_line(run_cli("config", "--config", cfg), needle)  # the same check, the same line
    assert not (tmp_path / "o").exists()


def test_campaign_directory_that_cannot_be(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    one_line(run_cli("run", afile, "--max-cases", 1), "afile: is a file, not a directory")
    one_line(run_cli("run", "--out", afile / "sub", "--max-cases", 1), "lies under the file")
    assert afile.read_text() == "x"


@pytest.mark.slow
def test_case_files_that_are_not_cases(campaign, tmp_path):
    """Garbage in a case file is a usage error, never a TVM compile_error."""
    con = sqlite3.connect(f"file:{campaign / 'results.sqlite'}?mode=ro", uri=True)
    case = json.loads(con.execute("SELECT case_json FROM results WHERE case_json IS NOT NULL "
                                  "ORDER BY idx LIMIT 1").fetchone()[0])
    con.close()
    case.pop("id")
    bad = {
        "garbage trace": dict(case, schedule=dict(case["schedule"], trace="garbage")),
        "unknown instruction": dict(case, schedule=dict(case["schedule"],
                                                        trace=[[["Frobnicate", [], [], []]], []])),
        "wrong parameter type": dict(case, workload={"name": case["workload"]["name"], "params":
                                                     dict(case["workload"]["params"], K="abc")}),
    }
    needles = {"garbage trace": "must be null or TVM's Trace.as_json()",
               "unknown instruction": "instruction kinds TVM does not have: Frobnicate",
               "wrong parameter type": "builds no program from its params"}
    for what, content in bad.items():
        path = tmp_path / f"{what.replace(' ', '_')}.json"
        path.write_text(json.dumps(content))
        for verb in ("replay", "repro"):
            r = run_cli(verb, path, env=plugin_env())
            one_line(r, needles[what])
            assert "is not a valid case" in r.stderr and r.stdout == ""
    one_line(run_cli("replay", campaign), "is a directory: give the case too")
    one_line(run_cli("replay", campaign, 0, "--timeout", 0), "--timeout: must be > 0 seconds")
    one_line(run_cli("replay", campaign, 0, "--timeout", "nan"), "must be a finite number")


@pytest.mark.slow
def test_outputs_checked_before_the_work(campaign, tmp_path):
    """`minimize CASE --out FILE`, `repro CASE --out FILE/x`, `minimize DIR --bucket unknown`:
    refused before anything runs (nothing on stdout, no repro written)."""
    con = sqlite3.connect(f"file:{campaign / 'results.sqlite'}?mode=ro", uri=True)
    (case_json,) = con.execute("SELECT case_json FROM results WHERE status = 'wrong_result' "
                               "LIMIT 1").fetchone()
    con.close()
    case = tmp_path / "case.json"
    case.write_text(case_json)
    afile = tmp_path / "afile"
    afile.write_text("x")
    before = db_bytes(campaign)
    r = run_cli("minimize", case, "--out", afile, env=plugin_env())
    one_line(r, "--out")
    assert "is a file" in r.stderr and r.stdout == ""
    r = run_cli("repro", case, "--out", afile / "x", env=plugin_env())
    one_line(r, "lies under the file")
    assert r.stdout == ""
    r = run_cli("minimize", campaign, "--bucket", "deadbeef", env=plugin_env())
    one_line(r, "--bucket deadbeef: no such bucket in")
    assert r.stdout == "" and not (campaign / "repros").exists()
    one_line(run_cli("report", campaign, "--out", afile / "r"), "lies under the file")
    one_line(run_cli("list", "nope"), "unknown section 'nope'")
    assert db_bytes(campaign) == before


def _corrupt_a_page(db: Path) -> None:
    """Overwrite the b-tree page header of the results table: a real corrupt page."""
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'results'").fetchone()
    con.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xff" * 12)


@pytest.mark.slow
def test_corrupt_database_is_never_written(copy):
    _corrupt_a_page(copy / "results.sqlite")
    before = db_bytes(copy)
    one_line(run_cli("run", copy, "--resume", "--max-cases", 12), "the database is corrupt")
    one_line(run_cli("minimize", copy, env=plugin_env()), "the database is corrupt")
    # readers say so in one line too (the page they need is the broken one)
    one_line(run_cli("status", copy), "")
    assert db_bytes(copy) == before


@pytest.mark.slow
def test_resume_of_another_version_refused_unless_forced(copy):
    con = sqlite3.connect(copy / "results.sqlite")
    (versions,) = con.execute("SELECT versions FROM campaign").fetchone()
    v = json.loads(versions)
    con.execute("UPDATE campaign SET versions = ?", (json.dumps(dict(v, harness="0.0.1")),))
    con.commit()
    con.close()
    before = db_bytes(copy)
    one_line(run_cli("run", copy, "--resume"), f"harness 0.0.1 → {v['harness']}")
    assert db_bytes(copy) == before
    # forced: it resumes (nothing left to run within the old case limit)
    r = run_cli("run", copy, "--resume", "--force", "--no-progress", env=plugin_env())
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr  # its new findings


@pytest.mark.slow
def test_old_spellings_keep_working(campaign):
    r = run_cli("replay", "--db", campaign, 0, env=plugin_env())
    assert r.returncode in (0, 1) and "reproduced: yes" in r.stdout, r.stdout + r.stderr


# -- read-only campaign directories ------------------------------------------------------------------
def _read_only(directory: Path, *args: object, env=None) -> subprocess.CompletedProcess:
    """Run the CLI with ``directory`` bind-mounted read-only (a private mount namespace)."""
    d = str(directory)
    script = f'mount --bind "{d}" "{d}" && mount -o remount,bind,ro "{d}" && exec "$@"'
    return subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", sys.executable, "-m",
                           "fuzzharness.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def read_only_mounts():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        probe = subprocess.run(["unshare", "-rm", "sh", "-c", f'mount --bind "{d}" "{d}" && '
                                f'mount -o remount,bind,ro "{d}" && echo ok'],
                               capture_output=True, text=True)
    if probe.stdout.strip() != "ok":
        reason = f"no private read-only mounts here (unshare: {probe.stderr.strip()[:100]})"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.mark.slow
@pytest.mark.parametrize("pending_log", [False, True])
def test_read_only_campaign_is_readable(read_only_mounts, copy, tmp_path, pending_log):
    sessions = 1
    if pending_log:  # a writer that died before its log was checkpointed (kill -9)
        code = ("import os, sqlite3, sys\n"
                "c = sqlite3.connect(sys.argv[1])\n"
                "c.execute('PRAGMA wal_autocheckpoint=0')\n"
                "c.execute(\"INSERT INTO sessions(started, argv) VALUES (1, '[\\\"wal\\\"]')\")\n"
                "c.commit()\n"
                "os._exit(0)\n")
        subprocess.run([sys.executable, "-c", code, copy / "results.sqlite"], check=True)
        assert (copy / "results.sqlite-wal").stat().st_size > 0
        sessions = 2
    before = db_bytes(copy)
    st = _read_only(copy, "status", copy, "--json")
    assert st.returncode == 0, st.stderr
    data = json.loads(st.stdout)
    assert data["sessions"] == sessions and data["cases"] == count(copy)
    rep = _read_only(copy, "replay", copy, 0, env=plugin_env())
    assert rep.returncode in (0, 1) and "reproduced: yes" in rep.stdout, rep.stdout + rep.stderr
    out = tmp_path / "report"
    r = _read_only(copy, "report", copy, "--out", out)
    assert r.returncode == 0 and (out / "report.html").is_file(), r.stderr
    # writing is refused in one line, before anything runs
    one_line(_read_only(copy, "run", copy, "--resume"), "cannot be written")
    one_line(_read_only(copy, "report", copy), "Read-only file system")  # default: DIR/report
    assert db_bytes(copy) == before


# -- exit status 3 ------------------------------------------------------------------------------------
def _chaos_case(tmp_path: Path, behaviour: str, at: str = "lower") -> Path:
    from fuzzharness.core.case import Case

    case = Case(workload={"name": "test_chaos", "params": {"M": 2, "N": 4, "dtype": "float32",
                                                          "behaviour": behaviour, "at": at}},
                inputs={"distribution": "uniform", "seed": 1}, target={"kind": "test_chaos"})
    path = tmp_path / f"{behaviour}.json"
    path.write_text(case.to_json())
    return path


def test_harness_errors_are_not_a_clean_exit(tmp_path):
    r = run_cli("replay", _chaos_case(tmp_path, "harness_bug"), env=plugin_env("tests.plugins.chaos"))
    assert r.returncode == 3 and "harness_error" in r.stdout, r.stdout + r.stderr


# -- Ctrl-C ---------------------------------------------------------------------------------------------
def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children in sessions of their own included)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parent[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    left = set()
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    left.add(p)
        except OSError:
            pass
    return left


class Driver:
    """A CLI process in its own process group, as a shell starts it; signals go to the group
    (as a terminal's Ctrl-C does); stderr is collected as it comes (a reader thread)."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "fuzzharness.cli", *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env, cwd=ROOT, start_new_session=True)
        self.chunks: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.chunks.append(line)

    @property
    def err(self) -> str:
        return "".join(self.chunks)

    def wait_for(self, ready, timeout: float = 240.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.proc.poll() is None, f"exited early: {self.err}"
            assert time.monotonic() < deadline, f"not ready in time: {self.err}"
            time.sleep(0.3)

    def signal(self, sig=signal.SIGINT) -> float:
        self.mark = len(self.chunks)  # what the process prints from here on is its answer
        os.killpg(self.proc.pid, sig)
        return time.monotonic()

    @property
    def after_signal(self) -> list[str]:
        return [ln for ln in self.chunks[getattr(self, "mark", 0):] if ln.strip()]

    def finish(self, since: float) -> tuple[int, str, str, float]:
        out = self.proc.stdout.read()
        code = self.proc.wait(timeout=120)
        took = time.monotonic() - since
        self.reader.join(timeout=10)
        return code, out, self.err, took


def _stopped(d: Driver, since: float, kids: set[int], needle: str) -> str:
    code, out, err, took = d.finish(since)
    # the answer: one line, the last; progress lines (indented, "  minimize: ...") that were
    # on their way when the signal came are not part of it
    lines = [ln for ln in d.after_signal if not ln.startswith(" ")]
    assert d.after_signal and d.after_signal[-1] == lines[-1], err
    assert code == 3, (code, err, out[-1500:])
    assert took < STOP_WITHIN, took
    assert "Traceback" not in err and "Traceback" not in out, err
    assert len(lines) == 1 and needle in lines[0], err
    time.sleep(1.0)
    assert not alive(kids), f"left behind: {alive(kids)}"
    return out


@pytest.mark.slow
@pytest.mark.parametrize("signals", [[signal.SIGINT], [signal.SIGINT, signal.SIGINT],
                                     [signal.SIGTERM]], ids=["ctrl-c", "ctrl-c-twice", "sigterm"])
def test_interrupted_campaign(tmp_path, signals):
    out = tmp_path / "run"
    d = Driver("run", out, "--seed", 7, "--time-budget", 600, "--workers", 2, "--no-progress",
               "--workloads", "matmul,row_sum,elementwise", env=plugin_env())
    d.wait_for(lambda: count(out) >= 3)
    kids = descendants(d.proc.pid)
    assert kids, "no worker processes"
    since = d.signal(signals[0])
    for sig in signals[1:]:
        time.sleep(0.2)
        try:
            d.signal(sig)
        except ProcessLookupError:
            break
    if len(signals) == 1:
        _stopped(d, since, kids, f"continue with: fuzzharness run {out} --resume")
    else:  # the second Ctrl-C: either the orderly line or the immediate one, never a traceback
        code, stdout, err, took = d.finish(since)
        assert code == 3 and took < STOP_WITHIN and "Traceback" not in err + stdout, err
        time.sleep(1.0)
        assert not alive(kids)
    assert quick_check(out) == "ok"
    stored = count(out)
    assert stored >= 3
    # resumable: the stored cases stay, the run goes on from there
    r = run_cli("run", out, "--resume", "--max-cases", stored + 1, "--no-progress",
                env=plugin_env())
    assert r.returncode in (0, 1) and count(out) == stored + 1, r.stderr


@pytest.mark.slow
def test_interrupted_while_minimizing(tmp_path):
    out = tmp_path / "run"
    d = Driver("run", out, "--seed", 3, "--max-cases", 4, "--workers", 2, "--no-progress",
               "--workloads", "test_matmul_off_by_one", "--dtypes", "float32",
               "--minimize-budget", 300, env=plugin_env())

    def minimizing() -> bool:  # a minimization lane is at work (after the 4 cases)
        for p in descendants(d.proc.pid):
            try:
                if b"fuzzharness.campaign.minimizing.lane" in Path(f"/proc/{p}/cmdline").read_bytes() \
                        and count(out) == 4:
                    return True
            except OSError:
                pass
        return False

    d.wait_for(minimizing)
    kids = descendants(d.proc.pid)
    before = count(out)
    since = d.signal()
    stdout = _stopped(d, since, kids, f"continue with: fuzzharness minimize {out}")
    assert "minimize: interrupted" in stdout
    assert quick_check(out) == "ok" and count(out) == before == 4


@pytest.mark.slow
def test_interrupted_minimize_replay_and_report(campaign, copy, tmp_path):
    # minimize DIR
    d = Driver("minimize", copy, "--budget", 300, env=plugin_env())

    def working() -> bool:
        return any(b"fuzzharness.campaign.minimizing.lane" in Path(f"/proc/{p}/cmdline").read_bytes()
                   for p in descendants(d.proc.pid) if Path(f"/proc/{p}/cmdline").exists())

    d.wait_for(working)
    kids = descendants(d.proc.pid)
    _stopped(d, d.signal(), kids, f"`fuzzharness minimize {copy}` does the rest")
    assert quick_check(copy) == "ok"

    # replay of a case that hangs TVM's stand-in: the worker is ended with the driver
    d = Driver("replay", _chaos_case(tmp_path, "hang", "run"), "--timeout", 300,
               env=plugin_env("tests.plugins.chaos"))
    d.wait_for(lambda: len(descendants(d.proc.pid)) >= 1)
    time.sleep(3)
    kids = descendants(d.proc.pid)
    _stopped(d, d.signal(), kids, "nothing was stored")

    # report: interrupted while it loads (pandas, matplotlib): no report, or a whole one
    out = tmp_path / "rep"
    d = Driver("report", campaign, "--out", out)
    time.sleep(0.5)
    since = d.signal()
    code, stdout, err, took = d.finish(since)
    assert code == 3 and "Traceback" not in err and took < STOP_WITHIN, err
    lines = d.after_signal  # (in its imports: "before it started"; later: "no report was written")
    assert len(lines) == 1 and lines[0].startswith("fuzzharness: interrupted"), err
    assert not (out / "report.html").exists()
