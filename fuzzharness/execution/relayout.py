"""Calling a function whose parameters ``transform_layout`` re-laid out.

``transform_layout`` on a parameter buffer changes the function's signature: the kernel now
takes (or writes) that tensor in the new layout, e.g. ``A[i, k]`` as ``A'[k // 8, i, k % 8]``
with padding where 8 does not divide K.  To call it, the harness lays each input out in the
new layout (padding filled with the transform's ``pad_value``: TVM may assume it is there),
and reads each output back through the same map.  The reference keeps using the original
layout, so a relayout bug in TVM still shows as a wrong result.

Which parameter got which map is read from the trace itself, not from generator bookkeeping,
so hand-written and MetaSchedule traces work too: for every ``TransformLayout`` instruction
the trace prefix ending with it is replayed, and the buffer it names (block, read/write index)
is looked up there; when that buffer is a parameter, its map joins the parameter's chain.  Index maps are evaluated on index arrays with numpy
(:func:`evaluate`): the affine, floordiv and floormod expressions index maps are made of.

Invariants: ``from_kernel(to_kernel(x)) == x`` for every layout; ``padding_mask`` marks the
elements of the kernel-side array that no original element maps to.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from fuzzharness.core.tvm_support import replay_trace
from fuzzharness.oracles import index_eval


class UnsupportedIndexMap(ValueError):
    """An index-map expression the numpy evaluator does not know (a harness limitation)."""


def evaluate(expr, env: dict[Any, np.ndarray]) -> np.ndarray:
    """Evaluate an integer PrimExpr over numpy arrays bound to its variables
    (:func:`fuzzharness.oracles.index_eval.evaluate`)."""
    try:
        return index_eval.evaluate(expr, env)
    except index_eval.Unevaluable as e:
        if e.why == "unbound":
            raise UnsupportedIndexMap(f"unbound variable {expr} in an index map") from None
        raise UnsupportedIndexMap(f"cannot evaluate {type(e.expr).__name__} in an index map: "
                                  f"{e.expr}") from None


@dataclasses.dataclass
class Layout:
    """The chain of index maps applied to one parameter, and the layout it ends in."""

    shape: tuple[int, ...]  # the original (reference) shape
    maps: list  # IndexMap objects, in the order applied
    pad_value: float = 0.0

    def kernel_shape(self) -> tuple[int, ...]:
        shape = list(self.shape)
        for m in self.maps:
            shape = [int(s) for s in m.map_shape(shape)]
        return tuple(shape)

    def coordinates(self) -> tuple[np.ndarray, ...]:
        """For every original element (C order), its coordinates in the kernel layout."""
        coords = [c.reshape(-1) for c in np.indices(self.shape, dtype=np.int64)]
        for m in self.maps:
            env = dict(zip(m.initial_indices, coords, strict=True))
            coords = [np.broadcast_to(evaluate(e, env), coords[0].shape) for e in m.final_indices]
        return tuple(coords)

    def to_kernel(self, x: np.ndarray) -> np.ndarray:
        out = np.full(self.kernel_shape(), self.pad_value, dtype=x.dtype)
        out[self.coordinates()] = x.reshape(-1)
        return out

    def from_kernel(self, y: np.ndarray) -> np.ndarray:
        return y[self.coordinates()].reshape(self.shape)

    def padding_mask(self) -> np.ndarray:
        mask = np.ones(self.kernel_shape(), dtype=bool)
        mask[self.coordinates()] = False
        return mask


def param_layouts(func, trace_json: Any) -> dict[str, Layout]:
    """Parameters that the trace re-laid out → their :class:`Layout` (empty: none)."""

    if not trace_json:
        return {}
    insts, decisions = trace_json[0], trace_json[1] if len(trace_json) > 1 else []
    positions = [p for p, inst in enumerate(insts) if inst[0] == "TransformLayout"]
    if not positions:
        return {}
    from fuzzharness.core.tvm_compat import param_buffers

    shapes = {str(p.name): tuple(int(s) for s in p.shape) for p in param_buffers(func)}
    layouts: dict[str, Layout] = {}

    def prefix(n: int):
        trace = [insts[:n], [d for d in decisions if d[0] < n]]
        return replay_trace(func, json.loads(json.dumps(trace)))

    for pos in positions:
        sch = prefix(pos + 1)
        inst = sch.trace.insts[-1]  # the TransformLayout, with live random variables
        block, index_map = inst.inputs[0], inst.inputs[1]
        index, is_write, pad = int(inst.attrs[0]), int(inst.attrs[1]) == 1, inst.attrs[2]
        node = sch.get(block)
        name = str((node.writes if is_write else node.reads)[index].source.name)
        if name not in shapes:
            continue  # an intermediate buffer: nothing for the caller to do
        layout = layouts.setdefault(name, Layout(shapes[name], []))
        layout.maps.append(index_map)
        if pad is not None:
            layout.pad_value = _constant(pad)
    return layouts


def _constant(pad) -> float:
    """The constant a ``pad_value`` IndexMap returns (the generator only uses constants)."""
    from tvm import tirx

    value = pad.final_indices[0] if hasattr(pad, "final_indices") else pad
    if isinstance(value, tirx.IntImm | tirx.FloatImm):
        return float(value.value)
    raise UnsupportedIndexMap(f"non-constant pad value {pad}")


def kernel_array(layouts: dict[str, Layout], name: str, x: np.ndarray) -> np.ndarray:
    """``x`` (reference layout) as parameter ``name`` of the scheduled kernel takes it."""
    return layouts[name].to_kernel(x) if name in layouts else x


def kernel_shape(layouts: dict[str, Layout], name: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    return layouts[name].kernel_shape() if name in layouts else tuple(shape)


def reference_array(layouts: dict[str, Layout], name: str, y: np.ndarray) -> np.ndarray:
    """Parameter ``name`` as the kernel left it, back in the reference layout."""
    return layouts[name].from_kernel(y) if name in layouts else y


def unfilled_padding(layouts: dict[str, Layout], name: str, y: np.ndarray) -> int:
    """How many padding elements of output ``y`` do not hold the transform's pad value.

    TVM promises that a producer of a padded buffer writes the pad value into the padding.
    """
    if name not in layouts:
        return 0
    layout = layouts[name]
    pad = y[layout.padding_mask()]
    return int(np.count_nonzero(pad != np.asarray(layout.pad_value, dtype=y.dtype)))
