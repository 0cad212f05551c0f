"""The pytest plugin, exercised as users run it: pytest in a subprocess, real TVM workers.

Each test runs ``python -m pytest`` in a fresh folder holding a copy of
``tests/test_differential.py`` (the module any project uses), so the plugin sees exactly what
an installed user's suite gives it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, _plugin_installed, run_cli

pytestmark = pytest.mark.slow  # campaigns, subprocesses, clusters

WRONG = "fuzzharness.testing.wrong_programs"


def run_pytest(folder: Path, *args, plugins: str | None = None, conftest: str | None = None,
               extra_tests: dict[str, str] | None = None, timeout: int = 300):
    """Run pytest on ``folder`` (created with the differential test module) in a subprocess."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "tests" / "test_differential.py", folder / "test_differential.py")
    (folder / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly\n")
    if conftest is not None:
        (folder / "conftest.py").write_text(conftest)
    for name, text in (extra_tests or {}).items():
        (folder / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "FUZZHARNESS_PLUGINS")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if plugins:
        env["FUZZHARNESS_PLUGINS"] = plugins
    load = [] if _plugin_installed() else ["-p", "fuzzharness.pytest_plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", *load, *map(str, args)], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=timeout)


def outcomes(stdout: str) -> dict[str, str]:
    """test id → PASSED/FAILED/SKIPPED/XFAIL/XPASS from ``-v`` output."""
    found = {}
    for m in re.finditer(r"::(test_\w+\[[^\]]+\]) (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)", stdout):
        found[m.group(1)] = m.group(2)
    return found


def llvm_combos() -> int:
    """(workload, dtype) combinations the llvm sample must cover at least once each."""
    from fuzzharness.generators.cases import GenSettings
    from fuzzharness.generators.workloads import workloads

    graphs = len(workloads["graph"].dtype_labels)  # campaigns mix whole-graph cases in
    return sum(len(workloads[w].dtype_labels) for w in GenSettings().workload_names()) + graphs


