"""GPU paths: launch plans, OpenCL/Adreno kernels run on an OpenCL CPU runtime, CUDA via nvcc.

Everything here uses the real TVM, the real OpenCL runtime (PoCL in CI, plus Intel's CPU
runtime for fp16 when ``.ci/install-opencl`` installed it) and the real nvcc.  Where one is
missing the test is skipped with the reason — except under CI (``CI=true``), where .ci/run
installs them and a missing runtime is a failure, so CI cannot go green by skipping.
No test needs a GPU: the CUDA path is checked up to the launch (cubin, launch plan,
kernel-parameter marshalling).
"""

from __future__ import annotations

import ctypes
import json
import sqlite3

import numpy as np
import pytest

from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import trace_to_json
from fuzzharness.core.verdict import Stage, Status
from fuzzharness.execution.stages import execute
from fuzzharness.generators.workloads import workloads
from tests.conftest import need, repro_of, run_cli

ADRENO = {"kind": "opencl", "device": "adreno"}


_need = need  # skip with the reason; under CI (CI=true, .ci/run installs them all) fail


@pytest.fixture
def opencl():
    from fuzzharness.backends.opencl import choose_device

    found = choose_device(False, True)
    _need(found if isinstance(found, str) else None)


@pytest.fixture
def nvcc():
    from fuzzharness.backends.cuda import nvcc_path

    _need(None if nvcc_path() else "nvcc is not on PATH (.ci/install-nvcc installs NVIDIA's "
          "from PyPI: eval \"$(bash .ci/install-nvcc)\")")


def _case(workload, params, sch, target, distribution="uniform", pass_config=None):
    return Case(workload={"name": workload, "params": params},
                inputs={"distribution": distribution, "seed": 5},
                schedule={"source": "test", "trace": trace_to_json(sch.trace)},
                target=target, pass_config=pass_config or {})


def _two_kernels_host_loop(params):
    """matmul where the row loop stays on the host and C goes through a global temporary."""
    from tvm import s_tir

    sch = s_tir.Schedule(workloads["matmul"].prim_func(params))
    blk = sch.get_sblock("C")
    cw = sch.cache_write(blk, 0, "global")
    _, j, _ = sch.get_loops(blk)
    sch.bind(j, "threadIdx.x")
    i2, j2 = sch.get_loops(cw)
    sch.bind(i2, "blockIdx.x")
    sch.bind(j2, "threadIdx.x")
    return sch


def test_launch_plan_is_read_from_the_lowered_host_function():
    from fuzzharness.backends.device import codegen_device, lower_device
    from fuzzharness.backends.launch_plan import LaunchPlan

    params = {"M": 5, "N": 16, "K": 8, "dtype": "float32"}
    sch = _two_kernels_host_loop(params)
    code = codegen_device(lower_device(sch.mod, {"kind": "cuda", "arch": "sm_90"}, {}),
                          {"kind": "cuda", "arch": "sm_90"})
    plan = code.plan
    assert [p.name for p in plan.params] == ["A", "B", "C"]
    assert [(t.name, t.elements) for t in plan.temps] == [("C_global", 80)]
    # one launch per iteration of the host loop, the loop variable as an int32 argument
    compute = [x for x in plan.launches if x.kernel == "main_kernel"]
    assert [x.args[-1] for x in compute] == [{"scalar": i, "dtype": "int32"} for i in range(5)]
    assert all(x.args[:3] == [{"param": 0}, {"param": 1}, {"temp": "C_global"}] for x in compute)
    assert all((x.grid, x.block) == ([1, 1, 1], [16, 1, 1]) for x in compute)
    copy = plan.launches[-1]
    assert copy.kernel == "main_kernel_1" and copy.grid == [5, 1, 1] and copy.block == [16, 1, 1]
    assert [t.kind for t in plan.kernels["main_kernel"]] == ["buffer", "buffer", "buffer", "scalar"]
    assert "__global__ void __launch_bounds__(16) main_kernel" in code.source
    again = LaunchPlan.from_dict(json.loads(json.dumps(plan.to_dict())))
    assert again == plan


