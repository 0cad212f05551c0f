"""Compiler options as a differential axis: llvm CPU variants and PassContext configurations.

The same program compiled with different options must give results within the same error
bound of the same float64 reference (the per-case verdict checks exactly that), and bit-equal
results in the exact-integer mode.  A case carries its options in ``case.target`` (``mcpu``,
``mattr``) and ``case.pass_config``, so a replay compiles it the same way.

CPU variants (llvm)
-------------------
The draw picks a *tier*, independent of the machine: ``default`` (no mcpu: LLVM's generic
x86-64), the x86-64 micro-architecture levels ``x86-64``, ``-v2``, ``-v3``, ``-v4``, or
``host`` (the CPU LLVM detects).  The tier is then *resolved on the machine generating the
case*: a level the host lacks falls back to the highest level it has, so a case never asks
for an instruction the CPU lacks (that would SIGILL — a harness bug reported as a crash).
The resolved ``mcpu`` goes into the case's target and the requested tier into its origin;
hence the draws (and so every other field) are the same on every machine, while ``mcpu`` may
differ between machines with different CPUs.  ``mattr`` variants only *remove* features
(``-fma``: no FMA contraction; ``-avx512f``: 256-bit code on an AVX-512 machine), which can
never produce an instruction the host lacks.

Host support is read from the kernel's view of the CPU (``/proc/cpuinfo`` flags, which
reflect what a hypervisor exposes) *and* LLVM's feature list for the detected CPU: a variant
is supported when every ISA feature LLVM would enable for it is in both.  On other
architectures (aarch64 CI, say) only ``default`` and ``host`` resolve to themselves.

PassContext variants
--------------------
Each drawn independently: vectorisation off, storage rewrite off, loop partitioning of
constant loops on, auto-unroll settings (bounded: larger budgets only measure LLVM's
patience), common-subexpression elimination off, if-then-else hoisting on, runtime bound
checks on (an out-of-bounds access becomes a runtime error: a ``crash`` at stage ``run``).
"""

from __future__ import annotations

import functools
import platform
from typing import Any

from hypothesis import strategies as st

from fuzzharness.generators.draw import chance
from fuzzharness.generators.steering import weighted

TIERS = ("default", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "host")
X86_LEVELS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")
MATTRS = ((), ("-fma",), ("-avx512f",))

#: LLVM feature names that are tuning hints, not instructions (they never SIGILL)
_TUNING_PREFIXES = ("slow-", "fast-", "false-deps-", "prefer-", "tuning-", "no-bypass-",
                    "allow-light-", "idivq-to-divl", "sbb-dep-breaking", "faster-",
                    "branchfusion", "macrofusion", "lea-uses-ag", "use-slm-arith", "use-glm-div",
                    "64bit-mode", "nopl", "vzeroupper", "ermsb", "fsrm", "evex512",
                    "pad-short-functions")
#: vector/bit-manipulation features checked against the kernel's CPU flags as well (LLVM name
#: → /proc/cpuinfo name): what generated code may actually use
_CPUINFO_NAME = {
    "sse": "sse", "sse2": "sse2", "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1",
    "sse4.2": "sse4_2", "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c",
    "bmi": "bmi1", "bmi2": "bmi2", "lzcnt": "abm", "popcnt": "popcnt", "movbe": "movbe",
    "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512dq": "avx512dq", "avx512vl": "avx512vl",
    "avx512cd": "avx512cd", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
    "avx512fp16": "avx512_fp16", "avx512vbmi": "avx512vbmi", "avx512vbmi2": "avx512_vbmi2",
    "avx512ifma": "avx512ifma", "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq", "avxvnni": "avx_vnni", "amx-tile": "amx_tile",
    "amx-int8": "amx_int8", "amx-bf16": "amx_bf16", "gfni": "gfni", "vaes": "vaes",
    "vpclmulqdq": "vpclmulqdq", "pclmul": "pclmulqdq", "aes": "aes", "sha": "sha_ni",
    "adx": "adx",
}