def test_plain_pytest_deselects_and_imports_nothing(tmp_path):
    """Without -m differential: nothing planned, no TVM, no worker, no output folder."""
    probe = ("import sys\n"
             "def pytest_terminal_summary(terminalreporter):\n"
             "    mods = [m for m in ('tvm', 'fuzzharness.generators.workloads', 'fuzzharness.engine.pool')"
             " if m in sys.modules]\n"
             "    terminalreporter.write_line(f'IMPORTED {mods}')\n")
    r = run_pytest(tmp_path, conftest=probe, extra_tests={"test_plain.py": "def test_x(): pass\n"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed, 2 deselected" in r.stdout
    assert "IMPORTED []" in r.stdout
    assert "--fuzz-seed" not in r.stdout
    assert not (tmp_path / "fuzz-runs").exists()


def test_wrong_program_fails_with_verdict_and_case(tmp_path):
    """The acceptance test: differential tests fail on a wrong program, pass on a right one,
    and a failure prints the verdict and a case file that `fuzzharness replay` reproduces."""
    out = tmp_path / "failures"
    # seed 14: no off-by-one case of its sample has special-value inputs (an all-nan output
    # hides any wrong element) or N = 1 (column N-1 is column 0): each one can show the bug
    r = run_pytest(tmp_path / "suite", "-m", "differential", "-v", "--fuzz-seed", "14",
                   "--fuzz-targets", "llvm", "--fuzz-workloads", "matmul,test_matmul_off_by_one",
                   "--fuzz-dtypes", "float32,float16-acc32", "--fuzz-cases", "8",
                   "--fuzz-out", out, plugins=WRONG)
    text = r.stdout + r.stderr
    assert r.returncode == 1, text
    got = outcomes(r.stdout)
    wrong = {k: v for k, v in got.items() if "test_matmul_off_by_one" in k}
    right = {k: v for k, v in got.items() if "llvm-matmul-" in k}
    # every judged wrong-program case fails (a random schedule TVM rejects is skipped, not passed)
    assert len(wrong) == 4 and set(wrong.values()) <= {"FAILED", "SKIPPED"}, got
    assert list(wrong.values()).count("FAILED") >= 2, got
    assert len(right) == 4 and "PASSED" in right.values(), got
    assert "fuzzharness: seed 14: 8 differential cases run" in text

    # the printed verdict: status, stage, ratio > 1, worst element, the case file
    blocks = re.findall(r"wrong_result at stage verify: test_matmul_off_by_one (\S+) on llvm, "
                        r"seed 14 index (\d+)\n  error/bound ratio (\S+) \(> 1 fails\), worst "
                        r"element C\[\d+, \d+\].*?\n  case JSON: (\S+)\n  replay: fuzzharness "
                        r"replay (\S+)", text, re.S)
    assert blocks, text
    dtype, index, ratio, case_path, replay_path = blocks[0]
    assert float(ratio) > 1 and case_path == replay_path
    case = json.loads(Path(case_path).read_text())
    assert case["workload"]["name"] == "test_matmul_off_by_one"
    assert Path(case_path).parent.parent == out / "seed-14"

    # case i of the sample is generate_case(seed, i, settings for its combination): the seed
    # given back regenerates it
    import fuzzharness.testing.wrong_programs  # noqa: F401
    from fuzzharness.generators.cases import GenSettings, generate_case

    regenerated = generate_case(14, int(index), GenSettings(
        workloads=("test_matmul_off_by_one",), dtypes=(dtype,), target={"kind": "llvm"}))
    assert regenerated.id == case["id"]

    env = dict(os.environ, FUZZHARNESS_PLUGINS=WRONG,
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    rep = run_cli("replay", replay_path, env=env)
    assert rep.returncode == 1 and "wrong_result" in rep.stdout, rep.stdout + rep.stderr
    # the verdict.json written beside case.json is what the replay compares with
    assert "reproduced: yes (same status and output bits)" in rep.stdout, rep.stdout

    # the rerun line plans the same sample (seed, number, filters) and runs only that item
    node = next(k for k, v in got.items() if v == "FAILED")
    import shlex

    reruns = [shlex.split(line) for line in re.findall(r"rerun: (pytest .*)$", text, re.M)]
    words = next((w for w in reruns if w[-1].endswith(node)), None)
    assert words, text
    assert words[:3] == ["pytest", "-m", "differential"] and "--fuzz-cases=8" in words
    assert "--fuzz-workloads=matmul,test_matmul_off_by_one" in words and words[-1].endswith(node)
    again = run_pytest(tmp_path / "suite", *words[1:], "-v", "--fuzz-out", tmp_path / "again",
                       plugins=WRONG)
    assert outcomes(again.stdout) == {node: "FAILED"}, again.stdout + again.stderr
    first = re.findall(r"case ([0-9a-f]{16}) \(", failure_section(r.stdout, node))
    assert first and re.findall(r"case ([0-9a-f]{16}) \(", failure_section(again.stdout, node)) == first


def failure_section(stdout: str, node: str) -> str:
    """What pytest printed under the ``___ node ___`` header of a failure."""
    m = re.search(r"_{3,} " + re.escape(node) + r" _{3,}\n(.*?)(?=\n_{3,} |\n={3,} )", stdout, re.S)
    return m.group(1) if m else ""


def test_seed_printed_and_accepted_back(tmp_path):
    args = ["-m", "differential", "--collect-only", "--fuzz-targets", "llvm"]
    first = run_pytest(tmp_path, *args, "--fuzz-profile", "nightly")
    m = re.search(r"fuzzharness: --fuzz-seed=(\d+) \(random\), profile nightly: (\d+) cases",
                  first.stdout)
    assert first.returncode == 0 and m, first.stdout + first.stderr
    assert int(m.group(2)) == 2000
    again = run_pytest(tmp_path, *args, "--fuzz-seed", "last")
    assert f"--fuzz-seed={m.group(1)} (the last run's)" in again.stdout, again.stdout
    ci = run_pytest(tmp_path, *args)
    assert "--fuzz-seed=0 (fixed: the profile is derandomized), profile ci: 150 cases" in ci.stdout
    given = run_pytest(tmp_path, *args, "--fuzz-seed", "123", "--fuzz-cases", "25")
    assert "--fuzz-seed=123 (given)" in given.stdout
    # --fuzz-cases N means N cases (a profile's number covers every combination at least once)
    assert len(re.findall(r"<Function test_case\[llvm-", given.stdout)) == 25


def test_profiles_and_usage_errors(tmp_path):
    conftest = ("from hypothesis import settings\n"
                "settings.register_profile('tiny', max_examples=9)\n")
    base = ["-m", "differential", "--collect-only", "-q", "--fuzz-targets", "llvm"]
    tiny = run_pytest(tmp_path, *base, "--fuzz-profile", "tiny", conftest=conftest)
    assert tiny.returncode == 0, tiny.stdout + tiny.stderr
    assert len(re.findall(r"::test_case\[llvm-", tiny.stdout)) == max(9, llvm_combos())
    # fewer cases than combinations: exactly that many, spread over the combinations
    few = run_pytest(tmp_path, *base, "--fuzz-cases", "3", conftest=conftest)
    ids = re.findall(r"::test_case\[llvm-(\w+)-([\w-]+)-\d+\]", few.stdout)
    assert len(ids) == 3 and len({w for w, _ in ids}) == 3, few.stdout
    for args, needle in [(["--fuzz-profile", "nope"], "no profile 'nope'"),
                         (["--fuzz-seed", "abc"], "expected an integer or 'last'"),
                         (["--fuzz-workloads", "nope"], "unknown workload 'nope'"),
                         (["--fuzz-targets", "vulkan"], "unknown target 'vulkan'"),
                         (["--fuzz-known-bugs", tmp_path / "none.toml"], "cannot read known-bugs")]:
        r = run_pytest(tmp_path, *base, *args)
        assert r.returncode == 4 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_unavailable_target_is_skipped_with_reason(tmp_path):
    from fuzzharness.backends import backends
    from fuzzharness.generators.cases import TARGET_PRESETS

    reason = backends["cuda"].unavailable(TARGET_PRESETS["cuda"])
    if reason is None:
        pytest.skip("this machine runs CUDA")
    r = run_pytest(tmp_path, "-m", "differential", "-rs", "--fuzz-targets", "cuda")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "passed" not in r.stdout.splitlines()[-1]
    skipped = re.search(r"SKIPPED \[(\d+)\] .*target cuda unavailable on this machine: (.*)",
                        r.stdout)
    assert skipped and int(skipped.group(1)) >= 1 and reason[:40] in skipped.group(2), r.stdout
    assert "fuzzharness: target cuda skipped" in r.stdout


def test_corpus_entries(tmp_path):
    """reproduces → xfail(strict); a fixed bug XPASSes and fails; fixed entries must pass."""
    import fuzzharness.testing.wrong_programs  # noqa: F401
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.execution.stages import execute
    from fuzzharness.generators.cases import GenSettings, generate_case

    def case(workload):
        c = generate_case(5, 0, GenSettings(workloads=(workload,), dtypes=("float32",),
                                            max_steps=0, metaschedule_fraction=0,
                                            option_fraction=0))
        return c, execute(c).verdict

    bad, bad_v = case("test_matmul_off_by_one")
    good, good_v = case("matmul")
    assert bad_v.status.value == "wrong_result" and good_v.status.value == "pass"
    sig = signature(bad.to_dict(), bad_v).to_dict()
    corpus = tmp_path / "corpus"
    # repro.py stand-ins keep only the scripts' contract (exit 1 and the runner's verdict line
    # while the bug reproduces: fuzzharness.repro.verify)
    standin = "import sys\nif {code} == 1:\n    print('RESULT: the bug reproduces (exit 1)')\nsys.exit({code})\n"
    entries = {"open-bug": (bad, "reproduces", 1), "fixed-upstream": (good, "reproduces", 0),
               "stays-fixed": (good, "fixed", None), "regressed": (bad, "fixed", None),
               "script-disagrees": (bad, "reproduces", 0)}
    for name, (c, expected, script_exit) in entries.items():
        (corpus / name).mkdir(parents=True)
        (corpus / name / "case.json").write_text(c.to_json())
        if script_exit is not None:
            (corpus / name / "repro.py").write_text(standin.format(code=script_exit))
        (corpus / name / "meta.json").write_text(json.dumps({
            "signature": sig, "expected": expected, "upstream": "https://example.org/issue/1",
            "date": "2026-11-21"}))
    # a failure while the schedule was drawn: case.json holds the trace before the failing
    # call (it passes when replayed); the script makes the call; the stored verdict is the bug
    from fuzzharness.core.verdict import Stage, Status, Verdict

    drawn = Verdict(Status.COMPILE_ERROR, Stage.SCHEDULE, "InternalError: Check failed: x",
                    details={"site": "s_tir/schedule/primitive/reindex.cc:ReIndex"})
    (corpus / "draw-failure").mkdir(parents=True)
    (corpus / "draw-failure" / "case.json").write_text(good.replace(origin=dict(
        good.origin, failing_call="sch.reindex(block=b1, buffer=('read', 0))",
        failing_verdict=drawn.to_dict())).to_json())
    (corpus / "draw-failure" / "repro.py").write_text(standin.format(code=1))
    (corpus / "draw-failure" / "meta.json").write_text(json.dumps({
        "signature": signature(None, drawn).to_dict(), "expected": "reproduces",
        "upstream": "", "date": "2026-11-21"}))
    (corpus / "broken").mkdir()
    (corpus / "broken" / "case.json").write_text(good.to_json())
    (corpus / "broken" / "meta.json").write_text("{not json")
    r = run_pytest(tmp_path / "suite", "-m", "differential", "-v", "-rA", "--fuzz-corpus", corpus,
                   "--fuzz-targets", "llvm", "--fuzz-workloads", "matmul", "--fuzz-dtypes",
                   "float32", "--fuzz-cases", "1", plugins=WRONG)
    got = {k: v for k, v in outcomes(r.stdout).items() if k.startswith("test_corpus")}
    assert got == {"test_corpus[broken]": "FAILED", "test_corpus[fixed-upstream]": "FAILED",
                   "test_corpus[draw-failure]": "XFAIL",
                   "test_corpus[open-bug]": "XFAIL", "test_corpus[regressed]": "FAILED",
                   "test_corpus[script-disagrees]": "FAILED",
                   "test_corpus[stays-fixed]": "PASSED"}, r.stdout
    assert "[XPASS(strict)] open upstream bug (https://example.org/issue/1)" in r.stdout
    assert 'set expected = "fixed"' in r.stdout
    assert "corpus entry regressed is marked fixed but fails again" in r.stdout
    assert "corpus entry script-disagrees: repro.py exits 0 (fixed) but replaying case.json " \
           "reproduces bucket" in r.stdout
    assert "corpus entry" in r.stdout and "meta.json" in r.stdout  # the broken one says why


def test_the_llvm_items_are_the_same_with_and_without_opencl():
    """The sample is planned over every requested target, available or not: a machine
    without an OpenCL runtime runs exactly the llvm cases of one with it (and skips the
    rest), so "green on this TVM" means the same thing everywhere."""
    from pathlib import Path

    from fuzzharness.differential.plan import State, plan_combinations, sample

    runnable, skipped, _ = plan_combinations(("llvm", "opencl"), None, None)
    every = sorted(runnable + skipped, key=lambda c: ("llvm", "opencl").index(c[0]))
    opencl = [c for c in every if c[0] == "opencl"]
    llvm = [c for c in every if c[0] == "llvm"]
    assert opencl and llvm

    def plan(unavailable):
        state = State(seed=0, seed_origin="test", profile="ci", n_cases=max(150, len(every)),
                      cases_given=False,
                      max_steps=8, targets=["llvm", "opencl"], target_filter=("llvm", "opencl"),
                      workloads=None, dtypes=None,
                      combos=[c for c in every if c[0] not in unavailable],
                      skipped=[c for c in every if c[0] in unavailable], planned=every,
                      unavailable=unavailable, workers=1, timeout=60, corpus=Path("."),
                      out=Path("."), known_bugs=None)
        return [s for s in sample(state) if s.target == "llvm"]

    with_cl, without_cl = plan({}), plan({"opencl": "no OpenCL runtime"})
    assert with_cl == without_cl and len(with_cl) >= len(llvm)


def test_baseline_turns_old_failures_into_xfail_and_new_ones_into_regressions(tmp_path):
    """--fuzz-baseline: the off-by-one program fails on this TVM; under a baseline on which it
    fails too it is xfail (pre-existing), under one that compiles it right (an interpreter
    wrapper that sets the plugin's FIXED_ENV) it FAILs as a regression."""
    from fuzzharness.testing.wrong_programs import FIXED_ENV

    fixed = tmp_path / "python"
    fixed.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{ROOT}" {FIXED_ENV}=1 '
                     f'exec {sys.executable} "$@"\n')
    fixed.chmod(0o755)
    # seed 18: its 3 cases fail only by the off-by-one, matching no known bug's raw pattern
    # (since the illegal proposals of generators/schedules/base.py, seed 14's third case also
    # hits a real TVM nan, pre-existing on both TVMs; seed 15's looks like a known bug)
    args = ["-m", "differential", "-v", "-rx", "--fuzz-seed", "18", "--fuzz-targets", "llvm",
            "--fuzz-workloads", "test_matmul_off_by_one", "--fuzz-dtypes", "float32",
            "--fuzz-cases", "3"]
    results = {}
    for name, base in (("same", sys.executable), ("fixed", fixed)):
        r = run_pytest(tmp_path / name, *args, "--fuzz-baseline", base, plugins=WRONG)
        results[name] = (r, {k: v for k, v in outcomes(r.stdout).items() if "off_by_one" in k})
    r, got = results["same"]
    assert "XFAIL" in got.values() and "FAILED" not in got.values(), r.stdout + r.stderr
    assert "pre-existing: also fails on TVM" in r.stdout + r.stderr
    assert re.search(r"against TVM \S+: 0 regression, [1-9]\d* pre-existing", r.stdout), r.stdout
    r, got = results["fixed"]
    assert r.returncode == 1 and "FAILED" in got.values() and "XFAIL" not in got.values(), r.stdout
    assert "regression: passes on TVM" in r.stdout, r.stdout
    assert re.search(r"against TVM \S+: [1-9]\d* regression, 0 pre-existing", r.stdout), r.stdout