def test_a_host_loops_launches_are_written_once_in_a_repro():
    """A host loop around a kernel launch makes one launch per iteration (2 048 of them,
    21 078 lines, in a README campaign's repro): the script's plan writes the loop once and
    expands it back to exactly the launches TVM's host function makes.  Launches whose
    scalars do not count through a range, and runs too short to shorten, stay as they are."""
    from fuzzharness.backends.device import codegen_device, lower_device
    from fuzzharness.backends.launch_plan import compact_launches, expand_launches
    from fuzzharness.repro.gpu_runtime import launch_source

    target = {"kind": "opencl"}
    params = {"M": 6, "N": 16, "K": 8, "dtype": "float32"}
    sch = _two_kernels_host_loop(params)
    plan = codegen_device(lower_device(sch.mod, target, {}), target).plan
    launches = plan.to_dict()["launches"]
    assert [x["kernel"] for x in launches] == ["main_kernel"] * 6 + ["main_kernel_1"]
    compact = compact_launches(launches)
    assert len(compact) == 2 and compact[0]["loops"] == [[0, 6, 1]] and compact[1] == launches[-1]
    assert compact[0]["args"][-1] == {"loop": 0, "dtype": "int32"}
    assert expand_launches(compact) == launches
    text = launch_source(_case("matmul", params, sch, target), sch.mod)
    assert "'loops': [[0, 6, 1]]" in text and len(text.splitlines()) < 60
    space: dict = {}
    exec(text, space)  # noqa: S102 - the script's own section
    assert space["LAUNCH"]["launches"] == launches
    assert len(plan.summary().splitlines()) == 2
    # two nested host loops (the README repro's 8 x 256), the inner one's variable first
    nested = [dict(launches[0], args=[{"scalar": b, "dtype": "int32"}, {"scalar": a, "dtype": "int64"}])
              for a in range(2) for b in range(0, 9, 3)]
    (looped,) = compact_launches(nested)
    assert looped["loops"] == [[0, 2, 1], [0, 9, 3]]
    assert looped["args"] == [{"loop": 1, "dtype": "int32"}, {"loop": 0, "dtype": "int64"}]
    assert expand_launches([looped]) == nested
    uneven = [x for x in launches if x["args"][-1] != {"scalar": 2, "dtype": "int32"}]
    assert compact_launches(uneven) == uneven  # 0, 1, 3, 4, 5: no range
    assert compact_launches(launches[:2] + launches[-1:]) == launches[:2] + launches[-1:]
    two = _two_kernels_host_loop(dict(params, M=2))
    assert "expand_launches" not in launch_source(_case("matmul", dict(params, M=2), two, target),
                                                  two.mod)


def test_opencl_runs_tvm_kernels_through_the_plan(opencl):
    params = {"M": 5, "N": 16, "K": 8, "dtype": "float32"}
    outcome = execute(_case("matmul", params, _two_kernels_host_loop(params), {"kind": "opencl"}))
    v = outcome.verdict
    assert v.status is Status.PASS, v.line()
    assert set(v.timings) >= {"lower", "codegen", "build", "run", "verify"}
    # same program on llvm: bound-level agreement is the oracle's job; bits are not required
    assert np.isfinite(outcome.outputs["C"]).all()


def _tail_predicate_row_sum() -> Case:
    """A real TVM bug: the cross-thread reduction's write-back ignores the tail predicate."""
    from tvm import s_tir

    p = {"M": 34, "N": 32, "dtype": "float32"}
    sch = s_tir.Schedule(workloads["row_sum"].prim_func(p))
    i, j = sch.get_loops(sch.get_sblock("B"))
    bx, ty = sch.split(i, [None, 8])
    _, ji = sch.split(j, [None, 16])
    sch.bind(bx, "blockIdx.x")
    sch.bind(ty, "threadIdx.y")
    sch.bind(ji, "threadIdx.x")
    return _case("row_sum", p, sch, {"kind": "opencl"})


def test_out_of_bounds_write_is_a_crash_verdict_not_a_dead_worker(opencl):
    v = execute(_tail_predicate_row_sum()).verdict
    assert (v.status, v.stage) == (Status.CRASH, Stage.RUN), v.line()
    assert "out-of-bounds write" in v.message and v.details["oob_write"]["buffer"] == "B"


@pytest.mark.slow
def test_an_opencl_kernel_bug_gets_a_standalone_script_that_reproduces(opencl, tmp_path):
    """TVM lowers and generates the OpenCL C in the script itself; pyopencl launches it by the
    embedded launch plan, each buffer followed by a guard zone — the same finding, alone."""
    from fuzzharness.repro.verify import foreign_imports, run_script

    case = _tail_predicate_row_sum()
    verdict = execute(case).verdict
    out = repro_of(tmp_path / "oob", case, verdict)
    assert out.reproduced, out.runs[-1].output
    text = (out.dir / "repro.py").read_text()
    assert foreign_imports(text) == [] and "fuzzharness." not in text.split('"""', 2)[2]
    assert "device_source(sch.mod)" in text and "'kernel': 'main_kernel'" in text
    assert "the kernel wrote past the end of B" in out.runs[0].output
    assert (out.dir / "issue.md").exists()
    # the launch plan is checked against TVM's source: a stale kernel name is not a finding
    stale = tmp_path / "stale.py"
    stale.write_text(text.replace("'main_kernel'", "'other_kernel'"))
    run = run_script(stale)
    assert run.exit_code == 2 and "no kernel ['other_kernel']" in run.output, run.output


