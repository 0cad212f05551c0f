"""The import layers of CONTRIBUTING.md, checked with import-linter (contracts in
pyproject.toml, ``[tool.importlinter]``).

import-linter reads the package from the file system; in the source tree ``generators/``,
``oracles/`` and ``reports/`` are outside ``fuzzharness/`` (setup.py maps them into the
namespace), so the check runs on a copy laid out as an installed package.  Run it alone with
``python tests/test_layers.py`` (the tox ``lint`` environment does).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAPPED = ("generators", "oracles", "reports")


def installed_layout(dest: Path) -> Path:
    """``dest/fuzzharness`` with the mapped folders inside it, as an install has them."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    pkg = dest / "fuzzharness"
    shutil.copytree(ROOT / "fuzzharness", pkg, ignore=ignore)
    for top in MAPPED:
        shutil.copytree(ROOT / top, pkg / top, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command;"
           " sys.exit(lint_imports_command())", "--config", "pyproject.toml", "--no-cache"]
    return subprocess.run(cmd, cwd=tree, capture_output=True, text=True,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})


def _need_import_linter() -> None:
    """Skip without import-linter — but fail under CI, which installs it (tests/conftest.py:
    need(); not imported from there: this file also runs as a script, outside pytest)."""
    if importlib.util.find_spec("importlinter") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI installs import-linter (.ci/run), yet it is missing", pytrace=False)
        pytest.skip("import-linter is not installed (the test and lint extras)")


def test_import_layers_hold():
    _need_import_linter()
    with tempfile.TemporaryDirectory() as tmp:
        r = lint_imports(installed_layout(Path(tmp)))
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract():
    """The check can fail: one upward import (core → campaign) is reported."""
    _need_import_linter()
    with tempfile.TemporaryDirectory() as tmp:
        tree = installed_layout(Path(tmp))
        bad = tree / "fuzzharness" / "core" / "errors.py"
        bad.write_text(bad.read_text() + "\n\ndef _upward():\n"
                       "    from fuzzharness.campaign import db  # noqa: F401\n")
        r = lint_imports(tree)
    assert r.returncode != 0
    assert "fuzzharness.core.errors -> fuzzharness.campaign.db" in r.stdout


# -- no private names across modules ------------------------------------------------------------
PACKAGES = ("fuzzharness", "generators", "oracles", "reports")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reach_ins(files) -> list[str]:
    """``from pkg.mod import _name`` and ``mod._name`` (``mod`` an imported project module or
    name) in ``files``: a private name used outside the module that defines it."""
    import ast

    hits = []
    for path in files:
        tree = ast.parse(Path(path).read_text())
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module \
                    and node.module.split(".")[0] in PACKAGES:
                for a in node.names:
                    if _private(a.name):
                        hits.append(f"{Path(path).name}:{node.lineno}: from {node.module} import {a.name}")
                    imported.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                imported |= {a.asname or a.name.split(".")[0] for a in node.names
                             if a.name.split(".")[0] in PACKAGES}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) \
                    and isinstance(node.value, ast.Name) and node.value.id in imported:
                hits.append(f"{Path(path).name}:{node.lineno}: {node.value.id}.{node.attr}")
    return hits


def test_no_private_name_is_used_across_modules():
    files = [p for top in (*PACKAGES, "benchmarks") for p in (ROOT / top).rglob("*.py")]
    assert private_reach_ins(files) == []


def test_a_private_reach_in_is_reported(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from fuzzharness.releases.check import summarize, _hidden\n"
                   "from fuzzharness.campaign import driver\n"
                   "import os\n"
                   "driver._secret(); driver.public(); os._exit; self_like = 1\n")
    assert private_reach_ins([bad]) == [
        "bad.py:1: from fuzzharness.releases.check import _hidden", "bad.py:4: driver._secret"]


def test_benchmarks_import_nothing_from_tests():
    """Benchmarks are a suite of their own: what they share with the tests lives in
    ``fuzzharness.testing``."""
    import ast

    found = []
    for path in (ROOT / "benchmarks").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found += [f"{path.name}:{node.lineno}: {n}" for n in names
                      if n == "tests" or n.startswith("tests.")]
    assert found == []


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        result = lint_imports(installed_layout(Path(tmp)))
    print(result.stdout + result.stderr)
    sys.exit(result.returncode)


