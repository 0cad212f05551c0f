"""The GPU runtimes of repro scripts: TVM generates the kernels, pyopencl or the CUDA driver runs them.

TVM's PyPI wheel has no OpenCL or CUDA runtime, so a bug that shows only when a GPU kernel
*runs* had no standalone script: the harness launches those kernels itself
(:mod:`fuzzharness.backends.opencl`, :mod:`fuzzharness.backends.cuda`).  These are the same
things as plain code a maintainer can read and run, shared by every case kind's script
(TIR: :mod:`fuzzharness.kinds.tir.gpu_compile`; Relax graphs on OpenCL:
:mod:`fuzzharness.kinds.relax.graph_opencl`).  The script lowers the scheduled PrimFunc with
the pipeline TVM selects for the target and takes TVM's source from ``tir_to_runtime`` —
nothing of the harness — then launches the kernels as TVM's host function would.  How the
host function launches them (kernels in order, their arguments, grid and block sizes, the
temporaries it allocates) is the harness's reading of TVM's lowered host function
(:func:`fuzzharness.backends.launch.extract`), embedded as plain data (``LAUNCH``); the
script checks that every kernel it names is in TVM's source.

Buffers get a guard zone after them (an out-of-bounds write is named, as by the harness).
OpenCL: texture-scope parameters and temporaries are RGBA images laid out as TVM lays them
out; needs pyopencl with a device that has ``cl_khr_fp16`` for fp16 kernels and image
support for texture scopes (PoCL, Intel's CPU runtime, a GPU driver).  CUDA: TVM's CUDA C is
compiled by ``nvcc --cubin`` with TVM's own flags and launched through NVIDIA's
``cuda-bindings``; a bug before the launch (lowering, codegen, an nvcc refusal) reproduces
without a GPU.
"""

from __future__ import annotations

import inspect
import pprint
from typing import Any

from fuzzharness.backends.cuda import TVM_FLAGS
from fuzzharness.backends.launch_plan import compact_launches, expand_launches
from fuzzharness.core.case import Case
from fuzzharness.repro.kit import NotReproducible


def launch_source(case: Case, scheduled_mod) -> str:
    """``LAUNCH = {...}``: the launch plan of the scheduled module, as source."""
    from fuzzharness.backends import backends
    from fuzzharness.backends.launch import UnsupportedHostCode

    backend = backends[case.target["kind"]]  # opencl, or cuda (cuda_script)
    try:
        code = backend.codegen(backend.lower(scheduled_mod, case.target, case.pass_config),
                               case.target)
    except UnsupportedHostCode as e:
        raise NotReproducible(f"the launch plan cannot be read: {e}") from None
    plan: dict[str, Any] = code.plan.to_dict()
    compact = compact_launches(plan["launches"])
    looped = compact != plan["launches"]  # a host loop was written once
    text = ("# How TVM's host function launches the kernels, in order (read from TVM's lowered "
            "host\n# function by tvm-fuzzharness; an argument is a parameter by position, a "
            "temporary the\n# host allocates, or a scalar); grid × block = the global work size.\n"
            + ("# A host loop's launches are written once: its scalar arguments are {'loop': k}, "
               "one\n# launch per value of the nested 'loops' [start, stop, step] (outer first).\n"
               if looped else "")
            + "LAUNCH = " + pprint.pformat(dict(plan, launches=compact), width=100,
                                            sort_dicts=False) + "\n")
    if looped:
        text += ("\n\n" + inspect.getsource(expand_launches) + "\n\n"
                 'LAUNCH["launches"] = expand_launches(LAUNCH["launches"])\n')
    return text


