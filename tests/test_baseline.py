"""Baseline comparison (fuzzharness.releases.baseline): a failure that also fails on the
baseline TVM is pre-existing, one the baseline passes is a regression, one the baseline
refuses is not comparable — with real TVM processes.

The baseline here is this interpreter behind a wrapper whose ``sitecustomize`` changes TVM:
with vectorization switched off in every PassContext it no longer has the bug of the case
below (a buffer allocated inside a vectorized loop: passes with ``tirx.disable_vectorize``),
so it plays a TVM release without that bug; with ``vectorize`` refused it plays a release
that lacks the primitive.  The other side is this TVM itself, which fails the same way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fuzzharness.buckets.signatures import signature
from fuzzharness.core.verdict import Verdict
from fuzzharness.releases import baseline as bl

ROOT = Path(__file__).resolve().parent.parent
#: row_sum float32, cache_write + reverse_compute_at + vectorize: the write-back's buffer is
#: allocated inside the vectorized loop (benchmarks/dedup labels: alloc-in-vectorized-loop)
CASE_ID = "seed7/018194c2d0260229"

NO_VECTORIZE = """
import tvm
_init = tvm.transform.PassContext.__init__
def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None, config=None):
    _init(self, opt_level, required_pass, disabled_pass, instruments,
          {**(config or {}), "tirx.disable_vectorize": True})
tvm.transform.PassContext.__init__ = __init__
"""
NO_VECTORIZE_PRIMITIVE = """
import json
import tvm
from tvm.s_tir.schedule import ScheduleError
_apply = tvm.s_tir.Trace.apply_json_to_schedule
def apply_json_to_schedule(trace, sch):
    if "Vectorize" in json.dumps(trace):
        raise ScheduleError("this TVM cannot vectorize")
    return _apply(trace, sch)
tvm.s_tir.Trace.apply_json_to_schedule = staticmethod(apply_json_to_schedule)
"""


def _case() -> dict:
    cases = json.loads((ROOT / "benchmarks" / "dedup" / "cases.json").read_text())
    return next(r["case"] for r in cases if r["id"] == CASE_ID)


def _wrapper(tmp_path: Path, site: str) -> str:
    """A Python interpreter that imports ``site`` as its sitecustomize (after the harness's
    PYTHONPATH, which the worker environment sets)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(site)
    py = tmp_path / "python"
    py.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{tmp_path / "site"}" '
                  f'exec {sys.executable} "$@"\n')
    py.chmod(0o755)
    return str(py)


@pytest.fixture(scope="module")
def failing():
    """The case and its signature on this TVM (it must fail here for the tests to mean much)."""
    from fuzzharness.engine.pool import WorkerPool

    case = _case()
    with WorkerPool(1, timeout=120) as pool:
        (res,) = list(pool.run([{"task": 0, "case": case}]))
    assert res.verdict.is_finding, res.verdict.line()
    return case, signature(case, res.verdict)


def test_a_failure_the_baseline_passes_is_a_regression(failing, tmp_path):
    case, sig = failing
    base = bl.resolve(_wrapper(tmp_path, NO_VECTORIZE))
    c = bl.compare(base, case, sig)
    assert c.outcome == bl.REGRESSION, c
    assert c.status == "pass"
    assert c.reason("TVM X").startswith(f"regression: passes on {base.label}, fails on TVM X")


def test_a_failure_the_baseline_shares_is_pre_existing(failing):
    case, sig = failing
    c = bl.compare(bl.resolve(sys.executable), case, sig)
    assert c.outcome == bl.PRE_EXISTING, c


def test_a_baseline_that_refuses_the_schedule_is_not_comparable(failing, tmp_path):
    case, sig = failing
    c = bl.compare(bl.resolve(_wrapper(tmp_path, NO_VECTORIZE_PRIMITIVE)), case, sig)
    assert c.outcome == bl.NOT_COMPARABLE, c
    assert c.status == "schedule_rejected"


def test_a_different_failure_on_the_baseline_is_not_comparable(failing):
    case, sig = failing
    other = Verdict.from_dict({"status": "compile_error", "stage": "lower",
                               "message": "InternalError: Check failed: something else"})
    same = Verdict.from_dict({"status": "nan_inf", "stage": "verify", "message": "nan"})
    assert bl.judge(case, sig, other) == bl.NOT_COMPARABLE
    assert bl.judge(case, sig, same) == bl.PRE_EXISTING  # a wrong value and a nan: one bug


def test_a_bad_baseline_is_one_line_and_exit_2(tmp_path):
    for spec in ("0.1", str(tmp_path / "no-python")):
        p = subprocess.run([sys.executable, "-m", "fuzzharness", "run", "--max-cases", "1",
                            "--out", str(tmp_path / "c"), "--baseline", spec],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 2, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and "--baseline" in p.stderr, p.stderr
        assert not (tmp_path / "c").exists()
