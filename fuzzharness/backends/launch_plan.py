"""A launch plan as plain data: how TVM's host function launches a program's kernels.

Read from TVM's lowered host function by :func:`fuzzharness.backends.launch.extract`; run by
the GPU backends (:mod:`fuzzharness.backends.opencl`, :mod:`fuzzharness.backends.cuda`) and
embedded in repro scripts (:mod:`fuzzharness.repro.gpu_runtime`).  Invariants: plain JSON
data (``to_dict``/``from_dict`` round-trip); launches in the order the host function issues
them; every buffer argument names a parameter index of the PrimFunc or a temporary in
``temps``.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class ParamSpec:
    name: str
    dtype: str
    shape: list[int]
    scope: str = "global"


@dataclasses.dataclass
class Texture:
    """An image as TVM lays it out: ``(depth, height, width, channels)`` elements, C order."""

    width: int
    height: int
    depth: int
    channel_bits: int  # 128: 4 × 32-bit, 64: 4 × 16-bit

    @property
    def shape_dhwc(self) -> tuple[int, int, int, int]:
        return (self.depth, self.height, self.width, 4)


@dataclasses.dataclass
class TempSpec:
    name: str
    dtype: str
    elements: int
    scope: str = "global"
    texture: Texture | None = None


@dataclasses.dataclass
class KernelArgType:
    kind: str  # "buffer" | "scalar"
    dtype: str
    scope: str = "global"

    @property
    def is_texture(self) -> bool:
        return self.kind == "buffer" and "texture" in self.scope


@dataclasses.dataclass
class Launch:
    kernel: str
    args: list[dict[str, Any]]  # {"param": i} | {"temp": name} | {"scalar": v, "dtype": d}
    grid: list[int]
    block: list[int]
    dyn_shared_bytes: int = 0


@dataclasses.dataclass
class LaunchPlan:
    params: list[ParamSpec]
    temps: list[TempSpec]
    launches: list[Launch]
    kernels: dict[str, list[KernelArgType]]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LaunchPlan:
        def temp(t: dict[str, Any]) -> TempSpec:
            t = dict(t)
            if t.get("texture") is not None:
                t["texture"] = Texture(**t["texture"])
            return TempSpec(**t)

        return cls(
            params=[ParamSpec(**p) for p in d["params"]],
            temps=[temp(t) for t in d["temps"]],
            launches=[Launch(**x) for x in d["launches"]],
            kernels={k: [KernelArgType(**a) for a in v] for k, v in d["kernels"].items()},
        )

    def summary(self) -> str:
        """One line per launch, for verdict details and repro headers."""
        lines = []
        for x in self.launches:
            args = ", ".join(
                f"param{a['param']}" if "param" in a else a["temp"] if "temp" in a
                else f"{a['dtype']}({a['scalar']})" for a in x.args
            )
            lines.append(f"{x.kernel}<<<{tuple(x.grid)}, {tuple(x.block)}, {x.dyn_shared_bytes}>>>({args})")
        return "\n".join(lines)
