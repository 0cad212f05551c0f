"""Heap hygiene: glibc's own allocator checks in every process that runs generated code.

A persistent worker runs hundreds of cases in one process.  Generated code that writes out
of bounds, or reads memory nothing wrote, then makes *later* cases fail or pass by accident,
and the same seed stops giving the same verdicts.  Two of glibc's malloc tunables
(``GLIBC_TUNABLES``; they are read when a process starts, so they are given to each worker,
minimizer, replay and repro child process in its environment) make that deterministic:

``glibc.malloc.perturb=1``  every ``malloc``'d block starts filled with ``0xFE`` bytes
    (``perturb ^ 0xFF``) and every freed block is overwritten with ``0x01``: an
    uninitialised read gives the same garbage in every process and every run — conspicuous
    garbage: ``0xFEFE`` is a NaN in float16, ``0xFEFEFEFE`` is −1.7e38 in float32, −16843010
    in int32 — instead of whatever an earlier case left there;
``glibc.malloc.check=3``    the allocator checks its bookkeeping on every call (a guard
    byte after each block; ``free`` of a damaged block aborts with glibc's own message, e.g.
    ``free(): invalid pointer``), so heap corruption stops the process at the free nearest
    to it, usually inside the case that did it.  Since glibc 2.34 the checking allocator is
    a separate library that must be preloaded (``LD_PRELOAD=libc_malloc_debug.so.0``); it
    also turns off the per-thread cache, whose free-list pointers would otherwise be the
    first bytes of a reused block (so, without it, perturbation misses small blocks).
``glibc.malloc.mmap_threshold``, ``glibc.malloc.trim_threshold``  fixed at the highest
    values plain glibc raises them to by itself (:data:`THRESHOLDS`), which the checking
    allocator never does: a speed setting, not a check — the same blocks, perturbed and
    guarded the same way, come from the heap instead of a fresh mapping each (a worker's
    case: 7 % less CPU, ``benchmarks/hygiene_cost.py --configs untuned,checks+zones``).

(In a running worker, ``/proc/PID/environ`` shows ``GLIBC_TUNABLES`` cut down to its first
tunable — glibc rewrites the variable while reading it; the effects of all of them stay, as
``tests/test_confirmation.py`` checks one by one.)

Measured on the 2-core CI machine (TVM 0.27, glibc 2.36): ``import tvm`` costs the same
with and without (1.1–1.2 s CPU); a TVM tensor written one element past its end is silently
survived without the checks (sizes 16–4096 elements) and aborts with ``free(): invalid
pointer`` with them, every time.  What the checks cost per case is in
docs/campaign-output.md ("Confirmation and heap hygiene").

Kernels also run in a thread of their own (:func:`fuzzharness.backends.redzone.in_fresh_thread`)
so that TVM's thread-local workspace and thread pools, which recycle memory without malloc,
start empty for every case.

Limits: memory that is not malloc'd per use is neither perturbed nor checked (stack
temporaries, the Relax VM's pooled allocator, memory a library recycles itself), and no
allocator setting makes a data race deterministic: seed 20261124 case #92, a float32
``layer_norm`` whose merged loop nest runs ``parallel``, gives a different wrong result on
most runs and passes on some, alone or not.  Guard zones around argument buffers
(:mod:`fuzzharness.backends.redzone`) and confirmation of every failure in a fresh worker
(:mod:`fuzzharness.campaign.confirm`, which also re-runs alone a failure that seemed not to
reproduce) cover what this cannot.

Other C libraries (musl, macOS) ignore these variables: the environment is left as it is.
On glibc before 2.34, ``MALLOC_CHECK_``/``MALLOC_PERTURB_`` do the same without a preload.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path

#: ``glibc.malloc.perturb``: malloc fills with ``PERTURB ^ 0xFF`` = 0xFE, free with 0x01
PERTURB = 0x01
#: ``glibc.malloc.check``: 3 = print a diagnostic and abort on any inconsistency
CHECK = 3
DEBUG_LIBRARY = "libc_malloc_debug.so.0"
#: read by the llvm backend in the worker: guard zones around argument buffers (1/0)
GUARD_ZONES_ENV = "FUZZHARNESS_GUARD_ZONES"
#: Fixed thresholds, the highest plain glibc's malloc raises them to by itself: blocks up
#: to 32 MiB come from the heap, and up to 64 MiB of free heap top is kept.  The checking
#: allocator's ``free`` unmaps a large block without raising the mmap threshold as plain
#: ``free`` does (glibc malloc/malloc-check.c, ``free_check``), so it stays at 128 KiB:
#: every block above that is mapped, perturbed page by page and unmapped again, and the
#: heap top is trimmed at 128 KiB free — ≈ 3 500 page faults a case against ≈ 100 with
#: these values, for the same blocks, perturbation and guard byte after each of them.
THRESHOLDS = {"glibc.malloc.mmap_threshold": str(32 << 20),
              "glibc.malloc.trim_threshold": str(64 << 20)}
TUNABLES = {"glibc.malloc.perturb": str(PERTURB), "glibc.malloc.check": str(CHECK),
            **THRESHOLDS}
#: the tunables that need no preloaded library
PLAIN_TUNABLES = {k: v for k, v in TUNABLES.items() if k != "glibc.malloc.check"}


def glibc_version() -> tuple[int, int] | None:
    """(major, minor) of the C library of this process when it is glibc, else None."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        return None
    if not text or not text.startswith("glibc "):
        return None
    try:
        major, minor = text.split()[1].split(".")[:2]
        return int(major), int(minor)
    except (IndexError, ValueError):
        return None


