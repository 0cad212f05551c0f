"""The OpenCL backend (plain OpenCL and Adreno with texture scopes), run through pyopencl.

TVM generates OpenCL C (``target.build.opencl``); the program is built and its kernels are
launched by pyopencl on whatever OpenCL runtime the machine has — in CI Debian's PoCL
(``pocl-opencl-icd``), a CPU implementation — following the launch plan read from TVM's
lowered host function (:mod:`fuzzharness.backends.launch`).  What TVM's own OpenCL runtime
would do is reproduced here:

* a buffer in global memory is a ``cl.Buffer``;
* a buffer in a texture scope (``global.texture``, ``global.texture-nhwc``,
  ``global.texture-weight``) is an ``image2d_array_t`` of RGBA pixels, laid out as TVM's
  ``DefaultTextureLayoutSeparator``/``ApplyTexture2DFlattening`` lay it out (see
  :func:`texture_layout`); pixels are 4 × float32 (128-bit channels) or 4 × float16;
* temporaries the host allocates (``alloc_buffer``, ``nd_mem_alloc_with_scope``) are created
  before the first launch and filled with nan, like the outputs, so unwritten reads show.

Device choice: among the devices found (narrowed by ``FUZZHARNESS_OPENCL_DEVICE``, a
substring of "platform: device"), the first that can run the kernel: kernels that use fp16
need ``cl_khr_fp16`` (PoCL lacks it; Intel's CPU runtime from PyPI ``intel-opencl-rt``, which
the ``opencl`` extra installs and :mod:`fuzzharness.backends.opencl_runtime` finds, has it),
texture scopes need image support.  With no such device the
case is compiled but not run, and the verdict says so (inconclusive, ``not_run``).
"""

from __future__ import annotations

import functools
import os
import re
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
from fuzzharness.backends.launch_plan import Texture
from fuzzharness.backends.redzone import (  # shared with CUDA and the llvm guard zones
    check_redzone,
    redzone_bytes,
    with_redzone,
)
from fuzzharness.core import interrupt
from fuzzharness.oracles.numerics import numpy_dtype

TEXTURE_SCOPES = ("global.texture", "global.texture-nhwc", "global.texture-weight")


def texture_layout(shape: list[int] | tuple[int, ...], scope: str, dtype: str) -> Texture:
    """The image TVM uses for an N-d buffer in a texture scope (N ≥ 3, last extent 4).

    TVM (src/backend/opencl/runtime/texture.h): the separator axis is ``rank − 2`` for
    ``global.texture``, 1 for ``global.texture-weight`` and 2 for ``global.texture-nhwc``;
    dims before ``axis − 1`` multiply into the depth, dim ``axis − 1`` is the height, the
    rest but the last the width; the last dim is the 4 channels of a pixel.  So the C-order
    array reshaped to ``(depth, height, width, 4)`` is the image's content.
    """
    rank = len(shape)
    if rank < 3 or shape[-1] != 4:
        raise ValueError(f"a {scope} buffer must have rank ≥ 3 and last extent 4, not {list(shape)}")
    axis = {"global.texture": rank - 2, "global.texture-weight": 1, "global.texture-nhwc": 2}[scope]
    w = h = d = 1
    for i in range(rank - 1):
        if i < axis - 1:
            d *= shape[i]
        elif i < axis:
            h *= shape[i]
        else:
            w *= shape[i]
    return Texture(w, h, d, 4 * np.dtype(_np_dtype(dtype)).itemsize * 8)


def _np_dtype(dtype: str) -> np.dtype:

    return np.dtype(numpy_dtype(dtype))


def _split_lanes(dtype: str) -> tuple[str, int]:
    """``("float32", 4)`` for a vector dtype ``float32x4``; ``(dtype, 1)`` for a scalar one."""
    m = re.fullmatch(r"(.+?)x(\d+)", str(dtype))
    return (m.group(1), int(m.group(2))) if m else (str(dtype), 1)


def needs_fp16(source: str) -> bool:
    return bool(re.search(r"\bhalf\d*\b|cl_khr_fp16", source))


