"""The float64 reference of a TIR workload as a few lines of numpy: the operator's definition.

A repro script (and the snippet in its issue) states what the kernel should compute in the
terms a maintainer reads — ``C = A @ B``, ``O = max over each window`` — rather than as
numbers computed elsewhere.  :func:`numpy_source` returns those lines for a case: they read
the float64 input arrays, named after the kernel's parameters, and assign one float64 array
per output, named after it.  A workload may define its own ``numpy_source(params)``; for the
registered workloads the definitions are here (:data:`SOURCES`).

These lines are the *definition*, not the harness's error model: the repro writer
(:mod:`fuzzharness.kinds.tir.reference`) checks that they give the harness's float64 values
— bit for bit where the bound is 0 (exact-integer inputs, exact operations), to within a
billionth of the error bound elsewhere (a different float64 summation order) — and embeds
the values instead when they do not.  Returns None when a workload has no definition here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fuzzharness.generators.workloads import workloads

Source = Callable[[dict[str, Any]], list[str]]


def _lit(x: float) -> str:
    return repr(float(x))


def _chain(steps: list[dict], start: str, out: str) -> list[str]:
    """An elementwise chain (:mod:`fuzzharness.generators.workloads.chain`) on ``start``."""
    forms = {"add": "v + {b}", "sub": "v - {b}", "mul": "v * {b}", "max": "np.maximum(v, {b})",
             "min": "np.minimum(v, {b})", "relu": "np.maximum(v, 0.0)", "abs": "np.abs(v)",
             "neg": "0.0 - v", "exp": "np.exp(v)", "sigmoid": "1.0 / (1.0 + np.exp(-v))",
             "tanh": "np.tanh(v)"}
    lines = [f"v = {start}"]
    for step in steps:
        lines.append(f"v = {forms[step['op']].format(b=step.get('arg'))}  # {step['op']}")
    lines.append(f"{out} = v")
    return lines


def _matmul(p):
    return ["C = A @ B"]


def _row_sum(p):
    return ["B = A.sum(axis=1)"]


def _batch_matmul(p):
    a = "A.swapaxes(1, 2)" if p.get("transpose_a") else "A"
    b = "B.swapaxes(1, 2)" if p.get("transpose_b") else "B"
    return [f"C = {a} @ {b}  # batched: C[b] = A[b] @ B[b]"]


def _dense(p):
    return ["Y = X @ W.T + bias"] + (["Y = np.maximum(Y, 0.0)  # relu"] if p.get("relu") else [])


def _fused(p):
    return _chain(p["steps"], "A @ B", "out")


def _elementwise(p):
    return _chain(p["steps"], "X", "out")


def _reduce(p):
    from fuzzharness.generators.workloads.base import lowest_value
    from fuzzharness.oracles import numerics

    wl = workloads["reduce"]
    _, acc, _ = wl.io_dtypes(p)
    axes = tuple(p["axes"])
    shape = tuple(wl.out_shape(p))
    op = p["op"]
    if op == "max":
        return [f"out = np.maximum(A.max(axis={axes}), {_lit(lowest_value(acc))}).reshape({shape})"]
    if op == "min":
        top = -lowest_value(acc) if numerics.is_float(acc) else numerics.int_range(acc)[1]
        return [f"out = np.minimum(A.min(axis={axes}), {_lit(top)}).reshape({shape})"]
    lines = [f"out = A.sum(axis={axes}).reshape({shape})"]
    if op == "mean":
        lines.append(f"out = out / {_lit(wl.k(p))}")
    return lines


def _argmax(p):
    shape = tuple(p["shape"][:-1]) or (1,)
    f = p["kind"]
    g = "max" if f == "argmax" else "min"
    return [f"I = A.{f}(axis=-1).reshape({shape})", f"V = A.{g}(axis=-1).reshape({shape})"]


def _pad(p):
    import numpy as np

    from fuzzharness.oracles import numerics

    wl = workloads["pad"]
    value = float(numerics.round_to(np.float64(wl.pad_value(p)[1]), p["dtype"]).astype(np.float64))
    pads = [tuple(x) for x in p["pads"]]
    return [f"out = np.pad(A, {pads}, constant_values={_lit(value)})"]


def _pool2d(p):
    from fuzzharness.generators.workloads.base import lowest_value

    wl = workloads["pool2d"]
    _, acc, _ = wl.io_dtypes(p)
    oh, ow = wl.out_h(p), wl.out_w(p)
    s, pad, kh, kw = p["stride"], p["pad"], p["KH"], p["KW"]
    nchw = p["layout"] == "NCHW"
    fill = _lit(lowest_value(acc)) if p["kind"] == "max" else "0.0"
    lines = [("x = I.transpose(0, 2, 3, 1)  # NCHW → NHWC" if nchw else "x = I"),
             f"x = np.pad(x, ((0, 0), ({pad}, {pad}), ({pad}, {pad}), (0, 0)), constant_values={fill})",
             f"win = np.lib.stride_tricks.sliding_window_view(x, ({kh}, {kw}), axis=(1, 2))"
             f"[:, ::{s}, ::{s}][:, :{oh}, :{ow}]  # (N, OH, OW, C, KH, KW)"]
    if p["kind"] == "max":
        lines.append(f"O = np.maximum(win.max(axis=(4, 5)), {fill})")
    elif p["count_include_pad"]:
        lines.append(f"O = win.sum(axis=(4, 5)) / {_lit(kh * kw)}")
    else:
        lines += [f"rows = np.minimum(np.arange({oh}) * {s} - {pad} + {kh}, {p['H']}) - "
                  f"np.maximum(np.arange({oh}) * {s} - {pad}, 0)",
                  f"cols = np.minimum(np.arange({ow}) * {s} - {pad} + {kw}, {p['W']}) - "
                  f"np.maximum(np.arange({ow}) * {s} - {pad}, 0)",
                  "O = win.sum(axis=(4, 5)) / (rows[:, None] * cols[None, :])[None, :, :, None]"
                  "  # real elements only"]
    if nchw:
        lines.append("O = O.transpose(0, 3, 1, 2)  # NHWC → NCHW")
    return lines


def _conv2d(p):
    from fuzzharness.generators.workloads.conv2d import out_extent

    pad, s, d = p["pad"], p["stride"], p["dilation"]
    oh = out_extent(p["H"], p["KH"], s, pad, d)
    ow = out_extent(p["W"], p["KW"], s, pad, d)
    nchw = p["layout"] == "NCHW"
    lines = [("x, w = I.transpose(0, 2, 3, 1), W.transpose(2, 3, 1, 0)  # → NHWC, HWIO" if nchw
              else "x, w = I, W  # NHWC, HWIO"),
             f"x = np.pad(x, ((0, 0), ({pad}, {pad}), ({pad}, {pad}), (0, 0)))",
             f"O = np.zeros((x.shape[0], {oh}, {ow}, w.shape[3]))",
             f"for r in range({p['KH']}):",
             f"    for c in range({p['KW']}):",
             f"        O += x[:, r * {d}:r * {d} + {s * (oh - 1) + 1}:{s}, "
             f"c * {d}:c * {d} + {s * (ow - 1) + 1}:{s}, :] @ w[r, c]"]
    if nchw:
        lines.append("O = O.transpose(0, 3, 1, 2)  # NHWC → NCHW")
    return lines


def _depthwise(p):
    wl = workloads["depthwise_conv2d"]
    pad, s, d = p["pad"], p["stride"], p["dilation"]
    oshape = wl.shapes(p)[2]
    oh, ow = oshape[2], oshape[3]
    return [f"x = np.pad(I, ((0, 0), (0, 0), ({pad}, {pad}), ({pad}, {pad})))  # NCHW",
            f"O = np.zeros((x.shape[0], x.shape[1], {oh}, {ow}))",
            f"for r in range({p['KH']}):",
            f"    for c in range({p['KW']}):",
            f"        O += x[:, :, r * {d}:r * {d} + {s * (oh - 1) + 1}:{s}, "
            f"c * {d}:c * {d} + {s * (ow - 1) + 1}:{s}] * W[:, 0, r, c][None, :, None, None]"]


def _softmax(p):
    return ["e = np.exp(X - X.max(axis=-1, keepdims=True))",
            "Y = e / e.sum(axis=-1, keepdims=True)"]


def _layer_norm(p):
    import numpy as np

    from fuzzharness.generators.workloads.layer_norm import DTYPE_LABELS, EPS

    stat = DTYPE_LABELS[p["dtype"]][1]
    eps = float(np.array(EPS, dtype=stat))
    return ["n = X.shape[-1]",
            "mean = X.sum(axis=-1, keepdims=True) / n",
            "d = X - mean",
            "var = (d * d).sum(axis=-1, keepdims=True) / n",
            f"Y = d * (1.0 / np.sqrt(var + {_lit(eps)})) * gamma + beta"
            f"  # eps = {EPS:g} as the kernel's {stat} literal"]


#: workload name → its definition in numpy
SOURCES: dict[str, Source] = {
    "matmul": _matmul, "row_sum": _row_sum, "batch_matmul": _batch_matmul, "dense": _dense,
    "fused_epilogue": _fused, "elementwise": _elementwise, "reduce": _reduce,
    "argmax": _argmax, "pad": _pad, "pool2d": _pool2d, "conv2d": _conv2d,
    "depthwise_conv2d": _depthwise, "softmax": _softmax, "layer_norm": _layer_norm,
}


def numpy_source(workload: str, params: dict[str, Any]) -> list[str] | None:
    """The numpy lines of ``workload`` with ``params`` (see the module docstring)."""
    own = getattr(workloads[workload], "numpy_source", None) if workload in workloads else None
    try:
        if own is not None:
            return list(own(params))
        f = SOURCES.get(workload)
        return f(params) if f is not None else None
    except Exception:  # noqa: BLE001 - a definition that does not fit these params: embed
        return None


def needs_rounding(case, e, output: str) -> bool:
    """In the exact-integer mode the kernel must return the exact value correctly rounded to
    its output dtype: does that rounding change anything for these inputs (a division, say)?"""
    import numpy as np

    lines = numpy_source(case.workload_name, case.params)
    if lines is None:
        return True
    ns = {"np": np, **{k: np.asarray(v).astype(np.float64) for k, v in e.inputs.items()}}
    try:
        with np.errstate(all="ignore"):
            exec("\n".join(lines), ns)  # noqa: S102 - our own source
        value = np.asarray(ns[output], dtype=np.float64)
    except Exception:  # noqa: BLE001
        return True
    want = np.asarray(e.expected[output].value, dtype=np.float64)
    return value.shape != want.shape or value.tobytes() != want.tobytes()