#: (label, config) — each applied independently with probability 1/2 in an "options" case
PASS_CONFIGS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("disable_vectorize", {"tirx.disable_vectorize": True}),
    ("disable_storage_rewrite", {"tirx.disable_storage_rewrite": True}),
    ("partition_const_loop", {"s_tir.LoopPartition": {"partition_const_loop": True}}),
    ("disable_cse", {"tirx.disable_cse_tir": True}),
    ("hoist_block_scope", {"s_tir.HoistIfThenElse": {"support_block_scope_hoisting": True}}),
    ("bound_checkers", {"tirx.instrument_bound_checkers": True}),
)
# UnrollLoop budgets: MetaSchedule's CPU values; explicit unrolling on or off.
UNROLL_STEPS = (0, 16, 64)


@functools.cache
def _cpuinfo_flags() -> frozenset[str] | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        return None
    return None


def _isa_features(target: dict[str, Any]) -> frozenset[str]:
    from tvm.target import Target, codegen

    feats = codegen.llvm_get_cpu_features(Target(target))
    return frozenset(f for f in feats if not f.startswith(_TUNING_PREFIXES))


@functools.cache
def host_cpu() -> str:
    from tvm.target import codegen

    return str(codegen.llvm_get_system_cpu())


@functools.cache
def _host_features() -> frozenset[str]:
    return _isa_features({"kind": "llvm", "mcpu": host_cpu()})


def host_lacks(mcpu: str) -> str | None:
    """Why this machine cannot run code compiled for ``mcpu`` (None: it can)."""
    if not mcpu:
        return None
    feats = _isa_features({"kind": "llvm", "mcpu": mcpu})
    missing = set(feats - _host_features())
    flags = _cpuinfo_flags()
    if flags is not None:
        missing |= {f for f in feats if f in _CPUINFO_NAME and _CPUINFO_NAME[f] not in flags}
    return f"the host CPU lacks {', '.join(sorted(missing))}" if missing else None


@functools.cache
def supported_levels() -> tuple[str, ...]:
    """The x86-64 levels this machine runs (empty on other architectures)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ()
    return tuple(lv for lv in X86_LEVELS if host_lacks(lv) is None)


def resolve_tier(tier: str) -> str:
    """The mcpu for a drawn tier on this machine ('' for LLVM's default)."""
    if tier == "default":
        return ""
    levels = supported_levels()
    if tier == "host":
        # a hypervisor may hide features of the CPU model LLVM detects (then the best level)
        return host_cpu() if host_lacks(host_cpu()) is None else (levels[-1] if levels else "")
    if not levels:
        return ""
    wanted = X86_LEVELS.index(tier)
    usable = [lv for lv in levels if X86_LEVELS.index(lv) <= wanted]
    return usable[-1] if usable else ""


def draw_options(data: Any, base_target: dict[str, Any], fraction: float):
    """Draw compiler options; return ``(target, pass_config, labels, requested_tier)``.

    The draws are the same on every machine and for every ``fraction`` (so changing the
    share of option cases does not reshuffle the rest); only the tier's resolution to an
    ``mcpu`` depends on the host.
    """

    varied = chance(data, fraction)
    tier = data.draw(st.sampled_from(TIERS))
    mattr = data.draw(st.sampled_from(MATTRS))
    # steered (generators/steering.py): one draw per option, as before
    picks = [data.draw(st.sampled_from(weighted("option", [False, True], label)))
             for label, _ in PASS_CONFIGS]
    unroll = data.draw(st.sampled_from((None, *UNROLL_STEPS)))
    explicit = data.draw(st.booleans())
    target = dict(base_target)
    if not varied or target.get("kind") != "llvm":
        return target, {}, [], None
    labels: list[str] = []
    if "mcpu" not in target:
        mcpu = resolve_tier(tier)
        if mcpu:
            target["mcpu"] = mcpu
        labels.append(f"mcpu={mcpu or 'default'}")
    if mattr and "mattr" not in target:
        target["mattr"] = list(mattr)
        labels.append(f"mattr={','.join(mattr)}")
    pass_config: dict[str, Any] = {}
    for (label, cfg), on in zip(PASS_CONFIGS, picks, strict=True):
        if on:
            pass_config.update(cfg)
            labels.append(label)
    if unroll is not None:
        pass_config["tirx.UnrollLoop"] = {"auto_max_step": unroll, "explicit_unroll": explicit}
        labels.append(f"unroll={unroll}{'/explicit' if explicit else ''}")
    return target, pass_config, labels, tier
