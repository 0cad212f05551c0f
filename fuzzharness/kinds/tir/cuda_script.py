"""The CUDA part of a TIR repro script: TVM generates the CUDA C, nvcc compiles, the driver runs.

The CUDA twin of :mod:`fuzzharness.kinds.tir.opencl_script`.  TVM's PyPI wheel has no CUDA
runtime, so the harness compiles TVM's CUDA C with ``nvcc --cubin`` (TVM's own nvcc flags) and
launches the kernels through NVIDIA's ``cuda-bindings`` (:mod:`fuzzharness.backends.cuda`).
The script does the same in plain code a maintainer can read: it lowers the scheduled PrimFunc
with the pipeline TVM selects for the target, takes the CUDA C from ``tir_to_runtime``, runs
nvcc, and launches the kernels as TVM's host function would — the launch plan (``LAUNCH``,
read by :func:`fuzzharness.backends.launch.extract`) is embedded as plain data, and the script
checks that every kernel it names is in TVM's source.  Each buffer is followed by a guard zone
(an out-of-bounds write is named, as by the harness).  Needs tvm, numpy, nvcc, a GPU whose
compute capability runs the target's ``arch``, and ``cuda-bindings``.
"""

from __future__ import annotations

from fuzzharness.backends.cuda import TVM_FLAGS