#: TVM's lowering and codegen in a script, for any GPU target (OpenCL here, CUDA in cuda_script)
SOURCE_OF = r'''
def device_source(mod):
    """TVM's device source for ``mod``: the pipeline TVM selects for the target, then its codegen
    (what tvm.compile does; for an Adreno target TVM 0.27's tvm.compile skips the Adreno
    pipeline that get_default_tir_pipeline selects, so it is called here by hand)."""
    from tvm.tirx import compilation_pipeline as cp
    from tvm.tirx.build import split_host_device_mods, tir_to_runtime

    target = tvm.target.Target(TARGET)
    target = target.with_host(target.host or tvm.target.Target("llvm"))
    with tvm.transform.PassContext(opt_level=3, config=PASS_CONFIG):
        mod = tvm.tirx.transform.BindTarget(target)(mod)
        chosen = tvm.tirx.get_default_tir_pipeline(target)
        if isinstance(chosen, (tuple, list)):
            pipeline, finalize_host, finalize_device = chosen
        else:  # TVM 0.27's Adreno factory returns only its main pass
            pipeline, finalize_host, finalize_device = (
                chosen, cp.finalize_host_passes, cp.finalize_device_passes)
        host, device = split_host_device_mods(pipeline(mod))
        runtime = tir_to_runtime(finalize_host()(host),
                                 {t: finalize_device()(m) for t, m in device.items()}, target.host)
    return "\n".join(m.inspect_source() for m in runtime.imports)


def _zone(nbytes):
    """The guard zone after a buffer: a page at least, every byte 0xA5."""
    return max(4096, -(-nbytes // 64) * 64)


def _guarded(content):
    """The bytes of ``content`` followed by its guard zone."""
    raw = np.ascontiguousarray(content).view(np.uint8).reshape(-1)
    host = np.full(raw.size + _zone(raw.size), 0xA5, np.uint8)
    host[: raw.size] = raw
    return host


def _unguarded(full, like, name):
    """The array ``like`` read back from ``full`` (buffer and zone); a changed guard byte is
    an out-of-bounds write, named."""
    hit = np.flatnonzero(full[like.nbytes:] != 0xA5)
    if hit.size:
        first, item = like.nbytes + int(hit[0]), max(1, like.dtype.itemsize)
        raise OutOfBoundsWrite(
            f"out-of-bounds write: the kernel wrote past the end of {name}: element {first // item} "
            f"(byte +{first - like.nbytes} after its {like.nbytes} bytes); {hit.size} guard byte(s) changed")
    return full[: like.nbytes].view(like.dtype).reshape(like.shape)
'''

