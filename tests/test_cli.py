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
