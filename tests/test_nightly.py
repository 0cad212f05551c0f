"""Nightly tracking: three real campaigns, one per "night", reported together say which bug
appeared, which was not seen again, and which is a regression against the baseline TVM
(reports/tables.py ``nightly``; docs/nightly.md).

The bugs are the simulated miscompilations of fuzzharness/testing/wrong_programs.py, unscheduled
(``--max-steps 0``: one bucket per program):

night 1  drops_term                      → drops_term new
night 2  drops_term, off_by_one          → off_by_one new tonight, drops_term seen again
night 3  off_by_one, --baseline <a TVM that compiles off_by_one right>
                                         → off_by_one a regression, drops_term not seen tonight
"""

from __future__ import annotations

import os
import sys

import pytest

from fuzzharness.testing.wrong_programs import FIXED_ENV
from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow


def _night(out, workloads: str, *extra):
    env = dict(os.environ, FUZZHARNESS_PLUGINS="fuzzharness.testing.wrong_programs",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = run_cli("run", "--max-cases", "4", "--workers", "1", "--seed", "1", "--no-minimize",
                "--target", "llvm", "--workloads", workloads, "--dtypes", "float32",
                "--max-steps", "0", "--out", out, "--no-progress", *extra, env=env)
    assert r.returncode == 1, r.stdout + r.stderr  # new findings every night
    return r


def test_three_nights_show_a_new_bug_one_not_seen_again_and_a_regression(tmp_path):
    fixed = tmp_path / "python"  # the baseline: this TVM with off_by_one compiled right
    fixed.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{ROOT}" {FIXED_ENV}=1 '
                     f'exec {sys.executable} "$@"\n')
    fixed.chmod(0o755)
    nights = [tmp_path / f"night{i}" for i in (1, 2, 3)]
    _night(nights[0], "test_matmul_drops_term")
    _night(nights[1], "test_matmul_drops_term,test_matmul_off_by_one")
    r = _night(nights[2], "test_matmul_off_by_one", "--baseline", fixed)
    assert "against the baseline TVM" in r.stdout and "1 regression" in r.stdout, r.stdout
    assert "REGRESSION" in r.stdout, r.stdout

    from reports.report import build

    rep = build(nights)
    got = rep.nights.set_index("campaign")
    n1, n2, n3 = (got.loc[n.name] for n in nights)
    assert (n1["bugs"], n1["new_tonight"], n1["regressions"]) == (1, 1, 0)
    assert (n2["bugs"], n2["new_tonight"], n2["seen_again"]) == (2, 1, 1)
    assert (n3["bugs"], n3["new_tonight"], n3["seen_again"], n3["not_seen_tonight"],
            n3["regressions"]) == (1, 0, 1, 1, 1)
    states = {row["title"].split("[")[-1].split()[0]: row["state"]
              for _, row in rep.night_bugs.iterrows()}
    assert states == {"test_matmul_off_by_one": "regression",
                      "test_matmul_drops_term": "not seen tonight"}, rep.night_bugs

    md = run_cli("report", *nights, "--markdown", "-", "--html", tmp_path / "r.html")
    assert md.returncode == 0, md.stderr
    assert "Night by night: what changed" in md.stdout
    assert md.stdout.index("Night by night") < md.stdout.index("New findings")
