"""texture: Adreno texture-scope placement of an input through ``cache_read``.

An input whose last extent is a multiple of 4 is staged into ``global.texture``,
``global.texture-nhwc`` or ``global.texture-weight`` (drawn) by ``cache_read``; the staged buffer
is packed to RGBA pixels with ``transform_layout`` (``[..., k] → [..., k // 4, k % 4]``); the copy
becomes its own kernel (bound to blocks/threads, the 4 channels optionally vectorised into one
pixel store), and the consumer is bound like the ``tiled`` style's simplest form.

Only for OpenCL targets with the ``adreno`` key (TVM lowers texture scopes only in its Adreno
pipeline).  The staged texture is allocated by the *host* between the two kernels
(``nd_mem_alloc_with_scope``).  Inputs that are textures from the start (kernel parameters in
a texture scope, read as images by the launcher) come from the ``matmul_texture`` workload.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.gpu.base import GpuSchedule, Style, register
from fuzzharness.generators.gpu.tiled import applicable, single_block
from fuzzharness.generators.schedules.base import ScheduleState

TEXTURE_SCOPES = ("global.texture", "global.texture-nhwc", "global.texture-weight")


def _packable_reads(sch, blk) -> list[int]:
    out = []
    block = sch.get(blk)
    for i, r in enumerate(block.reads):
        shape = [int(s) for s in r.source.shape]
        if len(shape) in (2, 3) and shape[-1] % 4 == 0 and str(r.source.dtype) in ("float32", "float16"):
            if not any(r.source.same_as(w.source) for w in block.writes):
                out.append(i)
    return out


def _pack(rank: int):
    if rank == 2:
        return lambda a, b: (a, b // 4, b % 4)
    return lambda a, b, c: (a, b, c // 4, c % 4)


@register
class TextureStyle(Style):
    name = "texture"

    def applies(self, func, target):
        from tvm import s_tir

        if not target.is_adreno or not applicable(func):
            return False
        sch = s_tir.Schedule(func)
        return bool(_packable_reads(sch, sch.get_sblock(single_block(sch))))

    def schedule(self, func, data, target):
        from tvm import s_tir

        d = data.draw
        sch = s_tir.Schedule(func, seed=d(st.integers(1, 2**31 - 1)))
        blk = sch.get_sblock(single_block(sch))
        idx = d(st.sampled_from(_packable_reads(sch, blk)))
        scope = d(st.sampled_from(TEXTURE_SCOPES))
        rank = len(sch.get(blk).reads[idx].source.shape)
        cr = sch.cache_read(blk, idx, scope)
        sch.transform_layout(cr, ("write", 0), _pack(rank))
        loops = sch.get_loops(cr)
        lo, lv = sch.split(loops[-1], [None, 4])
        fused = sch.fuse(*loops[:-1], lo)
        threads = d(st.sampled_from([16, 32, 64, 128, 256]))
        cb, ct = sch.split(fused, [None, threads])
        sch.bind(cb, "blockIdx.x")
        sch.bind(ct, "threadIdx.x")
        vectorised = d(st.booleans())
        if vectorised:
            sch.vectorize(lv)
        # The consumer: bind its spatial loops as the tiled style does (no further stages).
        loops = sch.get_loops(blk)
        pattern = ScheduleState(sch, None).loop_kinds(blk)
        spatial = [lp for lp, k in zip(loops, pattern, strict=True) if k == "S"]
        f = sch.fuse(*spatial) if len(spatial) > 1 else spatial[0]
        t = d(st.sampled_from([8, 16, 32, 64]))
        ob, ot = sch.split(f, [None, t])
        sch.bind(ob, "blockIdx.x")
        sch.bind(ot, "threadIdx.x")
        note = f"input {idx} staged in {scope} (rank {rank + 1}), pixel store {'vectorised' if vectorised else 'scalar'}"
        return GpuSchedule(sch, self.name, {}, [note])