#: the CUDA runtime of a script (after opencl_script.SOURCE_OF, which lowers and generates)
RUNTIME = r'''
# -- nvcc and the CUDA driver (cuda-bindings): buffers with a guard zone after them ------------
class GeneratedCodeError(RuntimeError):
    """nvcc refuses the source TVM generated, or a kernel it generated faults."""


NVCC_FLAGS = ''' + repr(list(TVM_FLAGS)) + r'''  # what tvm/support/nvcc.py passes


def nvcc(source, arch):
    """``nvcc --cubin`` of TVM's CUDA C as TVM's own nvcc path does (``--use_fast_math`` unless
    TVM's switch TVM_CUDA_NVCC_NO_FAST_MATH is set)."""
    import os
    import subprocess
    import tempfile

    fast = [] if os.environ.get("TVM_CUDA_NVCC_NO_FAST_MATH") else ["--use_fast_math"]
    with tempfile.TemporaryDirectory(prefix="repro-nvcc-") as tmp:
        src, out = os.path.join(tmp, "kernels.cu"), os.path.join(tmp, "kernels.cubin")
        with open(src, "w") as f:
            f.write(source)
        sm = arch[3:]
        cmd = ["nvcc", "--cubin", "-O3", "-gencode", f"arch=compute_{sm},code=sm_{sm}",
               *NVCC_FLAGS, *fast, "-o", out, src]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(out):
            log = proc.stderr + proc.stdout
            first = next((ln.strip() for ln in log.splitlines() if "error" in ln), log.strip()[-300:])
            raise GeneratedCodeError(f"nvcc failed (exit {proc.returncode}): {first[:300]}\n{log[-4000:]}")
        with open(out, "rb") as f:
            return f.read()


class CUDA:
    """The GPU through the CUDA driver API; run() launches one program's kernels as TVM's
    host function would."""

    def __init__(self, cubin):
        from cuda.bindings import driver as cu

        self.cu = cu
        self._ok(cu.cuInit(0))
        device = self._ok(cu.cuDeviceGet(0))
        self._ok(cu.cuCtxSetCurrent(self._ok(cu.cuDevicePrimaryCtxRetain(device))))
        attr = cu.CUdevice_attribute
        cc = (self._ok(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)),
              self._ok(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)))
        print(f"[repro] CUDA device: {self._ok(cu.cuDeviceGetName(64, device)).decode().rstrip(chr(0))}"
              f" (sm_{cc[0]}{cc[1]})", file=sys.stderr)
        self.image = np.frombuffer(cubin, np.uint8).copy()
        self.module = self._ok(cu.cuModuleLoadData(self.image.ctypes.data))

    def _ok(self, result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            raise RuntimeError(f"CUDA driver error {self.cu.cuGetErrorName(err)[1].decode()}")
        return rest[0] if len(rest) == 1 else rest

    def run(self, source, plan, arrays, names):
        """Launch ``plan`` on ``arrays`` (the PrimFunc's parameters, in order); every parameter
        read back, an out-of-bounds write named."""
        cu = self.cu
        missing = [k for k in plan["kernels"] if k not in source]
        if missing:
            raise RuntimeError(f"TVM's CUDA source has no kernel {missing}: the launch plan is stale")
        memory = [self._buffer(a) for a in arrays]
        temps = {t["name"]: self._buffer(_temp(t)) for t in plan["temps"]}
        for launch in plan["launches"]:
            kernel = self._ok(cu.cuModuleGetFunction(self.module, launch["kernel"].encode()))
            shared = launch.get("dyn_shared_bytes", 0)
            if shared > 48 * 1024:  # above 48 KiB a kernel must opt in
                self._ok(cu.cuFuncSetAttribute(
                    kernel, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared))
            holders = []
            for a, ty in zip(launch["args"], plan["kernels"][launch["kernel"]]):
                if "param" in a:
                    holders.append(np.array([memory[a["param"]]], np.uint64))
                elif "temp" in a:
                    holders.append(np.array([temps[a["temp"]]], np.uint64))
                else:
                    holders.append(np.array([a["scalar"]], np.dtype(ty["dtype"])))
            params = np.array([h.ctypes.data for h in holders], np.uint64)
            try:  # a kernel that faults (an illegal address, say) is TVM's code failing
                self._ok(cu.cuLaunchKernel(kernel, *launch["grid"], *launch["block"], shared, 0,
                                           params.ctypes.data, 0))
                self._ok(cu.cuCtxSynchronize())
            except RuntimeError as e:
                raise GeneratedCodeError(f"CUDA launch of {launch['kernel']} failed: {e}") from None
        return [self._read(m, a, n) for m, a, n in zip(memory, arrays, names)]

    def _buffer(self, content):
        raw = np.ascontiguousarray(content).view(np.uint8).reshape(-1)
        host = np.full(raw.size + _zone(raw.size), 0xA5, np.uint8)  # the guard zone after it
        host[: raw.size] = raw
        pointer = int(self._ok(self.cu.cuMemAlloc(host.size)))
        self._ok(self.cu.cuMemcpyHtoD(pointer, host.ctypes.data, host.size))
        return pointer

    def _read(self, pointer, like, name):
        full = np.empty(like.nbytes + _zone(like.nbytes), np.uint8)
        self._ok(self.cu.cuMemcpyDtoH(full.ctypes.data, pointer, full.size))
        hit = np.flatnonzero(full[like.nbytes:] != 0xA5)
        if hit.size:
            first, item = like.nbytes + int(hit[0]), max(1, like.dtype.itemsize)
            raise OutOfBoundsWrite(
                f"out-of-bounds write: the kernel wrote past the end of {name}: element {first // item} "
                f"(byte +{first - like.nbytes} after its {like.nbytes} bytes); {hit.size} guard byte(s) changed")
        return full[: like.nbytes].view(like.dtype).reshape(like.shape)


def _temp(t):
    m = re.fullmatch(r"(.+?)x(\d+)", t["dtype"])  # a vector temporary holds lanes × elements
    dtype, lanes = (m.group(1), int(m.group(2))) if m else (t["dtype"], 1)
    return _poison((t["elements"] * lanes,), dtype)


def _zone(nbytes):
    return max(4096, -(-nbytes // 64) * 64)
'''

#: the TIR program's compile_and_run (before template.RUNNER)
COMPILE = r'''
def compile_and_run(x, scheduled=True):
    _stage("schedule")
    sch = s_tir.Schedule(main)
    if scheduled:
        schedule(sch)
    _stage("compile")
    source = device_source(sch.mod)
    _stage("build")
    cubin = nvcc(source, TARGET["arch"])
    _stage("run")
    device = CUDA(cubin)
    arrays = [to_kernel(name, x[name]) for name in INPUTS]
    arrays += [_poison(kernel_shape(name, shape), dtype) for name, (shape, dtype) in OUTPUTS.items()]
    got = device.run(source, LAUNCH, arrays, list(INPUTS) + list(OUTPUTS))
    return {name: from_kernel(name, out) for name, out in zip(OUTPUTS, got[len(INPUTS):])}
'''
