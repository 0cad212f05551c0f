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
        for x in compact_launches([dataclasses.asdict(x) for x in self.launches]):
            args = ", ".join(
                f"param{a['param']}" if "param" in a else a["temp"] if "temp" in a
                else f"{a['dtype']}(loop{a['loop']})" if "loop" in a
                else f"{a['dtype']}({a['scalar']})" for a in x["args"]
            )
            loops = ("  for " + ", ".join(f"loop{k} in range{tuple(r)}" for k, r in enumerate(x["loops"]))
                     if "loops" in x else "")
            lines.append(f"{x['kernel']}<<<{tuple(x['grid'])}, {tuple(x['block'])}, "
                         f"{x['dyn_shared_bytes']}>>>({args}){loops}")
        return "\n".join(lines)


def compact_launches(launches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``launches`` (plain data, in order) with each run of launches that a host loop makes
    written once: the same kernel, grid, block and buffer arguments, and scalar arguments
    that step through nested ranges (outer first) become ``{"loop": k, "dtype": d}`` with
    ``"loops": [[start, stop, step], ...]``.  :func:`expand_launches` gives back exactly the
    launches (a run that is no such product stays as it is).  A host loop around a kernel
    launch made 2 048 launches, 21 078 lines, of one repro's plan."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(launches):
        j = i + 1
        while j < len(launches) and _same_but_scalars(launches[i], launches[j]):
            j += 1
        looped = _as_loops(launches[i:j]) if j - i > 2 else None
        out.extend([looped] if looped else launches[i:j])
        i = j
    return out


def _same_but_scalars(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def shape(x: dict[str, Any]) -> Any:
        return ({k: v for k, v in x.items() if k != "args"},
                [a.get("dtype") if "scalar" in a else a for a in x["args"]])
    return shape(a) == shape(b)


def _as_loops(run: list[dict[str, Any]]) -> dict[str, Any] | None:
    cols = [k for k, a in enumerate(run[0]["args"]) if "scalar" in a
            and len({x["args"][k]["scalar"] for x in run}) > 1]
    changes = {k: sum(x["args"][k]["scalar"] != y["args"][k]["scalar"]
                      for x, y in zip(run, run[1:], strict=False)) for k in cols}
    order = sorted(cols, key=lambda k: changes[k])  # the outer loop changes least often
    loops = []
    for k in order:
        values = list(dict.fromkeys(x["args"][k]["scalar"] for x in run))
        step = values[1] - values[0] if all(isinstance(v, int) for v in values) else 0
        if not step or values != list(range(values[0], values[0] + step * len(values), step)):
            return None  # not a counted loop: kept launch by launch
        loops.append([values[0], values[0] + step * len(values), step])
    loop_of = {k: n for n, k in enumerate(order)}
    compact = dict(run[0], args=[{"loop": loop_of[k], "dtype": a["dtype"]} if k in loop_of else a
                                 for k, a in enumerate(run[0]["args"])], loops=loops)
    return compact if expand_launches([compact]) == run else None


def expand_launches(launches):
    """The launches of a plan whose host loops :func:`compact_launches` wrote once (this
    function is copied into repro scripts as it is)."""
    import itertools

    out = []
    for x in launches:
        if "loops" not in x:
            out.append(x)
            continue
        for values in itertools.product(*(range(*loop) for loop in x["loops"])):
            args = [{"scalar": values[a["loop"]], "dtype": a["dtype"]} if "loop" in a else a
                    for a in x["args"]]
            out.append({k: v for k, v in x.items() if k != "loops"} | {"args": args})
    return out
