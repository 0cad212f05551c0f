"""The CUDA backend: TVM's CUDA C, compiled by ``nvcc --cubin``, run through the CUDA driver.

Stages:

``lower``    TVM's s_tir pipeline for the CUDA target (:mod:`fuzzharness.backends.device`)
``codegen``  ``tir_to_runtime``: CUDA C for the kernels (host code generated too); the launch
             plan is read from the lowered host function
``build``    ``nvcc --cubin -O3 -gencode arch=compute_XX,code=sm_XX`` for the case's
             ``target["arch"]`` with the flags TVM's own nvcc path (``tvm/support/nvcc.py``)
             adds: the half/bfloat16 operator macros undefined, relaxed constexpr, extended
             lambdas and ``--use_fast_math`` — unless ``$TVM_CUDA_NVCC_NO_FAST_MATH`` is set,
             TVM's own switch (:data:`TVM_FLAGS`, :func:`oracles.target_math.cuda_fast_math`:
             the error model follows the same switch) — compile only, no GPU needed.  A refusal by nvcc is a ``compile_error`` at ``build`` with the CUDA
             source and nvcc's log in the verdict details.  Without nvcc the case stops after
             codegen, inconclusive (``not_run`` says why).
``run``      only on a host with a GPU whose compute capability matches the cubin: the
             kernels are launched as the plan says through the CUDA driver API, with
             NVIDIA's ``cuda-bindings`` (a wheel, the ``cuda`` extra) or, failing that,
             ``pycuda`` (an sdist that builds only where a driver is installed).  Elsewhere
             the case is inconclusive with ``not_run`` = the reason.

Why cuda-bindings first: it installs from a wheel everywhere (CI included), so the import
and the driver probe run in every test; pycuda needs a compiler, the CUDA headers and
libcuda to install, i.e. it can only ever be present on GPU hosts.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

import numpy as np

from fuzzharness.backends.base import Backend, poison, register
from fuzzharness.backends.device import (
    DeviceCode,
    DeviceProgram,
    GeneratedCodeError,
    codegen_device,
    lower_device,
)
from fuzzharness.backends.launch_plan import LaunchPlan
from fuzzharness.backends.redzone import check_redzone, redzone_bytes, with_redzone
from fuzzharness.oracles.numerics import numpy_dtype

DEFAULT_ARCH = "sm_90"
NVCC_TIMEOUT = 120.0
DEFAULT_SHARED_LIMIT = 48 * 1024  # above this a kernel must opt in to dynamic shared memory


def nvcc_path() -> str | None:
    return shutil.which(os.environ.get("FUZZHARNESS_NVCC", "nvcc"))


def arch_of(target: dict[str, Any]) -> str:
    arch = str(target.get("arch", DEFAULT_ARCH))
    if not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise ValueError(f"CUDA target arch must look like sm_90 or sm_90a, not {arch!r}")
    return arch


#: what ``tvm/support/nvcc.py`` (TVM 0.27) passes to nvcc besides the target and files; its
#: ``--ptxas-options`` (verbose output, register-usage level 10, local-memory warnings)
#: are left out: they change diagnostics, not the arithmetic
TVM_FLAGS = ("-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
             "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
             "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
             "--expt-relaxed-constexpr", "--expt-extended-lambda")


def nvcc_command(arch: str, src: str, out: str) -> list[str]:
    from fuzzharness.oracles.target_math import cuda_fast_math

    suffix = arch[3:]
    return [nvcc_path() or "nvcc", "--cubin", "-O3", "-gencode",
            f"arch=compute_{suffix},code=sm_{suffix}", *TVM_FLAGS,
            *(["--use_fast_math"] if cuda_fast_math() else []), "-o", out, src]


def compile_cubin(source: str, arch: str, plan_summary: str = "") -> bytes:
    """nvcc the source to a cubin; a refusal raises :class:`GeneratedCodeError`."""
    with tempfile.TemporaryDirectory(prefix="fuzz-nvcc-") as tmp:
        src, out = os.path.join(tmp, "kernels.cu"), os.path.join(tmp, "kernels.cubin")
        with open(src, "w") as f:
            f.write(source)
        cmd = nvcc_command(arch, src, out)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=NVCC_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise GeneratedCodeError(
                f"nvcc did not finish within {NVCC_TIMEOUT:g} s",
                {"compiler": "nvcc", "arch": arch, "source": source},
            ) from None
        log = (proc.stderr + proc.stdout).replace(tmp + "/", "")
        if proc.returncode != 0 or not os.path.exists(out):
            raise GeneratedCodeError(
                f"nvcc failed (exit {proc.returncode}): {_first_error(log)}",
                {"compiler": "nvcc", "arch": arch, "command": " ".join(cmd[:-3]),
                 "log": log[-8000:], "source": source, "launch_plan": plan_summary},
            )
        with open(out, "rb") as f:
            return f.read()


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line:
            return line.strip()[:300]
    return log.strip().splitlines()[-1][:300] if log.strip() else "(no output)"


# -- argument marshalling (testable without a GPU) --------------------------------------------


def kernel_params(values: list[tuple[str, str, Any]]) -> tuple[list[np.ndarray], np.ndarray]:
    """The ``kernelParams`` array of ``cuLaunchKernel``: one pointer per argument.

    ``values``: per argument ``(kind, dtype, value)`` — kind ``"buffer"`` (value: the device
    pointer as an int) or ``"scalar"`` (value: a number of ``dtype``).  Returns the holders
    (one 1-element array per argument, which must outlive the launch) and the ``uint64``
    array of their addresses.
    """

    holders = []
    for kind, dtype, value in values:
        if kind == "buffer":
            holders.append(np.array([int(value)], dtype=np.uint64))
        else:
            holders.append(np.array([value], dtype=numpy_dtype(dtype)))
    return holders, np.array([h.ctypes.data for h in holders], dtype=np.uint64)


# -- drivers ---------------------------------------------------------------------------------


class _CudaBindingsDriver:
    """The CUDA driver API through NVIDIA's cuda-bindings (``cuda.bindings.driver``)."""

    name = "cuda-bindings"

    def __init__(self):
        from cuda.bindings import driver as cu

        self.cu = cu
        self._check(cu.cuInit(0))
        self.device = self._check(cu.cuDeviceGet(0))
        attr = cu.CUdevice_attribute
        major = self._check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device))
        minor = self._check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device))
        self.compute_capability = (int(major), int(minor))
        self.context = self._check(cu.cuDevicePrimaryCtxRetain(self.device))
        self._check(cu.cuCtxSetCurrent(self.context))

    def _check(self, result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            name = self.cu.cuGetErrorName(err)[1]
            raise RuntimeError(f"CUDA driver error {name.decode() if isinstance(name, bytes) else name}")
        return rest[0] if len(rest) == 1 else rest

    def load(self, cubin: bytes):
        image = np.frombuffer(cubin, dtype=np.uint8).copy()
        module = self._check(self.cu.cuModuleLoadData(image.ctypes.data))
        return module, image

    def function(self, module, name: str, dyn_shared: int):
        f = self._check(self.cu.cuModuleGetFunction(module[0], name.encode()))
        if dyn_shared > DEFAULT_SHARED_LIMIT:
            attr = self.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            self._check(self.cu.cuFuncSetAttribute(f, attr, dyn_shared))
        return f

    def alloc(self, host: np.ndarray) -> int:
        ptr = self._check(self.cu.cuMemAlloc(max(host.nbytes, 1)))
        if host.nbytes:
            src = np.ascontiguousarray(host)  # named: must stay alive during the copy
            self._check(self.cu.cuMemcpyHtoD(ptr, src.ctypes.data, src.nbytes))
        return int(ptr)

    def read(self, ptr: int, out: np.ndarray) -> None:
        if out.nbytes:
            self._check(self.cu.cuMemcpyDtoH(out.ctypes.data, ptr, out.nbytes))

    def launch(self, f, grid, block, dyn_shared, values) -> None:
        holders, params = kernel_params(values)
        self._check(self.cu.cuLaunchKernel(f, *grid, *block, dyn_shared, 0, params.ctypes.data, 0))
        self._check(self.cu.cuCtxSynchronize())
        del holders

    def free(self, ptr: int) -> None:
        self.cu.cuMemFree(ptr)


class _PyCudaDriver:
    """The CUDA driver API through pycuda (when cuda-bindings is not installed)."""

    name = "pycuda"

    def __init__(self):
        import pycuda.driver as drv

        self.drv = drv
        drv.init()
        dev = drv.Device(0)
        self.compute_capability = tuple(dev.compute_capability())
        self.context = dev.retain_primary_context()
        self.context.push()

    def load(self, cubin: bytes):
        return self.drv.module_from_buffer(cubin)

    def function(self, module, name: str, dyn_shared: int):
        f = module.get_function(name)
        if dyn_shared > DEFAULT_SHARED_LIMIT:
            f.set_attribute(self.drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn_shared)
        return f

    def alloc(self, host: np.ndarray) -> int:
        mem = self.drv.mem_alloc(max(host.nbytes, 1))
        if host.nbytes:
            self.drv.memcpy_htod(mem, np.ascontiguousarray(host))
        self._keep = getattr(self, "_keep", {})
        self._keep[int(mem)] = mem
        return int(mem)

    def read(self, ptr: int, out: np.ndarray) -> None:
        if out.nbytes:
            self.drv.memcpy_dtoh(out, ptr)

    def launch(self, f, grid, block, dyn_shared, values) -> None:

        args = [np.uint64(v) if kind == "buffer" else np.dtype(numpy_dtype(dt)).type(v)
                for kind, dt, v in values]
        f(*args, grid=tuple(grid), block=tuple(block), shared=dyn_shared)
        self.drv.Context.synchronize()

    def free(self, ptr: int) -> None:
        mem = getattr(self, "_keep", {}).pop(ptr, None)
        if mem is not None:
            mem.free()


@functools.cache
def driver() -> Any:
    """The first CUDA driver binding that works here, or the reasons none does (a str)."""
    reasons = []
    for cls in (_CudaBindingsDriver, _PyCudaDriver):
        try:
            return cls()
        except ImportError as e:
            reasons.append(f"{cls.name}: not installed ({e.name})")
        except Exception as e:  # noqa: BLE001 - no driver/GPU: report why, do not crash
            reasons.append(f"{cls.name}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    return "no CUDA device: " + "; ".join(reasons)


def run_reason(arch: str) -> str | None:
    """Why a cubin for ``arch`` cannot run here (None: it can)."""
    d = driver()
    if isinstance(d, str):
        return d
    major, minor = d.compute_capability
    want = re.match(r"sm_(\d+?)(\d)([a-z]?)$", arch)
    if want is None:
        return f"cannot read the compute capability of {arch}"
    wmaj, wmin = int(want.group(1)), int(want.group(2))
    # a cubin runs on devices of the same major version and an equal or newer minor
    if major != wmaj or minor < wmin or (want.group(3) and minor != wmin):
        return f"the GPU is sm_{major}{minor}; the case's cubin is for {arch}"
    return None


@register
class CUDABackend(Backend):
    name = "cuda"

    def unavailable(self, target):
        if nvcc_path() is None:
            return "nvcc is not on PATH (set FUZZHARNESS_NVCC)"
        return run_reason(arch_of(target))

    def lower(self, mod, target, pass_config):
        arch_of(target)
        return lower_device(mod, target, pass_config)

    def codegen(self, lowered, target):
        code = codegen_device(lowered, target)
        textures = [k for k, ts in code.plan.kernels.items() if any(t.is_texture for t in ts)]
        if textures:
            raise GeneratedCodeError(f"CUDA kernel {textures[0]} takes a texture-scope buffer",
                                     {"source": code.source})
        return code

    def build(self, code: DeviceCode) -> DeviceProgram:
        if nvcc_path() is None:
            return DeviceProgram(code, None, "nvcc is not on PATH: CUDA code generated, not compiled")
        arch = arch_of(code.target)
        cubin = compile_cubin(code.source, arch, code.plan.summary())
        return DeviceProgram(code, cubin, run_reason(arch))

    def not_runnable(self, program: DeviceProgram) -> str | None:
        return program.not_runnable

    def run(self, program: DeviceProgram, args, n_outputs):
        d = driver()
        plan: LaunchPlan = program.code.plan
        module = d.load(program.binary)

        ptrs = [d.alloc(with_redzone(a)) for a in args]
        temps = {t.name: d.alloc(poison((t.elements,), np.dtype(numpy_dtype(t.dtype))))
                 for t in plan.temps}
        try:
            for x in plan.launches:
                f = d.function(module, x.kernel, x.dyn_shared_bytes)
                values = []
                for a, ty in zip(x.args, plan.kernels[x.kernel], strict=True):
                    if "param" in a:
                        values.append(("buffer", ty.dtype, ptrs[a["param"]]))
                    elif "temp" in a:
                        values.append(("buffer", ty.dtype, temps[a["temp"]]))
                    else:
                        values.append(("scalar", ty.dtype, a["scalar"]))
                try:
                    d.launch(f, x.grid, x.block, x.dyn_shared_bytes, values)
                except RuntimeError as e:
                    raise GeneratedCodeError(f"CUDA launch of {x.kernel} failed: {e}",
                                             {"launch_plan": plan.summary()}) from None
            for p, a, spec in zip(ptrs, args, plan.params, strict=True):
                full = np.empty(a.nbytes + redzone_bytes(a.nbytes), np.uint8)
                d.read(p, full)  # inputs too: execute checks that they are unchanged
                check_redzone(full, a.nbytes, spec.name, a.dtype)
                a[...] = full[: a.nbytes].view(a.dtype).reshape(a.shape)
        finally:
            for p in [*ptrs, *temps.values()]:
                d.free(p)
        return args[len(args) - n_outputs:]
