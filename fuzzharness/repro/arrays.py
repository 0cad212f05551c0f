"""numpy arrays as Python source that needs only numpy (and, for bfloat16, ml_dtypes).

Three spellings, most readable first, each exact (the array the source evaluates to equals
the given one bit for bit, which :func:`array_source` checks before returning):

* ``np.full(shape, v, dtype)`` when every element is the same;
* a literal ``np.array([...], dtype)`` for small arrays (integers written as integers,
  :data:`LITERAL_LIMIT` elements, :data:`INT_LITERAL_LIMIT` when every value is an integer;
  floats with ``repr``, which round-trips float64 exactly — and every float16/float32 value
  is a float64 value);
* ``_unpack("...", dtype, shape)``: base64 of the zlib-compressed little-endian bytes, for
  anything larger (:data:`UNPACK_HELPER` must then be part of the script).
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

LITERAL_LIMIT = 64  # elements written out as a literal (small integers: INT_LITERAL_LIMIT)
INT_LITERAL_LIMIT = 512

UNPACK_HELPER = '''
def _unpack(text, dtype, shape):
    """An array stored as base64 of its zlib-compressed little-endian bytes."""
    import base64
    import zlib

    raw = zlib.decompress(base64.b64decode(text))
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape).copy()
'''


def dtype_source(dtype: np.dtype) -> str:
    """How the script names ``dtype``: a string numpy understands (bfloat16 via ml_dtypes)."""
    name = np.dtype(dtype).name
    return "ml_dtypes.bfloat16" if name == "bfloat16" else repr(name)


def needs_ml_dtypes(dtype: np.dtype) -> bool:
    return np.dtype(dtype).name == "bfloat16"


def _scalar(x: float | int, integral: bool) -> str:
    if integral:
        return str(int(x))
    if np.isnan(x):
        return "np.nan"
    if np.isinf(x):
        return "np.inf" if x > 0 else "-np.inf"
    return repr(float(x))


def _nested(a: np.ndarray, integral: bool) -> str:
    if a.ndim == 0:
        return _scalar(a.item(), integral)
    if a.ndim == 1:
        return "[" + ", ".join(_scalar(v, integral) for v in a.tolist()) + "]"
    return "[" + ", ".join(_nested(sub, integral) for sub in a) + "]"


def _candidate(a: np.ndarray, packed: bool) -> str:
    dt = dtype_source(a.dtype)
    shape = tuple(int(s) for s in a.shape)
    wide = a.astype(np.float64) if a.dtype.kind == "V" or a.dtype.name == "bfloat16" else a
    flat = np.asarray(wide).reshape(-1)
    floating = flat.dtype.kind == "f"
    finite = bool(np.all(np.isfinite(flat))) if floating else True
    integral = flat.dtype.kind in "iub" or (finite and bool(np.all(flat == np.round(flat))))
    if flat.size and not packed:
        same = flat == flat[0]
        if floating:
            same |= np.isnan(flat) & np.isnan(flat[0])
        if np.all(same):
            return f"np.full({shape}, {_scalar(flat[0], integral)}, dtype={dt})"
    if not packed and a.size == 0:
        return f"np.zeros({shape}, dtype={dt})"
    if not packed and a.size <= (INT_LITERAL_LIMIT if integral else LITERAL_LIMIT):
        return f"np.array({_nested(np.asarray(wide), integral)}, dtype={dt})"
    raw = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
    text = base64.b64encode(zlib.compress(raw, 9)).decode()
    return f"_unpack({text!r}, {dt}, {shape})"


def evaluate(source: str) -> np.ndarray:
    import ml_dtypes  # noqa: F401  (named by bfloat16 sources)

    ns: dict = {"np": np, "ml_dtypes": ml_dtypes}
    exec(UNPACK_HELPER, ns)  # noqa: S102 - our own generated source
    return eval(source, ns)  # noqa: S307


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.dtype == b.dtype and a.shape == b.shape
            and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())


def array_source(a: np.ndarray) -> str:
    """Source evaluating to ``a`` exactly (checked); the packed form when nothing else is."""
    a = np.asarray(a)
    text = _candidate(a, packed=False)
    if same_bits(evaluate(text), a):
        return text
    return _candidate(a, packed=True)


def is_packed(source: str) -> bool:
    return source.startswith("_unpack(")