@pytest.mark.slow
@pytest.mark.parametrize("which", ["texture images", "host loop, temporary, scalar argument"])
def test_an_opencl_script_of_a_correct_kernel_says_fixed(opencl, which, tmp_path):
    """The other side: correct programs (texture-scope images; two kernels, a host loop with
    its loop variable as a scalar argument and a global temporary) written as if they had
    given a wrong result: the script runs them and finds the output correct (exit 0)."""
    import dataclasses

    from fuzzharness.core.tvm_support import versions
    from fuzzharness.kinds.tir.script import write_script
    from fuzzharness.repro.verify import run_script

    if which == "texture images":
        case = _texture_case("float32")
    else:
        params = {"M": 5, "N": 16, "K": 8, "dtype": "float32"}
        case = _case("matmul", params, _two_kernels_host_loop(params), {"kind": "opencl"})
    verdict = execute(case).verdict
    assert verdict.status is Status.PASS, verdict.line()
    wrong = dataclasses.replace(verdict, status=Status.WRONG_RESULT, stage=Stage.VERIFY)
    script = write_script(case, wrong, bucket="0" * 16, signature=None, versions=versions())
    (tmp_path / "repro.py").write_text(script.text)
    run = run_script(tmp_path / "repro.py")
    assert run.exit_code == 0 and "RESULT: fixed" in run.output, run.output


