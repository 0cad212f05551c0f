"""Campaign settings: embedded defaults < TOML file < command-line flags.

A TOML file has two optional tables whose keys are the field names below::

    [campaign]
    seed = 42
    time_budget = 600        # seconds; 0 = no limit (then max_cases must be set)
    max_cases = 0            # 0 = no limit
    workers = 2
    timeout = 30             # seconds per case
    memory_mb = 4096         # address-space cap per worker; 0 = none

    [generation]
    workloads = ["matmul"]   # default: all
    dtypes = ["float16"]
    primitives = ["split", "reorder"]
    max_steps = 8
    max_reduction = 1024
    exact_fraction = 0.25
    special_fraction = 0.1   # float-mode cases with inf/nan inputs, where a workload allows them
    target = { kind = "llvm" }

Every key is checked: an unknown key, a wrong type or an unknown workload/primitive/dtype
name is a :class:`SettingsError` (one line, exit code 2 at the CLI).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from pathlib import Path
from typing import Any

from generators.cases import GenSettings

DEFAULT_TIME_BUDGET = 120.0


class SettingsError(ValueError):
    """Bad configuration (user-facing)."""


@dataclasses.dataclass
class CampaignSettings:
    seed: int | None = None  # None: drawn at start and printed
    time_budget: float = DEFAULT_TIME_BUDGET
    max_cases: int = 0
    workers: int = dataclasses.field(default_factory=lambda: max(1, os.cpu_count() or 1))
    timeout: float = 30.0
    memory_mb: int = 4096
    generation: GenSettings = dataclasses.field(default_factory=GenSettings)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["generation"] = self.generation.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CampaignSettings:
        d = dict(d)
        gen = GenSettings.from_dict(d.pop("generation", {}))
        return cls(generation=gen, **d)

    def validate(self) -> CampaignSettings:
        if self.time_budget < 0 or self.max_cases < 0:
            raise SettingsError("time_budget and max_cases must be ≥ 0")
        if self.time_budget == 0 and self.max_cases == 0:
            raise SettingsError("no stopping rule: set a time budget or a maximum number of cases")
        if self.workers < 1:
            raise SettingsError("workers must be ≥ 1")
        if self.timeout <= 0:
            raise SettingsError("timeout must be > 0")
        try:
            self.generation.validate()
        except (KeyError, ValueError) as e:
            raise SettingsError(str(e)) from None
        return self


_CAMPAIGN_TYPES = {"seed": int, "time_budget": (int, float), "max_cases": int, "workers": int,
                   "timeout": (int, float), "memory_mb": int}
_GEN_TYPES = {"workloads": list, "dtypes": list, "primitives": list, "max_steps": int,
              "max_reduction": int, "exact_fraction": (int, float),
              "special_fraction": (int, float), "target": dict}


def _checked(table: dict[str, Any], types: dict[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for k, v in table.items():
        if k not in types:
            raise SettingsError(f"{where}: unknown key {k!r} (known: {', '.join(types)})")
        if not isinstance(v, types[k]) or isinstance(v, bool):
            raise SettingsError(f"{where}: {k} has the wrong type ({type(v).__name__})")
        out[k] = tuple(v) if isinstance(v, list) else v
    return out


def load_toml(path: str | Path, base: CampaignSettings | None = None) -> CampaignSettings:
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise SettingsError(f"cannot read config {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"malformed TOML in {path}: {e}") from None
    unknown = set(doc) - {"campaign", "generation"}
    if unknown:
        raise SettingsError(f"{path}: unknown table(s) {', '.join(sorted(unknown))} (known: campaign, generation)")
    s = base or CampaignSettings()
    camp = _checked(doc.get("campaign", {}), _CAMPAIGN_TYPES, f"{path} [campaign]")
    gen = _checked(doc.get("generation", {}), _GEN_TYPES, f"{path} [generation]")
    s = dataclasses.replace(s, **camp)
    return dataclasses.replace(s, generation=dataclasses.replace(s.generation, **gen))
