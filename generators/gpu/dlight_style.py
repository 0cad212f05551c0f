"""dlight: TVM's default GPU schedules, as ``s_tir.dlight.ApplyDefaultSchedule`` would pick them.

The rules are tried in dlight's order (Matmul — whose tensor-core path is taken on CUDA
targets that have tensor cores — then GEMV, Reduction, GeneralReduction, Fallback); the first
that returns a schedule wins.  Each rule builds its own ``s_tir.Schedule(func)``, so its
trace replays on the unscheduled function.  Fallback applies to every function, so this style
is also the one others fall back to.
"""

from __future__ import annotations

from fuzzharness.generators.gpu.base import GpuSchedule, Style, register


def default_rules():
    from tvm.s_tir import dlight

    g = dlight.gpu
    return [g.Matmul(), g.GEMV(), g.Reduction(), g.GeneralReduction(), g.Fallback()]


@register
class DlightStyle(Style):
    name = "dlight"

    def schedule(self, func, data, target):
        from tvm import s_tir

        tgt = target.tvm_target()
        with tgt:
            for rule in default_rules():
                space = rule.apply(func, tgt, False)
                if space is None:
                    continue
                sch = space[0] if isinstance(space, list) else space
                return GpuSchedule(sch, self.name, notes=[f"dlight.gpu.{type(rule).__name__}"])
        return GpuSchedule(s_tir.Schedule(func), self.name, notes=["no dlight rule applied"])