@functools.cache
def debug_library() -> str | None:
    """The path of glibc's checking allocator next to the libc this process runs on."""
    try:
        with open("/proc/self/maps") as f:
            libc = next((line.split()[-1] for line in f
                         if line.rstrip().endswith(("/libc.so.6", "/libc-2.so"))), None)
    except OSError:
        libc = None
    dirs = [str(Path(libc).parent)] if libc else []
    dirs += ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
             "/lib/aarch64-linux-gnu", "/usr/lib"]
    for d in dirs:
        candidate = os.path.join(d, DEBUG_LIBRARY)
        if os.path.exists(candidate):
            return candidate
    return None


def hygiene_env(env: Mapping[str, str], *, enabled: bool = True) -> dict[str, str]:
    """``env`` for a process that runs generated code, with the allocator checks on.

    Our tunables replace settings of the same names already in ``GLIBC_TUNABLES``; other
    tunables and other ``LD_PRELOAD`` entries are kept.  ``enabled=False`` returns ``env``
    with the guard zones switched off too (what the cost benchmark compares against).
    """
    out = dict(env)
    if not enabled:
        out[GUARD_ZONES_ENV] = "0"
        return out
    out.setdefault(GUARD_ZONES_ENV, "1")  # an explicit 0 is kept (to see what zones catch)
    version = glibc_version()
    if version is None:
        return out
    if version < (2, 34):  # the checks are built into libc, switched on by variables
        out["MALLOC_CHECK_"], out["MALLOC_PERTURB_"] = str(CHECK), str(PERTURB)
        out["MALLOC_MMAP_THRESHOLD_"] = THRESHOLDS["glibc.malloc.mmap_threshold"]
        out["MALLOC_TRIM_THRESHOLD_"] = THRESHOLDS["glibc.malloc.trim_threshold"]
        return out
    library = debug_library()
    if library is None:  # perturbation works without the library (check does not)
        out["GLIBC_TUNABLES"] = _merge_tunables(out.get("GLIBC_TUNABLES", ""), PLAIN_TUNABLES)
        return out
    out["GLIBC_TUNABLES"] = _merge_tunables(out.get("GLIBC_TUNABLES", ""), TUNABLES)
    preload = [p for p in out.get("LD_PRELOAD", "").replace(":", " ").split()
               if os.path.basename(p) != DEBUG_LIBRARY]
    out["LD_PRELOAD"] = " ".join([library, *preload])
    return out


def _merge_tunables(text: str, ours: Mapping[str, str]) -> str:
    kept = [t for t in text.split(":") if t and t.split("=", 1)[0] not in ours]
    return ":".join(kept + [f"{k}={v}" for k, v in ours.items()])


def active(env: Mapping[str, str] | None = None) -> dict[str, object]:
    """What hygiene the environment ``env`` (default: this process's) asks for, as plain
    data: recorded with the campaign and printed by ``replay``."""
    env = os.environ if env is None else env
    tunables = dict(t.split("=", 1) for t in env.get("GLIBC_TUNABLES", "").split(":") if "=" in t)
    check = tunables.get("glibc.malloc.check") or env.get("MALLOC_CHECK_")
    perturb = tunables.get("glibc.malloc.perturb") or env.get("MALLOC_PERTURB_")
    preloaded = DEBUG_LIBRARY in env.get("LD_PRELOAD", "")
    return {
        "malloc_check": int(check) if check and (preloaded or "MALLOC_CHECK_" in env) else 0,
        "malloc_perturb": int(perturb) if perturb else 0,
        "guard_zones": env.get(GUARD_ZONES_ENV, "1") != "0",
    }


def guard_zones_enabled() -> bool:
    """Guard zones around llvm argument buffers in this process (on unless switched off)."""
    return os.environ.get(GUARD_ZONES_ENV, "1") != "0"


#: the same policy as source text for standalone repro scripts (tvm + numpy + stdlib only):
#: their child process, which compiles and runs, is started with ``env=_hygiene_env()``
SCRIPT_SOURCE = r'''
def _hygiene_env():
    """The child's environment with glibc's allocator checks (tvm-fuzzharness heap hygiene):
    an uninitialised read gives the same garbage (0xFE bytes) in every run, and heap damage
    stops the process at the nearest free with glibc's own message."""
    env = dict(os.environ)
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        libc = ""
    if not libc.startswith("glibc"):
        return env
    env["MALLOC_CHECK_"], env["MALLOC_PERTURB_"] = "3", "1"  # glibc before 2.34
    env["MALLOC_MMAP_THRESHOLD_"], env["MALLOC_TRIM_THRESHOLD_"] = "33554432", "67108864"
    dirs = []
    try:
        with open("/proc/self/maps") as maps:
            dirs += [os.path.dirname(ln.split()[-1]) for ln in maps
                     if ln.rstrip().endswith("/libc.so.6")]
    except OSError:
        pass
    lib = next((os.path.join(d, "libc_malloc_debug.so.0") for d in dirs + ["/lib64", "/usr/lib64"]
                if os.path.exists(os.path.join(d, "libc_malloc_debug.so.0"))), None)
    ours = ("glibc.malloc.perturb=1" + (":glibc.malloc.check=3" if lib else "")
            + ":glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864")
    env["GLIBC_TUNABLES"] = ":".join(t for t in (env.get("GLIBC_TUNABLES", ""), ours) if t)
    if lib:
        env["LD_PRELOAD"] = " ".join(p for p in (lib, env.get("LD_PRELOAD", "")) if p)
    return env
'''
