"""The CUDA path on a real GPU: TVM's CUDA C, compiled by nvcc, launched through the driver.

CI has no GPU, so every test here is skipped there with the reason — also under ``CI=true``:
.ci/run cannot install a GPU, and the compile-only half of the path (nvcc, launch plans,
kernel parameters) is tested without one in ``tests/test_gpu.py``.  On a GPU host with nvcc
and ``cuda-bindings`` (the ``cuda`` extra) they run: ``python -m pytest tests/test_cuda_gpu.py``.
Each test checks both sides where it can: a correct kernel passes, a wrong one fails with the
verdict its bug deserves.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from fuzzharness.core.verdict import Stage, Status
from fuzzharness.execution.stages import execute
from fuzzharness.generators.workloads import workloads
from tests.conftest import repro_of, run_cli
from tests.test_gpu import _case, _two_kernels_host_loop


@pytest.fixture
def gpu_arch() -> str:
    """The GPU's ``sm_XY``; skips (never fails, not even under CI) where there is none."""
    from fuzzharness.backends.cuda import driver, nvcc_path

    if nvcc_path() is None:
        pytest.skip("nvcc is not on PATH")
    d = driver()
    if isinstance(d, str):
        pytest.skip(d)
    major, minor = d.compute_capability
    return f"sm_{major}{minor}"


def _target(arch: str) -> dict:
    return {"kind": "cuda", "arch": arch}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_correct_cuda_kernel_runs_and_passes(gpu_arch, dtype):
    """Two kernels, a host loop and a global temporary: launched as TVM's host code would."""
    params = {"M": 5, "N": 16, "K": 8, "dtype": dtype}
    outcome = execute(_case("matmul", params, _two_kernels_host_loop(params), _target(gpu_arch)))
    v = outcome.verdict
    assert v.status is Status.PASS, v.line()
    assert v.timings["run"] > 0 and "not_run" not in v.details
    again = execute(_case("matmul", params, _two_kernels_host_loop(params), _target(gpu_arch)))
    # the same kernel on the same inputs gives the same bits (no uninitialised memory read)
    assert np.array_equal(outcome.outputs["C"].view(np.uint8), again.outputs["C"].view(np.uint8))


def test_a_wrong_cuda_kernel_is_a_wrong_result(gpu_arch):
    from tvm import s_tir

    import fuzzharness.testing.wrong_programs  # noqa: F401  (registers the workloads)

    p = {"M": 6, "N": 8, "K": 12, "dtype": "float32"}
    wl = workloads["test_matmul_off_by_one"]
    sch = s_tir.Schedule(wl.kernel_prim_func(p, wl.prim_func(p)))
    i, j, _ = sch.get_loops(sch.get_sblock("C"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    v = execute(_case("test_matmul_off_by_one", p, sch, _target(gpu_arch))).verdict
    assert (v.status, v.stage) == (Status.WRONG_RESULT, Stage.VERIFY), v.line()


def _tail_predicate_row_sum(arch: str):
    """A real TVM bug (seen on OpenCL): the cross-thread reduction's write-back ignores the
    tail predicate, so threads past M write B."""
    from tvm import s_tir

    p = {"M": 34, "N": 32, "dtype": "float32"}
    sch = s_tir.Schedule(workloads["row_sum"].prim_func(p))
    i, j = sch.get_loops(sch.get_sblock("B"))
    bx, ty = sch.split(i, [None, 8])
    _, ji = sch.split(j, [None, 16])
    sch.bind(bx, "blockIdx.x")
    sch.bind(ty, "threadIdx.y")
    sch.bind(ji, "threadIdx.x")
    return _case("row_sum", p, sch, _target(arch))


def test_a_cuda_kernel_writing_past_a_buffer_is_a_crash(gpu_arch):
    v = execute(_tail_predicate_row_sum(gpu_arch)).verdict
    assert (v.status, v.stage) == (Status.CRASH, Stage.RUN), v.line()
    assert v.details["oob_write"]["buffer"] == "B"


def test_a_cuda_campaign_ends_in_verdicts(gpu_arch, tmp_path):
    out = tmp_path / "camp"
    r = run_cli("run", out, "--target", "cuda", "--max-cases", 24, "--workers", 2, "--seed", 3,
                "--minimize-budget", 0, "--quiet")
    assert r.returncode in (0, 1), r.stderr[-3000:]
    with sqlite3.connect(out / "results.sqlite") as db:
        rows = dict(db.execute("SELECT status, COUNT(*) FROM results GROUP BY status").fetchall())
    assert sum(rows.values()) == 24 and "harness_error" not in rows, rows
    assert "inconclusive" not in rows or rows["inconclusive"] < 24, rows  # kernels really ran


def test_a_cuda_kernel_bug_gets_a_standalone_script_that_reproduces(gpu_arch, tmp_path):
    """TVM lowers and generates the CUDA C in the script itself, nvcc compiles it, the CUDA
    driver launches it by the embedded launch plan with a guard zone after each buffer."""
    from fuzzharness.repro.verify import foreign_imports

    case = _tail_predicate_row_sum(gpu_arch)
    verdict = execute(case).verdict
    out = repro_of(tmp_path / "oob", case, verdict)
    assert out.reproduced, out.runs[-1].output
    text = (out.dir / "repro.py").read_text()
    assert foreign_imports(text) == [] and "fuzzharness." not in text.split('"""', 2)[2]
    assert "cubin = nvcc(source" in text and "'kernel': 'main_kernel'" in text
    assert "the kernel wrote past the end of B" in out.runs[0].output


def test_a_cuda_script_of_a_correct_kernel_says_fixed(gpu_arch, tmp_path):
    """The other side: a correct two-kernel program written as if it had given a wrong
    result: the script runs it on the GPU and finds the output correct (exit 0)."""
    import dataclasses

    from fuzzharness.core.tvm_support import versions
    from fuzzharness.kinds.tir.script import write_script
    from fuzzharness.repro.verify import run_script

    params = {"M": 5, "N": 16, "K": 8, "dtype": "float16"}
    case = _case("matmul", params, _two_kernels_host_loop(params), _target(gpu_arch))
    verdict = execute(case).verdict
    assert verdict.status is Status.PASS, verdict.line()
    wrong = dataclasses.replace(verdict, status=Status.WRONG_RESULT, stage=Stage.VERIFY)
    script = write_script(case, wrong, bucket="0" * 16, signature=None, versions=versions())
    (tmp_path / "repro.py").write_text(script.text)
    run = run_script(tmp_path / "repro.py")
    assert run.exit_code == 0 and "RESULT: fixed" in run.output, run.output