def _texture_case(dtype, scope_a="global.texture-nhwc", scope_b="global.texture-weight"):
    from tvm import s_tir

    p = {"M": 6, "N": 8, "K": 12, "dtype": dtype, "scope_A": scope_a, "scope_B": scope_b}
    sch = s_tir.Schedule(workloads["matmul_texture"].prim_func(p))
    i, j, _ = sch.get_loops(sch.get_sblock("C"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    return _case("matmul_texture", p, sch, ADRENO)


def test_texture_scope_parameters_run_as_images_on_the_cpu(opencl):
    from tvm.target import Target

    from fuzzharness.backends import backends
    from fuzzharness.backends.device import select_pipeline

    assert select_pipeline(Target(ADRENO))[0] == "adreno"
    case = _texture_case("float32")
    outcome = execute(case)
    assert outcome.verdict.status is Status.PASS, outcome.verdict.line()
    be = backends["opencl"]
    code = be.codegen(be.lower(outcome.scheduled, ADRENO, {}), ADRENO)
    assert "__read_only image2d_array_t A_ptr" in code.source and "READ_IMAGEF" in code.source
    assert [t.scope for t in code.plan.kernels["main_kernel"][:2]] == [
        "global.texture-nhwc", "global.texture-weight"]


def test_fp16_textures_need_an_fp16_device():
    from fuzzharness.backends.opencl import choose_device

    v = execute(_texture_case("float16-acc32", "global.texture", "global.texture")).verdict
    if isinstance(choose_device(True, True), str):
        assert (v.status, v.stage) == (Status.INCONCLUSIVE, Stage.RUN), v.line()
        assert "cl_khr_fp16" in v.details["not_run"] or "OpenCL" in v.details["not_run"]
    else:
        assert v.status is Status.PASS, v.line()


def test_texture_layout_follows_tvm_flattening():
    from fuzzharness.backends.opencl import texture_layout

    # [N, C, H, W, c]: texture → depth N*C, height H, width W; weight → height N, width C*H*W
    assert texture_layout([2, 3, 5, 7, 4], "global.texture", "float32") == \
        texture_layout([6, 5, 7, 4], "global.texture", "float32")
    t = texture_layout([2, 3, 5, 7, 4], "global.texture", "float32")
    assert (t.depth, t.height, t.width, t.channel_bits) == (6, 5, 7, 128)
    w = texture_layout([2, 3, 5, 7, 4], "global.texture-weight", "float16")
    assert (w.depth, w.height, w.width, w.channel_bits) == (1, 2, 105, 64)
    n = texture_layout([2, 3, 5, 7, 4], "global.texture-nhwc", "float32")
    assert (n.depth, n.height, n.width) == (2, 3, 35)


def test_cuda_is_compiled_by_nvcc_and_not_run_without_a_gpu(nvcc):
    params = {"M": 5, "N": 16, "K": 8, "dtype": "float16"}
    v = execute(_case("matmul", params, _two_kernels_host_loop(params),
                      {"kind": "cuda", "arch": "sm_90"})).verdict
    from fuzzharness.backends.cuda import run_reason

    if run_reason("sm_90") is None:  # a GPU host: the case really ran
        assert v.status is Status.PASS, v.line()
    else:
        assert (v.status, v.stage) == (Status.INCONCLUSIVE, Stage.RUN), v.line()
        assert v.timings["build"] > 0 and "no CUDA device" in v.details["not_run"]


@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_cuda_codegen_runs_in_the_cases_target_scope(arch):
    """On a host with an NVIDIA driver TVM's CUDA codegen compiles with NVRTC and takes the
    arch from ``Target.current()``, else from the GPU (which failed intermittently in workers
    on an H200).  TVM calls ``tvm_callback_cuda_postproc`` on every host, in the same place:
    it sees the case's target, with the case's arch, as current."""
    import tvm
    import tvm_ffi

    from fuzzharness.backends.device import codegen_device, lower_device

    seen = []

    def postproc(code, target=None):
        seen.append(tvm.target.Target.current(allow_none=True))
        return code

    tvm_ffi.register_global_func("tvm_callback_cuda_postproc", postproc, override=True)
    try:
        params = {"M": 5, "N": 16, "K": 8, "dtype": "float32"}
        target = {"kind": "cuda", "arch": arch}
        codegen_device(lower_device(_two_kernels_host_loop(params).mod, target, {}), target)
    finally:
        tvm_ffi.remove_global_func("tvm_callback_cuda_postproc")
    assert seen and all(t is not None and str(t.attrs["arch"]) == arch for t in seen), seen


def test_nvcc_refusal_is_a_build_error_with_the_source_kept(nvcc):
    params = {"M": 5, "N": 16, "K": 8, "dtype": "float32"}
    v = execute(_case("matmul", params, _two_kernels_host_loop(params),
                      {"kind": "cuda", "arch": "sm_10"})).verdict
    assert (v.status, v.stage) == (Status.COMPILE_ERROR, Stage.BUILD), v.line()
    assert v.details["compiler"] == "nvcc" and "compute_10" in v.details["log"]
    assert "main_kernel" in v.details["source"] and "main_kernel<<<" in v.details["launch_plan"]


@pytest.mark.slow
def test_an_nvcc_refusal_gets_a_cuda_script_that_reproduces_without_a_gpu(nvcc, tmp_path):
    """The CUDA script lowers, generates and runs nvcc before it needs a GPU: a build-stage
    bug reproduces on any machine with nvcc; the same program for an arch nvcc accepts
    (sm_90) builds there, and the script then needs a GPU — never "reproduces" without one."""
    from fuzzharness.repro.verify import run_script

    params = {"M": 5, "N": 16, "K": 8, "dtype": "float32"}
    case = _case("matmul", params, _two_kernels_host_loop(params), {"kind": "cuda", "arch": "sm_10"})
    verdict = execute(case).verdict
    out = repro_of(tmp_path / "nvcc", case, verdict)
    assert out.reproduced, out.runs[-1].output
    text = (out.dir / "repro.py").read_text()
    assert "cubin = nvcc(source" in text and "# -- the CUDA launches" in text
    assert "nvcc failed" in out.runs[0].output
    accepted = tmp_path / "sm90.py"
    accepted.write_text(text.replace("'arch': 'sm_10'", "'arch': 'sm_90'"))
    run = run_script(accepted)
    assert run.exit_code != 1, run.output


def test_cuda_kernel_params_point_at_the_argument_values():
    from fuzzharness.backends.cuda import kernel_params

    holders, params = kernel_params([("buffer", "float16", 0x7F0012345600),
                                     ("scalar", "int32", -7), ("scalar", "float32", 1.5)])
    assert params.dtype == np.uint64 and len(params) == 3
    assert ctypes.c_uint64.from_address(int(params[0])).value == 0x7F0012345600
    assert ctypes.c_int32.from_address(int(params[1])).value == -7
    assert ctypes.c_float.from_address(int(params[2])).value == 1.5
    del holders


@pytest.mark.parametrize("dtype", ["float16-acc32", "int8-acc32"])
def test_tensor_core_schedules_compile_with_wmma(dtype, nvcc):
    """MetaSchedule's cuda-tensorcore space tensorizes with TVM's wmma intrinsics."""
    from fuzzharness.generators import draw
    from fuzzharness.generators.cases import TARGET_PRESETS
    from fuzzharness.generators.gpu.base import GpuTarget
    from fuzzharness.generators.gpu.metaschedule_style import MetaScheduleStyle

    target = TARGET_PRESETS["cuda"]
    p = {"M": 32, "N": 32, "K": 64, "dtype": dtype}
    func = workloads["matmul_tc"].prim_func(p)
    data = draw.from_choices([1, 42, 0])  # kind = cuda-tensorcore, rand_state 42, space 0
    gs = MetaScheduleStyle().schedule(func, data, GpuTarget(target))
    text = json.dumps(trace_to_json(gs.sch.trace))
    assert "Tensorize" in text and "wmma_sync_16x16x16" in text, gs.notes
    from fuzzharness.backends import backends

    be = backends["cuda"]
    case = _case("matmul_tc", p, gs.sch, target, distribution="small_ints")
    outcome = execute(case)
    v = outcome.verdict
    # TVM 0.27 fails to lower these mixed-precision wmma schedules ("tvm_access_ptr element
    # type must match the source buffer"): a finding, reported as compile_error at lower.
    assert v.status in (Status.INCONCLUSIVE, Status.PASS, Status.COMPILE_ERROR), v.line()
    if v.status is not Status.COMPILE_ERROR:
        code = be.codegen(be.lower(outcome.scheduled, target, {}), target)
        assert "nvcuda::wmma::mma_sync" in code.source


def test_metaschedule_samples_keep_their_seeds_in_tvms_range():
    from fuzzharness.generators.gpu.metaschedule_style import TRIES, attempt_seed

    for seed in (1, 42, 2**31 - 2):
        seeds = [attempt_seed(seed, a) for a in range(TRIES)]
        assert seeds[0] == seed and len(set(seeds)) == TRIES
        assert all(1 <= s <= 2**31 - 1 for s in seeds), seeds


@pytest.mark.slow
def test_a_tensorized_schedule_gets_a_script_that_registers_the_intrinsics(tmp_path):
    """A trace that tensorizes names TVM's tensor intrinsics (wmma_fill_16x16x16_f32...), which
    exist once ``tvm.s_tir.tensor_intrin`` is imported: the script imports it, and the lowering
    failure of these mixed-precision wmma schedules (TVM 0.27) reproduces alone — found on a
    GPU host, where the script without the import said "TensorIntrin ... is not registered"."""
    from fuzzharness.generators import draw
    from fuzzharness.generators.cases import TARGET_PRESETS
    from fuzzharness.generators.gpu.base import GpuTarget
    from fuzzharness.generators.gpu.metaschedule_style import MetaScheduleStyle

    target = TARGET_PRESETS["cuda"]
    p = {"M": 32, "N": 32, "K": 64, "dtype": "float16-acc32"}
    gs = MetaScheduleStyle().schedule(workloads["matmul_tc"].prim_func(p),
                                      draw.from_choices([1, 42, 0]), GpuTarget(target))
    case = _case("matmul_tc", p, gs.sch, target, distribution="small_ints")
    verdict = execute(case).verdict
    assert (verdict.status, verdict.stage) == (Status.COMPILE_ERROR, Stage.LOWER), verdict.line()
    out = repro_of(tmp_path / "tc", case, verdict)
    assert out.reproduced, out.runs[-1].output
    assert "import tvm.s_tir.tensor_intrin" in (out.dir / "repro.py").read_text()


@pytest.mark.slow
def test_generated_gpu_cases_are_deterministic_and_end_in_verdicts(opencl):
    from fuzzharness.generators.cases import TARGET_PRESETS, GenSettings, generate_case

    seen = set()
    for name in ("opencl", "adreno"):
        settings = GenSettings(target=TARGET_PRESETS[name], max_reduction=64)
        for i in range(8):
            case = generate_case(11, i, settings)
            assert case.id == generate_case(11, i, settings).id
            assert case.schedule["source"].startswith("gpu:")
            seen.add(case.origin["gpu_style"])
            v = execute(case).verdict
            assert v.status is not Status.HARNESS_ERROR, (case.origin, v.line(), v.details)
    assert "dlight" in seen and len(seen) >= 2, seen


@pytest.mark.slow
def test_campaign_on_the_adreno_target(tmp_path, opencl):
    out = tmp_path / "camp"
    r = run_cli("run", "--target", "adreno", "--seed", 3, "--max-cases", 6, "--workers", 1,
                "--no-progress", "--out", out)
    assert r.returncode in (0, 1), r.stderr
    assert "target adreno" in r.stderr
    rows = sqlite3.connect(out / "results.sqlite").execute("SELECT target, status FROM results").fetchall()
    assert len(rows) == 6 and {t for t, _ in rows} == {"adreno"}  # the target label
    assert "harness_error" not in {s for _, s in rows}


def test_unknown_target_is_a_usage_error(tmp_path):
    r = run_cli("run", "--target", "vulkan", "--max-cases", 1, "--out", tmp_path / "x")
    assert r.returncode == 2 and "unknown target 'vulkan'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("workload,status", [("test_matmul_off_by_one", Status.WRONG_RESULT),
                                             ("test_matmul_wrong_reference",
                                              Status.REFERENCE_MISMATCH)])
