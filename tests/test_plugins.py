"""Plugins and registries by dotted name: the entry-point group ``fuzzharness.plugins``,
``$FUZZHARNESS_PLUGINS``, and lazily registered entries (``Registry.add_lazy``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from fuzzharness.core.errors import UsageError
from fuzzharness.core.registry import Registry, UnknownName


def _distribution(root, module_text: str, entry_point: str) -> None:
    """An installed-looking distribution under ``root``: a module and its entry point."""
    (root / "myfuzzplugin.py").write_text(textwrap.dedent(module_text))
    info = root / "myfuzzplugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myfuzzplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[fuzzharness.plugins]\n{entry_point}\n")


def _load_in_child(root, code: str, env_plugins: str = "") -> subprocess.CompletedProcess:
    prog = f"import sys; sys.path.insert(0, {str(root)!r})\n" + textwrap.dedent(code)
    env = {"PATH": "/usr/bin:/bin", "FUZZHARNESS_PLUGINS": env_plugins}
    return subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env,
                          timeout=120)


def test_entry_point_plugin_registers_a_workload(tmp_path):
    _distribution(tmp_path, """
        from fuzzharness.generators.workloads.base import register
        from fuzzharness.generators.workloads.row_reduce import RowSum

        @register
        class PluginRowSum(RowSum):
            name = "plugin_row_sum"
            default = False
        """, "rows = myfuzzplugin")
    r = _load_in_child(tmp_path, """
        from fuzzharness.core.plugins import load_plugins
        from fuzzharness.generators.workloads import workloads
        assert "plugin_row_sum" not in workloads
        print(load_plugins())
        assert "plugin_row_sum" in workloads
        """)
    assert r.returncode == 0, r.stderr
    assert "myfuzzplugin" in r.stdout


def test_a_broken_entry_point_plugin_is_a_usage_error(tmp_path):
    _distribution(tmp_path, "raise RuntimeError('broken on import')\n", "bad = myfuzzplugin")
    r = _load_in_child(tmp_path, """
        from fuzzharness.core.errors import UsageError
        from fuzzharness.core.plugins import load_plugins
        try:
            load_plugins()
        except UsageError as e:
            print("usage:", e)
        """)
    assert r.returncode == 0, r.stderr
    assert "usage: cannot load plugin 'bad'" in r.stdout and "broken on import" in r.stdout


def test_env_plugin_that_does_not_exist_is_a_usage_error(monkeypatch):
    from fuzzharness.core.plugins import load_plugins

    monkeypatch.setenv("FUZZHARNESS_PLUGINS", "no_such_plugin_module_xyz")
    with pytest.raises(UsageError, match="no_such_plugin_module_xyz"):
        load_plugins()


def test_lazy_entries_are_listed_and_imported_on_first_use():
    reg: Registry = Registry("thing")
    reg.add_lazy("json_dumps", "json:dumps")
    reg.add_lazy("missing", "json:no_such_attribute")
    assert reg.names() == ["json_dumps", "missing"] and "json_dumps" in reg
    reg.check(["json_dumps", "missing"])  # names are valid without importing them
    assert reg["json_dumps"]({"a": 1}) == '{"a": 1}'
    with pytest.raises(AttributeError):
        reg["missing"]
    with pytest.raises(UnknownName, match="known: json_dumps, missing"):
        reg["other"]
    with pytest.raises(ValueError, match="registered twice"):
        reg.add_lazy("json_dumps", "json:loads")


def test_builtin_executors_and_case_kinds_are_registered_by_name():
    from fuzzharness.core.kinds import kind_name, kinds
    from fuzzharness.engine.executor import executors

    assert executors.names() == ["local", "ray"]
    assert kinds.names() == ["relax", "tir"]
    assert kind_name({"workload": {"name": "graph"}}) == "relax"
    assert kind_name({"workload": {"name": "matmul"}}) == "tir"
    assert kind_name(None) == "tir"


@pytest.mark.slow
def test_a_primitive_registered_from_outside_is_drawn_and_judged(tmp_path):
    """A plugin primitive (tests/plugins/toy_primitive.py, loaded by $FUZZHARNESS_PLUGINS)
    joins the registry: `--primitives toy_mark,split` draws it, its steps are in the stored
    traces and every case ends in a verdict; without the plugin the name is a usage error."""
    import json
    import os
    import sqlite3

    from tests.conftest import ROOT, run_cli

    env = {**os.environ, "FUZZHARNESS_PLUGINS": "tests.plugins.toy_primitive",
           "PYTHONPATH": str(ROOT)}
    out = tmp_path / "camp"
    r = run_cli("run", out, "--max-cases", 6, "--workers", 1, "--seed", 4, "--primitives",
                "toy_mark,split", "--workloads", "matmul,row_sum", "--target", "llvm",
                "--minimize-budget", 0, "-q",
                env=env)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    with sqlite3.connect(out / "results.sqlite") as db:
        rows = db.execute("SELECT status, case_json FROM results").fetchall()
    assert len(rows) == 6 and all(s == "pass" for s, _ in rows), [s for s, _ in rows]
    marked = [c for _, c in rows if '"toy_mark"' in json.dumps(json.loads(c)["schedule"])]
    assert marked, "the plugin primitive was never drawn"
    bare = {k: v for k, v in os.environ.items() if k != "FUZZHARNESS_PLUGINS"}
    r = run_cli("run", tmp_path / "bare", "--max-cases", 1, "--primitives", "toy_mark", env=bare)
    assert r.returncode == 2 and "toy_mark" in r.stderr, r.stderr[-1000:]
