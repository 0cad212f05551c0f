"""Targets of a campaign: presets, labels, and the per-case choice when targets are mixed.

A campaign has one target (``GenSettings.target``) or a **mix** (``GenSettings.targets``:
several target dicts, with shares).  In a mix, case ``i`` of seed ``s`` gets its target from
a stream of its own — ``random.Random(derive_seed("target", s, i))`` — not from the case's
choice sequence, so:

* the case drawn for a target is exactly the case a campaign of that target alone draws at
  that index (same choices, same id): an llvm case of a mixed campaign replays, minimizes and
  buckets like one of an llvm campaign;
* the choice does not shrink (the minimizer keeps the case's target; see
  :meth:`fuzzharness.generators.cases.GenSettings.at`).

The **default campaign** (no ``--target``, no ``target`` in a settings file) mixes in OpenCL
and Adreno texture cases when an OpenCL runtime can run them here
(:func:`default_targets`); the campaign header says which targets run and why.  The
choice is made when the campaign is created and stored with its settings, so a resume (or a
replay on another machine) generates the same cases whatever runtimes that machine has.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

TARGET_PRESETS: dict[str, dict[str, Any]] = {
    "llvm": {"kind": "llvm"},
    # compiled by nvcc; run where a GPU is.  The limits are an H100's (MetaSchedule needs them).
    "cuda": {"kind": "cuda", "arch": "sm_90", "max_threads_per_block": 1024,
             "max_shared_memory_per_block": 49152, "thread_warp_size": 32,
             "registers_per_block": 65536},
    "opencl": {"kind": "opencl"},  # run by pyopencl on an OpenCL CPU runtime
    "adreno": {"kind": "opencl", "device": "adreno"},  # texture scopes, Adreno pipeline
}


#: shares of the default mix where OpenCL runs (see :func:`default_targets`).  Adreno gets
#: the larger GPU share because texture-scope placement is what no other target exercises
#: (texture scopes in ≥ 10 % of the cases is the goal, docs/campaign-output.md "Feature census"); plain
#: OpenCL shares its GPU schedule styles with CUDA.  An OpenCL case costs 2.5–3 llvm ones
#: on PoCL/Intel's CPU runtime (600-case default campaign: 0.47–0.56 s vs 0.20 s each).
#: Adreno 30 → 35 %: with Intel's runtime found by default, texture-scope cases were 9.9 % of
#: a 30-minute campaign (419 of 4226) and of the README's 2-minute run (20 of 203).
DEFAULT_MIX: tuple[tuple[str, float], ...] = (("llvm", 0.55), ("opencl", 0.1), ("adreno", 0.35))


def label(target: dict[str, Any]) -> str:
    """A short name for a target dict: its preset name when it is one (``adreno``), else
    its kind (an llvm target with a drawn ``mcpu`` is still ``llvm``)."""
    kind = str(target.get("kind", "?"))
    if kind == "opencl" and (target.get("device") == "adreno"
                             or "adreno" in (target.get("keys") or ())):
        return "adreno"
    return kind


def describe(target: dict[str, Any], targets: Sequence[dict[str, Any]] | None = None,
             shares: Sequence[float] | None = None) -> str:
    """``target llvm`` or ``targets llvm 55 %, opencl 10 %, adreno 35 %`` (a mix)."""
    if not targets:
        return f"target {label(target)}"
    weights = list(shares or [1.0] * len(targets))
    total = sum(weights)
    return "targets " + ", ".join(f"{label(t)} {round(100 * w / total)} %"
                                  for t, w in zip(targets, weights, strict=True))


def choose(targets: Sequence[dict[str, Any]], shares: Sequence[float] | None,
           seed: int, index: int) -> dict[str, Any]:
    """The target of case ``index`` of seed ``seed`` in a mix (see the module docstring)."""
    from fuzzharness.generators.draw import derive_seed

    if len(targets) == 1:
        return dict(targets[0])
    rng = random.Random(derive_seed("target", seed, index))
    weights = list(shares) if shares else [1.0] * len(targets)
    return dict(rng.choices(list(targets), weights=weights, k=1)[0])


def default_targets() -> tuple[list[dict[str, Any]], list[float], str]:
    """``(targets, shares, why)`` for a campaign that names no target.

    llvm alone unless the OpenCL backend can run kernels here (pyopencl and a runtime with a
    device; :meth:`fuzzharness.backends.opencl.OpenCLBackend.unavailable`): then the
    :data:`DEFAULT_MIX`.  ``why`` is the sentence the campaign header prints.
    """
    from fuzzharness.backends import backends

    why_not = backends["opencl"].unavailable(TARGET_PRESETS["opencl"])
    if why_not:
        return [dict(TARGET_PRESETS["llvm"])], [1.0], f"llvm only: no OpenCL ({why_not})"
    names = [n for n, _ in DEFAULT_MIX]
    shares = [s for _, s in DEFAULT_MIX]
    mix = ", ".join(f"{n} {round(100 * s)} %" for n, s in DEFAULT_MIX)
    from fuzzharness.backends.opencl import choose_device

    full = choose_device(needs_fp16=True, needs_images=True)  # what fp16 texture cases need
    caveat = "" if not isinstance(full, str) else (
        f" — but {full}: its fp16 and texture cases end inconclusive (on x86-64 Linux "
        "pip install -e '.[opencl]' brings Intel's CPU runtime, which has both)")
    return ([dict(TARGET_PRESETS[n]) for n in names], shares,
            f"{mix}: an OpenCL runtime is here, so OpenCL and Adreno texture cases join{caveat}")


def parse(text: str) -> list[dict[str, Any]]:
    """``llvm,opencl,adreno`` → target dicts (presets or backend kinds); ValueError names
    the unknown one."""
    from fuzzharness.backends import backends
    out = []
    for name in (t.strip() for t in text.split(",")):
        if not name:
            continue
        if name in TARGET_PRESETS:
            out.append(dict(TARGET_PRESETS[name]))
        elif name in backends:
            out.append({"kind": name})
        else:
            raise ValueError(f"unknown target {name!r}; known: {', '.join(TARGET_PRESETS)}, "
                             "another registered backend kind, or a JSON target dict")
    if not out:
        raise ValueError("no target named")
    return out
