"""The repro exit contract: exit 1 only when TVM misbehaves.  A fault of the script's own code
(making inputs, converting outputs, the reference, the judge, loading the script) is exit 2
with a ``SCRIPT ERROR`` line, and the harness never counts it as verified — while TVM's own
wrong results and errors keep reproducing (exit 1)."""

from __future__ import annotations

import re
import sys

import pytest

from fuzzharness.buckets.signatures import signature
from fuzzharness.core.tvm_support import versions
from fuzzharness.core.verdict import Status
from fuzzharness.execution.stages import execute
from fuzzharness.kinds.tir.script import write_script
from fuzzharness.repro.package import write_repro
from fuzzharness.repro.verify import run_script
from tests.test_repro import loop_partition, repro_of, scheduled, vectorized_unit_loop_with_unroll


def test_an_uncaught_exception_is_not_a_reproduction(tmp_path):
    """Python exits 1 on any uncaught exception: without the runner's verdict line that
    is the script's fault (status 2), not TVM's bug — a script written before the contract."""
    (tmp_path / "old.py").write_text("raise ValueError('could not convert string to float')\n")
    run = run_script(tmp_path / "old.py")
    assert run.exit_code == 1 and not run.reproduced and run.status == 2
    assert "could not convert string to float" in run.script_fault
    (tmp_path / "ok.py").write_text(
        "import sys\nprint('RESULT: the bug reproduces (exit 1)')\nsys.exit(1)\n")
    run = run_script(tmp_path / "ok.py")
    assert run.reproduced and run.status == 1 and run.script_fault is None


@pytest.fixture(scope="module")
def wrong_sum_script(tmp_path_factory):
    """A real TVM 0.27 wrong result (loop_partition re-runs a reduction's init): its script."""
    case = scheduled("row_sum", {"M": 1, "N": 3, "dtype": "float32"}, loop_partition)
    verdict = execute(case).verdict
    assert verdict.status is Status.WRONG_RESULT
    sig = signature(case.to_dict(), verdict)
    s = write_script(case, verdict, bucket=sig.key, signature=sig, versions=versions())
    return case, verdict, sig, s


#: (where the fault is put, what replaces what, the part the SCRIPT ERROR line names)
FAULTS = {
    "reference": ("def reference(x):\n", "def reference(x):\n    float('bf16')\n",
                  "while computing the float64 reference"),
    "judge": ("def _judge(outputs, expected):\n",
              "def _judge(outputs, expected):\n    np.asarray(['x']).astype(np.float64)\n",
              "while judging the outputs"),
    "inputs": ("def make_inputs():\n", "def make_inputs():\n    [][0]\n", "(stage inputs, not inside TVM)"),
    "output conversion": ("def from_kernel(name, array):\n",
                          "def from_kernel(name, array):\n    array.astype('no such dtype')\n",
                          "(stage run, not inside TVM)"),
    "module load": ("# -- the schedule ", "undefined_name_in_the_script\n# -- the schedule ",
                    "while loading the script"),
}


@pytest.mark.slow
@pytest.mark.parametrize("where", list(FAULTS))
def test_a_fault_of_the_scripts_own_code_exits_2(wrong_sum_script, tmp_path, where):
    *_, s = wrong_sum_script
    old, new, part = FAULTS[where]
    assert s.text.count(old) == 1
    (tmp_path / "repro.py").write_text(s.text.replace(old, new))
    run = run_script(tmp_path / "repro.py")
    assert run.exit_code == 2 and not run.reproduced, run.output
    assert "SCRIPT ERROR: the repro script's own code failed" in run.output and part in run.output, \
        run.output
    assert "RESULT: something else happened (exit 2)" in run.output


@pytest.mark.slow
def test_the_harness_never_verifies_a_script_whose_judge_raises(wrong_sum_script, tmp_path):
    case, verdict, sig, s = wrong_sum_script
    outcome = write_repro(tmp_path / "good", case, verdict, bucket=sig.key, signature=sig,
                          versions=versions(), triage=False, script=s)
    assert outcome.reproduced, outcome.runs[-1].output  # the other side: TVM's bug reproduces
    old, new, _ = FAULTS["judge"]
    s.text = s.text.replace(old, new)
    outcome = write_repro(tmp_path / "bad", case, verdict, bucket=sig.key, signature=sig,
                          versions=versions(), triage=False, script=s)
    assert not outcome.reproduced and outcome.record["reproduced"] is False
    assert not (tmp_path / "bad" / "issue.md").exists()
    assert "SCRIPT ERROR" in (tmp_path / "bad" / "NOT-REPRODUCED.md").read_text()


@pytest.mark.slow
def test_an_error_text_raised_by_the_script_is_not_tvms_error(tmp_path):
    """A compile-error repro matches TVM's message by pattern: the same words raised by the
    script's own code (outside TVM) must not count, while TVM's raise still does."""
    case = scheduled("matmul", {"M": 1, "N": 4, "K": 8, "dtype": "float32"},
                     vectorized_unit_loop_with_unroll)
    verdict, outcome = repro_of(case, tmp_path / "lanes")
    assert verdict.status is Status.COMPILE_ERROR and outcome.reproduced, outcome.runs[-1].output
    text = (outcome.dir / "repro.py").read_text()
    message = re.search(r"Check failed: [^\n']*", verdict.message).group()
    forged = text.replace('    _stage("compile")\n',
                          f'    _stage("compile")\n    raise RuntimeError({message!r})\n', 1)
    assert forged != text
    (tmp_path / "forged.py").write_text(forged)
    run = run_script(tmp_path / "forged.py")
    assert run.exit_code == 2 and "SCRIPT ERROR" in run.output and "stage compile" in run.output, \
        run.output


@pytest.mark.slow
def test_a_bfloat16_repro_judges_its_output(tmp_path):
    """bfloat16 outputs cross from the child as float32: the judge reads them (it raised on
    numpy's raw bytes and the script exited 1, "reproducing" whatever TVM computed)."""
    case = scheduled("row_sum", {"M": 1, "N": 3, "dtype": "bfloat16"}, loop_partition)
    verdict, outcome = repro_of(case, tmp_path / "bf16")
    assert verdict.status is Status.WRONG_RESULT
    assert outcome.reproduced, outcome.runs[-1].output
    assert "B[0]: got 1.0, expected 3.0" in outcome.runs[0].output
    text = (outcome.dir / "repro.py").read_text()
    fixed = "\n".join(ln for ln in text.splitlines() if "sch.loop_partition(" not in ln)
    (tmp_path / "fixed.py").write_text(fixed)
    run = run_script(tmp_path / "fixed.py")
    assert run.exit_code == 0 and "RESULT: fixed" in run.output, run.output


def test_the_hook_leaves_the_child_alone():
    """The child's exceptions are judged by the parent (stage, TVM or not): the excepthook is
    installed only in the parent."""
    from fuzzharness.repro import template

    ns = {"sys": sys, "os": __import__("os")}
    saved = sys.excepthook, sys.argv
    try:
        sys.argv = ["repro.py", "--child", "out.npz"]
        exec(template.PRELUDE, ns)  # noqa: S102
        assert sys.excepthook is saved[0]
        sys.argv = ["repro.py"]
        exec(template.PRELUDE, ns)  # noqa: S102
        assert sys.excepthook is ns["_script_fault"]
    finally:
        sys.excepthook, sys.argv = saved
