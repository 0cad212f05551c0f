"""Guard zones (red zones) around the buffers handed to generated code.

A kernel that writes past the end (or before the start) of a buffer lands, without guard
zones, in the allocator's bookkeeping or in another object: the process dies later, in some
other case, or not at all and a later case computes garbage.  With guard zones every buffer
is surrounded by bytes of a known value (:data:`CANARY`); after the kernel ran, a changed
zone byte is an out-of-bounds write *by this case*, reported as a ``crash`` of kind
``out_of_bounds`` at stage ``run`` naming the buffer and the element
(:class:`OutOfBoundsWrite`).

Shared by every backend that owns its buffers: the llvm backend (:class:`GuardedBuffer`,
zones before and after, handed to TVM zero-copy), the OpenCL and CUDA launchers
(:func:`with_redzone` / :func:`check_redzone`: a zone after each device buffer).

Invariants of :class:`GuardedBuffer`: the buffer starts on a :data:`ALIGN`-byte boundary
(TVM's ``kAllocAlignment``: generated code may use aligned vector loads), each zone is at
least :func:`zone_bytes` long, and TVM sees exactly the buffer's bytes — a zero-copy DLPack
view of the middle of one numpy allocation, so what the kernel writes is what is checked.
What guard zones cannot see: a write that jumps over a whole zone (it lands further away,
where glibc's allocator checks may catch it, :mod:`fuzzharness.core.hygiene`), and reads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fuzzharness.backends.device import GeneratedCodeError

CANARY = 0xA5
ALIGN = 64  # bytes; TVM's kAllocAlignment (runtime/device_api.h)
MIN_ZONE = 4096


def zone_bytes(nbytes: int) -> int:
    """A zone as long as the buffer (a whole extra row, plane or tile fits), at least 4 KiB,
    a multiple of :data:`ALIGN`."""
    return max(MIN_ZONE, -(-nbytes // ALIGN) * ALIGN)


# the name the OpenCL and CUDA launchers have used since they got red zones
redzone_bytes = zone_bytes


class OutOfBoundsWrite(GeneratedCodeError):
    """The generated code wrote outside a buffer: a TVM finding (``crash``/``out_of_bounds``)."""


def out_of_bounds(name: str, dtype: np.dtype, nbytes: int, first: int, last: int,
                  changed: int) -> OutOfBoundsWrite:
    """The error for zone bytes ``first..last`` (offsets from the buffer's first byte:
    negative before it, ≥ ``nbytes`` after it) found changed."""
    item = max(1, np.dtype(dtype).itemsize)
    element = first // item  # floor: byte -1 is element -1
    if first < 0:
        where = f"before the start of {name}: element {element} (byte {first})"
    else:
        where = (f"past the end of {name}: element {element} "
                 f"(byte +{first - nbytes} after its {nbytes} bytes)")
    message = f"out-of-bounds write: the kernel wrote {where}; {changed} guard byte(s) changed"
    details = {"kind": "out_of_bounds",
               "oob_write": {"buffer": name, "element": int(element), "first": int(first),
                             "last": int(last), "bytes_changed": int(changed),
                             "buffer_bytes": int(nbytes)}}
    return OutOfBoundsWrite(message, details)


class GuardedBuffer:
    """One buffer between two guard zones, in one numpy allocation (see the module doc)."""

    def __init__(self, content: np.ndarray):
        content = np.ascontiguousarray(content)
        self.dtype = content.dtype
        self.nbytes = int(content.nbytes)
        self.zone = zone_bytes(self.nbytes)
        self.raw = np.empty(2 * self.zone + self.nbytes + ALIGN, np.uint8)
        self.start = (-self.raw.ctypes.data) % ALIGN + self.zone
        self.raw[: self.start] = CANARY
        self.raw[self.start + self.nbytes:] = CANARY
        body = self.raw[self.start: self.start + self.nbytes]
        self.array = body.view(self.dtype).reshape(content.shape)
        self.array[...] = content

    def tensor(self):
        """A zero-copy TVM tensor of :attr:`array` (valid while this object lives)."""
        import tvm_ffi

        try:
            return tvm_ffi.from_dlpack(self.array)
        except BufferError:  # bfloat16, float8: DLPack knows no such numpy dtype
            bits = np.dtype(f"u{self.dtype.itemsize}")
            t = tvm_ffi.from_dlpack(self.array.view(bits))
            return t._create_view(tuple(self.array.shape), self.dtype.name)

    def damage(self) -> tuple[int, int, int] | None:
        """(first, last, count) of changed zone bytes, as offsets from the buffer's start."""
        before = np.flatnonzero(self.raw[: self.start] != CANARY)
        after = np.flatnonzero(self.raw[self.start + self.nbytes:] != CANARY)
        if not before.size and not after.size:
            return None
        offsets = np.concatenate([before - self.start, after + self.nbytes])
        return int(offsets[0]), int(offsets[-1]), int(offsets.size)

    def check(self, name: str) -> None:
        """Raise :class:`OutOfBoundsWrite` when a zone byte changed."""
        hit = self.damage()
        if hit is not None:
            raise out_of_bounds(name, self.dtype, self.nbytes, *hit)


