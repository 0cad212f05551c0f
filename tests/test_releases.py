"""TVM releases (fuzzharness/releases/check.py, release_report.py, `fuzzharness releases`) and
workers under another interpreter (`--tvm-python`, fuzzharness/core/interpreter.py)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys

import pytest

from fuzzharness.core import interpreter
from fuzzharness.releases import report as release_report
from fuzzharness.releases.check import Outcome, cross_release, introduced
from tests.conftest import ROOT, run_cli

OLD, MID, NEW = "0.25.0.post1", "0.26.0", "0.27.0.post1"


def repro(*states):
    return [Outcome(r, repro=s) for r, s in zip((OLD, MID, NEW), states, strict=True)]


def test_which_release_introduced_it():
    assert introduced(repro("reproduces", "reproduces", "reproduces")) == \
        f"present in {OLD} / {MID} / {NEW} → introduced in {OLD} or earlier"
    assert introduced(repro("fixed", "reproduces", "reproduces")) == \
        f"present in {MID} / {NEW} → introduced in {MID} ({OLD}: correct)"
    assert introduced(repro("other", "reproduces", "reproduces")).endswith(
        f"introduced in {MID} or earlier ({OLD} could not run it)")
    assert introduced(repro("reproduces", "reproduces", "fixed")) == \
        f"present in {OLD} / {MID}; not in {NEW} (fixed)"
    assert introduced(repro("fixed", "fixed", "fixed")).startswith("present in none of")
    # judged by the case's verdict where there is no repro script
    cases = [Outcome(OLD, status="pass"), Outcome(NEW, status="wrong_result")]
    assert introduced(cases) == f"present in {NEW} → introduced in {NEW} ({OLD}: correct)"


def test_cross_release_finding_needs_order_preserving_schedules():
    same = [Outcome(r, status="pass", digest="aa", order_preserved=True) for r in (OLD, NEW)]
    assert cross_release(same) is None
    differ = [Outcome(OLD, status="pass", digest="aa", order_preserved=True),
              Outcome(NEW, status="pass", digest="bb", order_preserved=True)]
    assert cross_release(differ) == ("order-preserving schedule, different output bits "
                                     f"across releases: {OLD} vs {NEW}")
    reassociating = [Outcome(OLD, status="pass", digest="aa", order_preserved=False),
                     Outcome(NEW, status="pass", digest="bb", order_preserved=False)]
    assert cross_release(reassociating) is None


def test_issue_and_corpus_get_the_releases(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / "corpus" / "rfactor-blockize-nan", corpus / "rfactor-blockize-nan")
    entry = corpus / "rfactor-blockize-nan"
    meta = json.loads((entry / "meta.json").read_text())
    meta.pop("releases", None), meta.pop("release_digests", None)  # as before any run
    (entry / "meta.json").write_text(json.dumps(meta))
    outcomes = repro("fixed", "reproduces", "reproduces")
    for _ in range(2):  # replaced, not repeated
        assert release_report.update_issue(entry / "issue.md", outcomes)
    text = (entry / "issue.md").read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith(release_report.BULLET)]
    assert len(lines) == 1 and f"introduced in {MID} ({OLD}: correct)" in lines[0]
    env = text.split("### Environment", 1)[1].split("###", 1)[0]
    assert lines[0] in env
    release_report.update_meta(entry / "meta.json", outcomes)
    meta = json.loads((entry / "meta.json").read_text())
    assert meta["releases"] == {OLD: "fixed", MID: "reproduces", NEW: "reproduces"}
    table = release_report.write_table(corpus, [OLD, MID, NEW]).read_text()
    assert "| `rfactor-blockize-nan` | fixed | reproduces | reproduces | — | reproduces |" in table


def test_harness_path_holds_only_the_harness(tmp_path, monkeypatch):
    monkeypatch.setenv("FUZZHARNESS_CACHE", str(tmp_path))
    d = interpreter.harness_path()
    assert [p.name for p in d.iterdir()] == ["fuzzharness"]  # nothing else on that PYTHONPATH
    pkg = d / "fuzzharness"
    assert (pkg / "__init__.py").resolve() == ROOT / "fuzzharness" / "__init__.py"
    for mapped in ("generators", "oracles", "reports"):  # as setup.py's package_dir installs them
        assert (pkg / mapped).resolve() == ROOT / mapped
    assert not (pkg / "__pycache__").exists()


def test_an_interpreter_without_tvm_is_refused(tmp_path):
    """A fresh virtual environment (no numpy, no TVM) cannot run workers: one line, exit 2."""
    import venv

    venv.create(tmp_path / "bare", with_pip=False)
    python = tmp_path / "bare" / "bin" / "python"
    with pytest.raises(ValueError, match="cannot import numpy, ml_dtypes, hypothesis, tvm"):
        interpreter.check_interpreter(str(python))
    r = run_cli("run", "--max-cases", "1", "--tvm-python", python, "--out", tmp_path / "r")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "tvm_python" in r.stderr


@pytest.mark.slow
def test_campaign_workers_under_a_tvm_026_environment_made_by_the_harness(tmp_path):
    """End to end: the harness makes (or reuses) its TVM 0.26.0 environment, a short campaign's
    workers run there — generating, lowering, judging, reading the census — and the campaign
    records TVM 0.26.0; `fuzzharness releases` then runs a corpus entry there."""
    from fuzzharness.releases import check as releases

    release = releases.find(["0.26"])[0]
    try:
        python = releases.environment(release)
    except releases.ReleaseEnvError as e:
        pytest.skip(f"cannot make the TVM 0.26.0 environment (package registry?): {e}")
    # the workers really import that TVM (their "ready" message says which)
    from fuzzharness.engine.pool import WorkerPool
    from fuzzharness.generators.cases import GenSettings

    env = {**os.environ, interpreter.WORKER_PYTHON_ENV: str(python)}
    task = {"task": 0, "generate": {"seed": 3, "index": 0,
                                    "settings": GenSettings(graph_fraction=0).to_dict()}}
    with WorkerPool(1, timeout=300, env=env) as pool:
        (result,) = list(pool.run([task]))
    assert pool.tvm_versions == {"0.26.0"}
    assert result.verdict.status.value != "harness_error", result.verdict.line()

    out = tmp_path / "run"
    r = run_cli("run", "--seed", "3", "--max-cases", "8", "--workers", "2", "--out", out,
                "--no-progress", "--tvm-python", python, "--graph-fraction", "0")
    assert r.returncode in (0, 1), r.stderr
    assert "TVM 0.26.0" in r.stderr and "target llvm" in r.stderr
    assert "WARNING: workers ran TVM" not in r.stdout  # they reported 0.26.0 too
    con = sqlite3.connect(out / "results.sqlite")
    versions = json.loads(con.execute("SELECT versions FROM campaign").fetchone()[0])
    verdicts = [json.loads(v) for (v,) in con.execute("SELECT verdict_json FROM results")]
    con.close()
    assert versions["tvm"] == "0.26.0" and versions["tvm_ffi"] == release.ffi
    assert len(verdicts) == 8
    assert not [v for v in verdicts if v["status"] == "harness_error"], verdicts
    assert any("features" in v["details"] for v in verdicts)
    workers = [p for p in (out / "logs").iterdir()] if (out / "logs").is_dir() else []
    assert workers  # the pool wrote its worker logs there

    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / "corpus" / "rfactor-blockize-nan", corpus / "rfactor-blockize-nan")
    r = run_cli("releases", "--corpus", corpus, "--releases", "0.26.0")
    assert r.returncode == 0, r.stderr
    assert "0.26.0 case (worker TVM 0.26.0): nan_inf" in r.stdout and "0.26.0 repro.py: RESULT: the bug reproduces" \
        in r.stdout
    meta = json.loads((corpus / "rfactor-blockize-nan" / "meta.json").read_text())
    assert meta["releases"] == {"0.26.0": "reproduces"}
    assert sys.executable != str(python)
