"""``--target``: a preset name, a registered backend kind, a JSON target or a mix
(``llvm,opencl``); and the default campaign's mix when none is named (:mod:`fuzzharness.generators.targets`)."""

from __future__ import annotations

import dataclasses
import json

from fuzzharness.core.errors import UsageError


def target_option(text: str | None) -> dict | None:
    """A preset name (fuzzharness.generators.cases.TARGET_PRESETS) or a JSON target dict."""
    from fuzzharness.generators.cases import TARGET_PRESETS

    if text is None:
        return None
    if text.lstrip().startswith("{"):
        try:
            target = json.loads(text)
        except json.JSONDecodeError as e:
            raise UsageError(f"--target: not valid JSON ({e})") from None
        if not isinstance(target, dict):
            raise UsageError("--target: a JSON target must be an object")
        return target
    from fuzzharness.backends import backends

    name = text.strip()
    if name in TARGET_PRESETS:
        return dict(TARGET_PRESETS[name])
    if name in backends:
        return {"kind": name}
    raise UsageError(f"unknown target {name!r}; known: {', '.join(TARGET_PRESETS)}, "
                     "another registered backend kind, or a JSON target dict")


def target_mix_option(text: str | None) -> list[dict] | None:
    """``--target a,b,c`` → a target mix (None: one target or none named)."""
    from fuzzharness.generators import targets

    if text is None or text.lstrip().startswith("{") or "," not in text:
        return None
    try:
        return targets.parse(text)
    except ValueError as e:
        raise UsageError(f"--target: {e}") from None


def default_mix(s):
    """The default campaign's targets (generators/targets.py): llvm, plus OpenCL and Adreno
    when an OpenCL runtime can run them here; the reason goes to the campaign header."""
    from fuzzharness.generators import targets

    if s.rpc:
        s.target_note = "llvm only: kernels run on a remote device (--rpc-*)"
        return s
    if s.tvm_python:
        s.target_note = "llvm only: workers run under --tvm-python (name --target to mix)"
        return s
    mix, shares, why = targets.default_targets()
    s.target_note = why
    if len(mix) == 1:
        return s
    return dataclasses.replace(s, generation=dataclasses.replace(
        s.generation, target=mix[0], targets=tuple(mix), target_shares=tuple(shares)),
        target_note=why)


def describe_targets(s) -> str:
    """``target llvm`` or ``targets llvm 70 %, opencl 10 %, adreno 20 %``."""
    from fuzzharness.generators.targets import describe

    return describe(s.generation.target, s.generation.targets, s.generation.target_shares)