# -- the case-kind seam: generic code asks the kind's protocol, never a kind's modules ----------
def kind_bypasses(files) -> list[str]:
    """Imports of a kind's own modules (``fuzzharness.kinds.<kind>...``) from outside
    ``fuzzharness/kinds/``, and comparisons of ``kind_name(...)`` with a kind's name: code
    that goes around :mod:`fuzzharness.core.kinds` (its protocols, one per layer)."""
    import ast

    hits = []
    for path in files:
        path = Path(path)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            mods = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for m in mods:
                if m.startswith("fuzzharness.kinds."):
                    hits.append(f"{path.name}:{node.lineno}: imports {m}")
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) \
                    and getattr(node.left.func, "id", "") == "kind_name" \
                    and any(isinstance(c, ast.Constant) for c in node.comparators):
                hits.append(f"{path.name}:{node.lineno}: kind_name(...) compared with a kind")
    return hits


def test_generic_code_goes_through_the_kind_protocols():
    pkg = ROOT / "fuzzharness"
    files = [p for p in pkg.rglob("*.py") if (pkg / "kinds") not in p.parents]
    assert kind_bypasses(files) == []


def test_a_kind_bypass_is_reported(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from fuzzharness.kinds.tir.pass_bisect import PASS_WRAPPERS\n"
                   "from fuzzharness.core.kinds import kind_name\n"
                   "if kind_name(case) == 'tir':\n    pass\n")
    assert kind_bypasses([bad]) == ["bad.py:1: imports fuzzharness.kinds.tir.pass_bisect",
                                    "bad.py:3: kind_name(...) compared with a kind"]


# -- small modules -------------------------------------------------------------------------------
MAX_LINES = 400
#: the modules allowed over MAX_LINES (at most 3), each with the reason it is one module
LARGE_MODULES = {
    "oracles/emulate.py": "the interpreter of TIR arithmetic in its own dtypes: one "
                                        "visitor over every expression kind",
    "oracles/bounds.py": "the error model: one bound per operation kind, read and checked together",
}


def large_modules(files, root: Path = ROOT) -> dict[str, int]:
    out = {}
    for p in files:
        n = len(Path(p).read_text().splitlines())
        if n > MAX_LINES:
            out[Path(p).relative_to(root).as_posix()] = n
    return out


def test_modules_stay_small_but_for_three_justified_ones():
    assert len(LARGE_MODULES) <= 3
    files = [p for top in PACKAGES for p in (ROOT / top).rglob("*.py")]
    assert set(large_modules(files)) <= set(LARGE_MODULES), large_modules(files)


def test_a_large_module_is_reported(tmp_path):
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "small.py").write_text("x = 1\n" * MAX_LINES)
    assert large_modules([big, tmp_path / "small.py"], tmp_path) == {"big.py": MAX_LINES + 1}


# -- one store: every SQL statement lives in fuzzharness/store/ -------------------------------------
SQL_OWNERS = ("fuzzharness/store/",
              "fuzzharness/core/storage.py")  # storage: opening and checking any SQLite file
_SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|"
                  r"CREATE\s+TABLE|PRAGMA\s+table_info)\b", re.S)


def sql_outside_the_store(files, root: Path = ROOT) -> list[str]:
    """String constants holding SQL in ``files`` outside the modules that own the database."""
    import ast

    hits = []
    for path in files:
        rel = Path(path).relative_to(root).as_posix()
        if rel.startswith(SQL_OWNERS):
            continue
        for node in ast.walk(ast.parse(Path(path).read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and _SQL.search(node.value):
                hits.append(f"{rel}:{node.lineno}")
    return hits


def test_no_sql_outside_the_store():
    files = [p for top in (*PACKAGES, "benchmarks") for p in (ROOT / top).rglob("*.py")]
    assert sql_outside_the_store(files) == []


def test_sql_outside_the_store_is_reported(tmp_path):
    (tmp_path / "fuzzharness" / "store").mkdir(parents=True)
    bad, owner = tmp_path / "bad.py", tmp_path / "fuzzharness" / "store" / "ok.py"
    bad.write_text('q = "SELECT status, COUNT(*) FROM results GROUP BY status"\nx = "select me"\n')
    owner.write_text('q = "SELECT status FROM results"\n')
    assert sql_outside_the_store([bad, owner], tmp_path) == ["bad.py:1"]