def run_guarded(function, args: list[np.ndarray], n_outputs: int,
                names: list[str] | None = None) -> list[np.ndarray]:
    """Call ``function`` (a TVM packed function) on guarded copies of ``args`` (inputs, then
    outputs), in a fresh thread (:func:`in_fresh_thread`); check every zone; return the
    outputs.  Inputs are written back into ``args`` so that the caller's check that the kernel
    left its inputs alone still sees them."""
    guarded = [GuardedBuffer(a) for a in args]
    in_fresh_thread(function, *[g.tensor() for g in guarded])
    for i, g in enumerate(guarded):
        g.check(names[i] if names and i < len(names) else f"argument {i}")
    for a, g in zip(args, guarded, strict=True):
        a[...] = g.array
    return [g.array.copy() for g in guarded[len(guarded) - n_outputs:]]


def in_fresh_thread(function, *args) -> None:
    """Call ``function(*args)`` in a thread of its own, and wait for it.

    TVM keeps memory for kernels' temporaries in *thread-local* pools (the CPU workspace pool
    behind ``TVMBackendAllocWorkspace``, and the thread pool of ``parallel`` loops with its
    workers' own pools) and reuses it without clearing it.  A kernel that reads a temporary it
    never wrote then reads what an earlier case left there — a verdict that depends on the
    cases before it (``tests/test_confirmation.py`` has one).  A fresh thread gets fresh
    pools, whose pages come from malloc (filled by glibc's perturbation,
    :mod:`fuzzharness.core.hygiene`) and are freed when it ends.
    """
    import threading

    failure: list[BaseException] = []

    def call() -> None:
        try:
            function(*args)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(e)

    t = threading.Thread(target=call, name="fuzzharness-kernel")
    t.start()
    t.join()
    if failure:
        raise failure[0]


# -- device buffers: a zone after each (OpenCL, CUDA) ------------------------------------------
def with_redzone(content: np.ndarray) -> np.ndarray:
    """``content``'s bytes followed by a zone of canary bytes, as one uint8 array.

    A kernel that writes past the end of a buffer (an unguarded tail of a non-dividing split,
    say) lands in the zone instead of the runtime's heap; the read-back then reports it as an
    out-of-bounds write instead of the worker dying of heap corruption later.
    """
    raw = np.ascontiguousarray(content).view(np.uint8).reshape(-1)
    out = np.full(raw.size + zone_bytes(raw.size), CANARY, np.uint8)
    out[: raw.size] = raw
    return out


def check_redzone(full: np.ndarray, nbytes: int, name: str, dtype: Any = np.uint8) -> None:
    """Raise :class:`OutOfBoundsWrite` when the zone after the first ``nbytes`` changed."""
    bad = np.flatnonzero(full[nbytes:] != CANARY)
    if bad.size:
        raise out_of_bounds(name, np.dtype(dtype), nbytes, nbytes + int(bad[0]),
                            nbytes + int(bad[-1]), int(bad.size))


#: :class:`GuardedBuffer` for standalone repro scripts (tvm + numpy only): the same zones, the
#: same message, so a repro says which buffer and element an out-of-bounds write hit
SCRIPT_SOURCE = r'''
class OutOfBoundsWrite(RuntimeError):
    """The kernel wrote outside a buffer (into a guard zone)."""


class _Guarded:
    """A buffer between two zones of 0xA5 bytes (tvm-fuzzharness guard zones), 64-byte
    aligned, handed to TVM without a copy; check() names an out-of-bounds write."""

    def __init__(self, content):
        content = np.ascontiguousarray(content)
        self.dtype, self.nbytes = content.dtype, content.nbytes
        self.zone = max(4096, -(-self.nbytes // 64) * 64)
        self.raw = np.empty(2 * self.zone + self.nbytes + 64, np.uint8)
        self.start = (-self.raw.ctypes.data) % 64 + self.zone
        self.raw[: self.start] = 0xA5
        self.raw[self.start + self.nbytes:] = 0xA5
        body = self.raw[self.start: self.start + self.nbytes]
        self.array = body.view(self.dtype).reshape(content.shape)
        self.array[...] = content

    def tensor(self):
        try:
            return tvm.runtime.from_dlpack(self.array)
        except BufferError:  # bfloat16: DLPack has no such numpy dtype
            t = tvm.runtime.from_dlpack(self.array.view(f"u{self.dtype.itemsize}"))
            return t._create_view(tuple(self.array.shape), self.dtype.name)

    def check(self, name):
        before = np.flatnonzero(self.raw[: self.start] != 0xA5) - self.start
        after = np.flatnonzero(self.raw[self.start + self.nbytes:] != 0xA5) + self.nbytes
        hit = np.concatenate([before, after])
        if not hit.size:
            return
        first, item = int(hit[0]), max(1, self.dtype.itemsize)
        if first < 0:
            where = f"before the start of {name}: element {first // item} (byte {first})"
        else:
            where = (f"past the end of {name}: element {first // item} "
                     f"(byte +{first - self.nbytes} after its {self.nbytes} bytes)")
        raise OutOfBoundsWrite(f"out-of-bounds write: the kernel wrote {where}; "
                           f"{hit.size} guard byte(s) changed")
'''