def test_failed_gpu_case_is_cross_checked_on_llvm(opencl, workload, status):
    """A GPU kernel that fails its bound gets the unscheduled program built for llvm as the
    cross-check of the reference (it cannot run unscheduled on the GPU target): a wrong
    kernel stays wrong_result, a wrong reference is reference_mismatch — never a harness
    error."""
    from tvm import s_tir

    import fuzzharness.testing.wrong_programs  # noqa: F401  (registers the workloads)

    p = {"M": 6, "N": 8, "K": 12, "dtype": "float32"}
    wl = workloads[workload]
    sch = s_tir.Schedule(wl.kernel_prim_func(p, wl.prim_func(p)))
    i, j, _ = sch.get_loops(sch.get_sblock("C"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    v = execute(_case(workload, p, sch, {"kind": "opencl"})).verdict
    assert (v.status, v.details.get("baseline")) == (status, "build"), v.line()


def test_loading_the_opencl_runtime_leaves_ctrl_c_to_the_harness():
    """Intel's OpenCL CPU runtime installs C-level SIGINT/SIGTERM handlers when loaded; in the
    driver (which probes OpenCL for the default target mix) a Ctrl-C then sometimes killed the
    process by SIGINT instead of the one line and exit 3.  After the probe the C-level handlers
    must still be Python's (checked in a child: pytest's own handlers stay out of it)."""
    import subprocess
    import sys

    from fuzzharness.backends.opencl import _devices

    found = _devices()
    _need(found if isinstance(found, str) else None)
    probe = """
import ctypes, signal
libc = ctypes.CDLL(None)
class Action(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]
def handlers():
    out = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        a = Action()
        libc.sigaction(sig, None, ctypes.byref(a))
        out.append(a.handler)
    return out
from fuzzharness.core import interrupt
interrupt.install()
before = handlers()
from fuzzharness.backends.opencl import _devices
assert not isinstance(_devices(), str)
after = handlers()
print("same" if before == after else f"changed {before} -> {after}")
"""
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "same", r.stdout + r.stderr


@pytest.mark.slow
def test_an_adreno_lowering_error_reproduces_through_the_adreno_pipeline(tmp_path):
    """tvm.compile skips the Adreno lowering pipeline (PIPELINE_FINDING, backends/device.py):
    a script that called it compiled this program and then failed to run it (exit 2).  The
    script lowers as the harness does, so TVM's texture-vectorize check fails there too."""
    from tvm import s_tir


    p = {"M": 1, "N": 12, "K": 212, "dtype": "float32", "scope_A": "global.texture-weight",
         "scope_B": "global.texture-nhwc"}
    sch = s_tir.Schedule(workloads["matmul_texture"].prim_func(p))
    _, j, _ = sch.get_loops(sch.get_child_blocks(sch.get_sblock("root"))[0])
    _, lanes = sch.split(j, [1, None])
    sch.vectorize(lanes)  # 12 float32 lanes of a texture load: more than a pixel's 4
    case = _case("matmul_texture", p, sch, ADRENO, distribution="ones")
    verdict = execute(case).verdict
    assert (verdict.status, verdict.stage) == (Status.COMPILE_ERROR, Stage.LOWER), verdict.line()
    out = repro_of(tmp_path / "lanes", case, verdict)
    assert out.reproduced, out.runs[-1].output
    assert "Texture Load length" in out.runs[0].output
    assert "LAUNCH = None" in (out.dir / "repro.py").read_text()