@functools.cache
def _devices() -> tuple[Any, list[tuple[Any, Any]]] | str:
    """``(pyopencl, [(context, queue) per device])`` or the reason there is none."""
    with interrupt.keep_handlers():  # the runtime brings signal handlers of its own
        return _load_devices()


def _load_devices() -> tuple[Any, list[tuple[Any, Any]]] | str:
    from fuzzharness.backends.opencl_runtime import configure

    configure()  # runtimes pip installed here (Intel's CPU runtime): found without set-up
    try:
        import pyopencl as cl
    except ImportError:
        return ("pyopencl is not installed (pip install -e '.[opencl]': pyopencl and, on x86-64 "
                "Linux, Intel's CPU OpenCL runtime)")
    try:
        devices = [(p, d) for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as e:  # no ICD loader/vendor: "PLATFORM_NOT_FOUND_KHR"
        return (f"no OpenCL platform ({e}); pip install 'tvm-fuzzharness[opencl]' brings Intel's "
                "CPU runtime on x86-64 Linux, elsewhere install your platform's runtime")
    want = os.environ.get("FUZZHARNESS_OPENCL_DEVICE", "")
    devices = [(p, d) for p, d in devices if want in f"{p.name}: {d.name}"]
    if not devices:
        return f"no OpenCL device{' matching ' + repr(want) if want else ''}"
    out = []
    for _, d in devices:
        ctx = cl.Context([d])
        out.append((ctx, cl.CommandQueue(ctx)))
    return cl, out


def choose_device(needs_fp16: bool, needs_images: bool) -> tuple[Any, Any, Any] | str:
    """``(pyopencl, context, queue)`` of the first device that can run such a kernel."""
    found = _devices()
    if isinstance(found, str):
        return found
    cl, devices = found
    for ctx, queue in devices:
        d = ctx.devices[0]
        if needs_fp16 and "cl_khr_fp16" not in d.extensions:
            continue
        if needs_images and not d.image_support:
            continue
        return cl, ctx, queue
    names = ", ".join(ctx.devices[0].name for ctx, _ in devices)
    lack = " and ".join(w for w, n in (("cl_khr_fp16", needs_fp16), ("image support", needs_images)) if n)
    return f"no OpenCL device with {lack} (devices: {names})"


def device_descriptions() -> list[str]:
    found = _devices()
    if isinstance(found, str):
        return [found]
    return [f"{ctx.devices[0].platform.name}: {ctx.devices[0].name} "
            f"(fp16: {'cl_khr_fp16' in ctx.devices[0].extensions}, images: {bool(ctx.devices[0].image_support)})"
            for ctx, _ in found[1]]


@register
class OpenCLBackend(Backend):
    name = "opencl"

    def unavailable(self, target):
        found = _devices()
        return found if isinstance(found, str) else None

    def lower(self, mod, target, pass_config):
        return lower_device(mod, target, pass_config)

    def codegen(self, lowered, target):
        return codegen_device(lowered, target)

    def build(self, code: DeviceCode) -> DeviceProgram:
        images = any(t.is_texture for ts in code.plan.kernels.values() for t in ts) or any(
            t.texture is not None for t in code.plan.temps)
        rt = choose_device(needs_fp16(code.source), images)
        if isinstance(rt, str):
            return DeviceProgram(code, None, rt)
        cl, ctx, queue = rt
        device = ctx.devices[0]
        try:
            # no on-disk cache: generated kernels rarely repeat, the cache grows without
            # bound over campaigns (334 MB here), and once an entry cannot be read pyopencl
            # 2026.1 fails with KeyError 'PYOPENCL_CACHE_FAILURE_FATAL' (a harness_error)
            program = cl.Program(ctx, code.source).build(cache_dir=False)
        except cl.Error as e:  # RuntimeError subclass carrying the build log
            raise GeneratedCodeError(
                f"OpenCL build failed: {_first_error(str(e))}",
                {"compiler": f"{device.platform.name} {device.name}", "log": str(e)[-8000:],
                 "source": code.source, "launch_plan": code.plan.summary()},
            ) from None
        return DeviceProgram(code, (program, ctx, queue))

    def not_runnable(self, program: DeviceProgram) -> str | None:
        return program.not_runnable

    def run(self, program: DeviceProgram, args, n_outputs):
        import pyopencl as cl

        binary, ctx, queue = program.binary  # build() chose the device
        plan = program.code.plan
        mem = _Memory(cl, ctx, queue)
        params = [mem.param(spec, a) for spec, a in zip(plan.params, args, strict=True)]
        temps = {t.name: mem.temp(t) for t in plan.temps}
        for x in plan.launches:
            kernel = cl.Kernel(binary, x.kernel)
            values = []
            for a, ty in zip(x.args, plan.kernels[x.kernel], strict=True):
                if "param" in a:
                    values.append(params[a["param"]])
                elif "temp" in a:
                    values.append(temps[a["temp"]])
                else:
                    values.append(_np_dtype(ty.dtype).type(a["scalar"]))
            kernel.set_args(*values)
            gsize = tuple(g * b for g, b in zip(x.grid, x.block, strict=True))
            try:
                cl.enqueue_nd_range_kernel(queue, kernel, gsize, tuple(x.block))
            except cl.Error as e:
                raise GeneratedCodeError(
                    f"OpenCL launch of {x.kernel} failed: {e}",
                    {"launch_plan": plan.summary(), "source": program.code.source},
                ) from None
        queue.finish()
        # Read every parameter back (inputs too: execute checks that inputs are unchanged).
        for spec, buf, a in zip(plan.params, params, args, strict=True):
            a[...] = mem.read(spec, buf, a)
        return args[len(args) - n_outputs:]


class _Memory:
    """Device memory for one run: buffers and images created from numpy arrays."""

    def __init__(self, cl, ctx, queue):
        self.cl, self.ctx, self.queue = cl, ctx, queue

    def _image_format(self, tex: Texture):
        cl = self.cl
        kind = {128: cl.channel_type.FLOAT, 64: cl.channel_type.HALF_FLOAT}[tex.channel_bits]
        return cl.ImageFormat(cl.channel_order.RGBA, kind)

    def image(self, tex: Texture, content: np.ndarray):
        cl = self.cl
        img = cl.create_image(self.ctx, cl.mem_flags.READ_WRITE, self._image_format(tex),
                              shape=(tex.width, tex.height, tex.depth), is_array=True)
        host = np.ascontiguousarray(content.reshape(tex.shape_dhwc))
        cl.enqueue_copy(self.queue, img, host, origin=(0, 0, 0),
                        region=(tex.width, tex.height, tex.depth))
        return img

    def buffer(self, content: np.ndarray):
        """A buffer followed by a canary-filled red zone (see :func:`with_redzone`)."""
        cl = self.cl
        host = with_redzone(content)
        return cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                         size=host.nbytes, hostbuf=host)

    def param(self, spec, array: np.ndarray):
        if "texture" in spec.scope:
            return self.image(texture_layout(spec.shape, spec.scope, spec.dtype), array)
        return self.buffer(array)

    def temp(self, t):

        scalar, lanes = _split_lanes(t.dtype)  # a vector temp (float32x4) holds lanes × elements
        dtype = _np_dtype(scalar)
        if t.texture is not None:
            return self.image(t.texture, poison(t.texture.shape_dhwc, dtype))
        return self.buffer(poison((t.elements * lanes,), dtype))

    def read(self, spec, mem, like: np.ndarray) -> np.ndarray:
        cl = self.cl
        if "texture" in spec.scope:
            tex = texture_layout(spec.shape, spec.scope, spec.dtype)
            out = np.empty(tex.shape_dhwc, like.dtype)
            cl.enqueue_copy(self.queue, out, mem, origin=(0, 0, 0),
                            region=(tex.width, tex.height, tex.depth))
            return out.reshape(like.shape)
        full = np.empty(like.nbytes + redzone_bytes(like.nbytes), np.uint8)
        cl.enqueue_copy(self.queue, full, mem)
        self.queue.finish()
        check_redzone(full, like.nbytes, spec.name, like.dtype)
        return full[: like.nbytes].view(like.dtype).reshape(like.shape)


def _first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower():
            return line.strip()[:300]
    return log.strip().splitlines()[0][:300] if log.strip() else "(no log)"