#: the OpenCL runtime of a script: TVM's codegen, then pyopencl (TIR and Relax scripts)
OPENCL_RUNTIME = SOURCE_OF + r'''

# -- pyopencl: device, buffers with a guard zone, images as TVM lays textures out --------------
class GeneratedCodeError(RuntimeError):
    """The OpenCL compiler refuses the source TVM generated."""


def use_pip_opencl_runtime():
    """Intel's CPU OpenCL runtime installed with pip (intel-opencl-rt: fp16 and images) has no
    .icd file: point the ICD loader at it, and at the system's runtimes, unless told otherwise."""
    import glob
    import os
    import tempfile

    lib = os.path.join(sys.prefix, "lib", "libintelocl.so")
    if os.environ.get("OCL_ICD_VENDORS") or not os.path.isfile(lib):
        return
    folder = tempfile.mkdtemp(prefix="opencl-vendors-")
    with open(os.path.join(folder, "intel-cpu.icd"), "w") as f:
        f.write(lib + "\n")
    for icd in glob.glob("/etc/OpenCL/vendors/*.icd"):
        with open(icd) as src, open(os.path.join(folder, os.path.basename(icd)), "w") as dst:
            dst.write(src.read())
    os.environ["OCL_ICD_VENDORS"] = folder


class OpenCL:
    """The first OpenCL device that can run these sources (cl_khr_fp16 for half, images for
    texture scopes); run() launches one program's kernels as TVM's host function would."""

    def __init__(self, sources):
        use_pip_opencl_runtime()
        import pyopencl as cl

        fp16 = any(re.search(r"\bhalf\d*\b|cl_khr_fp16", s) for s in sources)
        images = any("image2d" in s for s in sources)
        for platform in cl.get_platforms():
            for device in platform.get_devices():
                if (fp16 and "cl_khr_fp16" not in device.extensions) or (
                        images and not device.image_support):
                    continue
                print(f"[repro] OpenCL device: {platform.name}: {device.name}", file=sys.stderr)
                self.cl, self.ctx = cl, cl.Context([device])
                self.queue = cl.CommandQueue(self.ctx)
                self.programs = {}
                for s in sources:
                    try:
                        self.programs[s] = cl.Program(self.ctx, s).build()
                    except cl.Error as e:  # the OpenCL compiler refuses TVM's source
                        log = str(e)
                        first = next((ln.strip() for ln in log.splitlines() if "error" in ln.lower()),
                                     log.strip().splitlines()[0] if log.strip() else "(no log)")
                        raise GeneratedCodeError(f"OpenCL build failed: {first[:300]}\n{log[-4000:]}") from None
                return
        raise RuntimeError("no OpenCL device" + (" with cl_khr_fp16" if fp16 else "")
                           + (" with image support" if images else ""))

    def run(self, source, plan, arrays, names):
        """Launch ``plan`` (kernels of ``source``) on ``arrays`` (the PrimFunc's parameters, in
        order); every parameter read back, an out-of-bounds write named."""
        cl, queue = self.cl, self.queue
        missing = [k for k in plan["kernels"] if k not in source]
        if missing:
            raise RuntimeError(f"TVM's OpenCL source has no kernel {missing}: the launch plan is stale")
        memory = [self._memory(p, a) for p, a in zip(plan["params"], arrays)]
        temps = {t["name"]: self._temp(t) for t in plan["temps"]}
        for launch in plan["launches"]:
            kernel = cl.Kernel(self.programs[source], launch["kernel"])
            values = []
            for a, ty in zip(launch["args"], plan["kernels"][launch["kernel"]]):
                if "param" in a:
                    values.append(memory[a["param"]])
                elif "temp" in a:
                    values.append(temps[a["temp"]])
                else:
                    values.append(np.dtype(ty["dtype"]).type(a["scalar"]))
            kernel.set_args(*values)
            work = tuple(g * b for g, b in zip(launch["grid"], launch["block"]))
            cl.enqueue_nd_range_kernel(queue, kernel, work, tuple(launch["block"]))
        queue.finish()
        return [self._read(p, m, a, n) for p, m, a, n in zip(plan["params"], memory, arrays, names)]

    def _image(self, dhw, dtype, content):
        cl = self.cl
        channel = {4: cl.channel_type.FLOAT, 2: cl.channel_type.HALF_FLOAT}[np.dtype(dtype).itemsize]
        depth, height, width = dhw
        image = cl.create_image(self.ctx, cl.mem_flags.READ_WRITE,
                                cl.ImageFormat(cl.channel_order.RGBA, channel),
                                shape=(width, height, depth), is_array=True)
        cl.enqueue_copy(self.queue, image, np.ascontiguousarray(content.reshape(depth, height, width, 4)),
                        origin=(0, 0, 0), region=(width, height, depth))
        return image

    def _buffer(self, content):
        return self.cl.Buffer(self.ctx, self.cl.mem_flags.READ_WRITE | self.cl.mem_flags.COPY_HOST_PTR,
                              hostbuf=_guarded(content))

    def _memory(self, param, array):
        if "texture" in param["scope"]:
            return self._image(_texture(param["shape"], param["scope"]), array.dtype, array)
        return self._buffer(array)

    def _temp(self, t):
        m = re.fullmatch(r"(.+?)x(\d+)", t["dtype"])  # a vector temporary holds lanes × elements
        dtype, lanes = (m.group(1), int(m.group(2))) if m else (t["dtype"], 1)
        if t["texture"]:
            tex = t["texture"]
            dhw = (tex["depth"], tex["height"], tex["width"])
            return self._image(dhw, dtype, _poison((*dhw, 4), dtype))
        return self._buffer(_poison((t["elements"] * lanes,), dtype))

    def _read(self, param, memory, like, name):
        cl = self.cl
        if "texture" in param["scope"]:
            depth, height, width = _texture(param["shape"], param["scope"])
            out = np.empty((depth, height, width, 4), like.dtype)
            cl.enqueue_copy(self.queue, out, memory, origin=(0, 0, 0), region=(width, height, depth))
            return out.reshape(like.shape)
        full = np.empty(like.nbytes + _zone(like.nbytes), np.uint8)
        cl.enqueue_copy(self.queue, full, memory)
        self.queue.finish()
        return _unguarded(full, like, name)


def _texture(shape, scope):
    """(depth, height, width) of the RGBA image TVM uses for a texture-scope buffer
    (src/runtime/texture.h: the separator axis is rank - 2 for global.texture, 1 for
    global.texture-weight, 2 for global.texture-nhwc; the last extent is the 4 channels)."""
    rank = len(shape)
    axis = {"global.texture": rank - 2, "global.texture-weight": 1, "global.texture-nhwc": 2}[scope]
    depth = int(np.prod(shape[: axis - 1])) if axis > 1 else 1
    height = int(shape[axis - 1]) if axis >= 1 else 1
    width = int(np.prod(shape[axis: rank - 1]))
    return depth, height, width
'''

#: the CUDA runtime of a script (after SOURCE_OF, which lowers, generates and guards buffers)
CUDA_RUNTIME = r'''
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
        host = _guarded(content)
        pointer = int(self._ok(self.cu.cuMemAlloc(host.size)))
        self._ok(self.cu.cuMemcpyHtoD(pointer, host.ctypes.data, host.size))
        return pointer

    def _read(self, pointer, like, name):
        full = np.empty(like.nbytes + _zone(like.nbytes), np.uint8)
        self._ok(self.cu.cuMemcpyDtoH(full.ctypes.data, pointer, full.size))
        return _unguarded(full, like, name)


def _temp(t):
    m = re.fullmatch(r"(.+?)x(\d+)", t["dtype"])  # a vector temporary holds lanes × elements
    dtype, lanes = (m.group(1), int(m.group(2))) if m else (t["dtype"], 1)
    return _poison((t["elements"] * lanes,), dtype)
'''
