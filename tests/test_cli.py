"""The command line: help everywhere, one-line errors with exit code 2 on bad input."""

import sqlite3

import pytest

from fuzzharness.commands import commands
from tests.conftest import run_cli


@pytest.mark.parametrize("command", [None, *commands.names()])
def test_help(command):
    r = run_cli(*([command] if command else []), "--help")
    assert r.returncode == 0
    assert "usage: fuzzharness" in r.stdout


def one_line_error(r, needle):
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert needle in lines[0], lines[0]


def test_unknown_workload(tmp_path):
    one_line_error(run_cli("run", "--workloads", "nope", "--max-cases", "1", "--out", tmp_path / "o"),
                   "unknown workload 'nope'")


def test_unknown_primitive(tmp_path):
    one_line_error(run_cli("run", "--primitives", "split,warp", "--max-cases", "1", "--out", tmp_path / "o"),
                   "unknown schedule primitive 'warp'")


def test_malformed_toml(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[campaign\nseed = 1")
    one_line_error(run_cli("run", "--config", cfg, "--out", tmp_path / "o"), "malformed TOML")


def test_unknown_toml_key(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[campaign]\nseeds = 1\n")
    one_line_error(run_cli("run", "--config", cfg, "--out", tmp_path / "o"), "unknown key 'seeds'")


def test_foreign_sqlite_is_refused_and_untouched(tmp_path):
    db = tmp_path / "results.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE users(name TEXT)")
    con.execute("INSERT INTO users VALUES ('alice')")
    con.commit()
    con.close()
    before = db.read_bytes()
    one_line_error(run_cli("run", "--resume", tmp_path), "foreign SQLite database")
    one_line_error(run_cli("replay", "--db", tmp_path, "0"), "foreign SQLite database")
    assert db.read_bytes() == before


def test_corrupt_database_file(tmp_path):
    (tmp_path / "results.sqlite").write_bytes(b"garbage" * 100)
    one_line_error(run_cli("run", "--resume", tmp_path), "not a SQLite database")


def test_unreadable_case_json(tmp_path):
    bad = tmp_path / "case.json"
    bad.write_text("{ not json")
    one_line_error(run_cli("replay", bad), "not valid JSON")
    one_line_error(run_cli("replay", tmp_path / "missing.json"), "cannot read")


def test_case_with_unknown_workload(tmp_path):
    bad = tmp_path / "case.json"
    bad.write_text('{"workload": {"name": "nope", "params": {}}, "inputs": {"distribution": "uniform", "seed": 1}}')
    one_line_error(run_cli("replay", bad), "unknown workload 'nope'")


def test_unknown_dtype(tmp_path):
    one_line_error(run_cli("run", "--dtypes", "float8", "--max-cases", "1", "--out", tmp_path / "o"),
                   "unknown dtype 'float8'")
    assert not (tmp_path / "o").exists()


def test_unknown_target(tmp_path):
    one_line_error(run_cli("run", "--target", "vulkan9", "--max-cases", "1", "--out", tmp_path / "o"),
                   "unknown target 'vulkan9'")
    one_line_error(run_cli("run", "--target", "{kind: llvm", "--max-cases", "1", "--out", tmp_path / "o"),
                   "--target: not valid JSON")


def test_memory_limit_too_small_to_run_tvm(tmp_path):
    one_line_error(run_cli("run", "--memory-mb", "100", "--max-cases", "1", "--out", tmp_path / "o"),
                   "memory_mb must be 0 (no limit) or ≥ 512")


@pytest.mark.parametrize("text, needle", [
    ("[campaign]\nworkers = \"two\"\n", "workers has the wrong type"),
    ("campaign = 3\n", "[campaign] must be a table"),
    ("[generation]\nprimitives = [\"split\", \"warp\"]\n", "unknown schedule primitive 'warp'"),
    ("[campaign]\nexecutor = \"dask\"\n", "unknown executor 'dask'"),
    ("[nightly]\nseed = 1\n", "unknown table(s) nightly"),
])
def test_bad_settings_file(tmp_path, text, needle):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    one_line_error(run_cli("run", "--config", cfg, "--out", tmp_path / "o"), needle)
    assert not (tmp_path / "o").exists()


def test_plugin_that_cannot_be_imported(tmp_path, plugin_env):
    env = dict(plugin_env, FUZZHARNESS_PLUGINS="tests.plugins.no_such_module")
    one_line_error(run_cli("run", "--max-cases", "1", "--out", tmp_path / "o", env=env),
                   "cannot import plugin 'tests.plugins.no_such_module'")


def test_truncated_database_file(tmp_path):
    db = tmp_path / "results.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t(x)")
    con.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 100)
    con.commit()
    con.close()
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    before = db.read_bytes()
    r = run_cli("run", "--resume", tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1
    assert db.read_bytes() == before


def test_nothing_to_resume(tmp_path):
    one_line_error(run_cli("run", "--resume", tmp_path / "nowhere"), "no campaign database here")


@pytest.fixture(scope="module")
def small_campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("small") / "run"
    r = run_cli("run", "--seed", "3", "--max-cases", "3", "--workers", "1", "--out", out,
                "--no-progress")
    assert r.returncode in (0, 1), r.stderr
    return out


@pytest.mark.slow
def test_database_written_by_a_newer_harness_is_refused_untouched(small_campaign, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(small_campaign, copy)
    con = sqlite3.connect(copy / "results.sqlite")
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    con.commit()
    con.close()
    before = (copy / "results.sqlite").read_bytes()
    one_line_error(run_cli("run", "--resume", copy), "written by a newer harness (schema 99)")
    one_line_error(run_cli("replay", "--db", copy, "0"), "written by a newer harness")
    assert (copy / "results.sqlite").read_bytes() == before


@pytest.mark.parametrize("flags, needle", [
    (["--memory-mb", "10"], "memory_mb must be 0"),
    (["--seed", "4"], "--seed cannot change a stored campaign"),
    (["--primitives", "fuse"], "--primitives cannot change a stored campaign"),
    (["--known-bugs", "/nonexistent/known.toml"], "cannot read known-bugs file"),
    (["--executor", "nope"], "unknown executor 'nope'"),
])
@pytest.mark.slow
def test_rejected_resume_leaves_the_campaign_untouched(small_campaign, flags, needle):
    db = small_campaign / "results.sqlite"
    before = db.read_bytes()
    one_line_error(run_cli("run", "--resume", small_campaign, *flags), needle)
    assert db.read_bytes() == before


@pytest.mark.slow
def test_case_file_edited_by_hand(tmp_path, small_campaign):
    con = sqlite3.connect(small_campaign / "results.sqlite")
    (case_json,) = con.execute("SELECT case_json FROM results WHERE idx = 0").fetchone()
    con.close()
    edited = tmp_path / "case.json"
    edited.write_text(case_json.replace('"seed": ', '"seed": 1', 1))
    one_line_error(run_cli("replay", edited), "does not match its content")
    binary = tmp_path / "case.bin"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    one_line_error(run_cli("replay", binary), "not a text file")
