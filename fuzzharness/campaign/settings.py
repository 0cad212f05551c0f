"""Campaign settings: embedded defaults < TOML file < command-line flags.

A TOML file has two optional tables whose keys are the field names below::

    [campaign]
    seed = 42
    time_budget = 600        # seconds; 0 = no limit (then max_cases must be set)
    max_cases = 0            # 0 = no limit
    workers = 2
    timeout = 30             # seconds per case
    memory_mb = 4096         # data-memory cap per worker (RLIMIT_DATA); 0 = none
    executor = "local"       # where cases run: "local" or "ray" (fuzzharness.engine.executor registry)
    ray_address = ""         # with executor = "ray": a running cluster ("" = $RAY_ADDRESS or a private one)
    rpc = { server = "127.0.0.1:9090" }   # run kernels on a TVM RPC device (default: here);
                                          # or { tracker = "HOST:PORT", key = "android" }
    known_bugs = ""          # known-bugs file; "" = the packaged fuzzharness/known_bugs.toml
    confirm = true           # re-run every finding alone in a fresh worker before it counts
    hygiene = true           # glibc malloc checks + guard zones in every worker
    strict_order = false     # order_preserving_divergence notes fail the campaign too
    tvm_python = ""          # workers run this interpreter and its TVM ("" = this one)

    [generation]
    workloads = ["matmul"]   # default: all
    dtypes = ["float16"]
    primitives = ["split", "reorder"]
    max_steps = 8
    max_reduction = 1024
    exact_fraction = 0.25
    special_fraction = 0.1   # float-mode cases with inf/nan inputs, where a workload allows them
    target = { kind = "llvm" }
    metaschedule_fraction = 0.1   # schedules sampled from MetaSchedule design spaces
    option_fraction = 0.5         # cases with drawn mcpu / PassContext options
    known_bug_sites = false       # always propose where TVM is known to fail (off: 3 per mille)
    graph_fraction = 0.2          # whole-graph (Relax) cases among unnamed workloads
    targets = [{ kind = "llvm" }, { kind = "opencl", device = "adreno" }]  # a target mix
    target_shares = [0.8, 0.2]    # (generators/targets.py); default: equal shares
    feedback = 0.0                # mutants of the cases that built a new class (campaign/feedback.py)
    feedback_period = 100         # cases between the feedback corpus' snapshots

Every key is checked: an unknown key, a wrong type or an unknown workload/primitive/dtype/
target/executor name is a :class:`SettingsError` (one line, exit code 2 at the CLI).

A resumed campaign keeps its stored settings; only :data:`RESUMABLE` ones (how long and
how it runs, not *what* it generates) may be changed on resume.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from pathlib import Path
from typing import Any

from fuzzharness.backends import backends
from fuzzharness.backends.rpc import RemoteDevice, unsupported
from fuzzharness.core.interpreter import check_interpreter, no_tvm_here
from fuzzharness.engine.executor import default_workers, executors
from fuzzharness.engine.ray_executor import unavailable
from fuzzharness.generators.cases import GenSettings

DEFAULT_TIME_BUDGET = 120.0
#: A worker's VmData after importing TVM and compiling 120 cases was 243 MB (2-core CI machine,
#: TVM 0.27); below this cap the worker cannot even start.
MIN_MEMORY_MB = 512
#: settings a resumed campaign may change: when to stop, how cases run, how they are reported
RESUMABLE = frozenset({"time_budget", "max_cases", "workers", "timeout", "memory_mb",
                       "executor", "known_bugs", "ray_address", "rpc", "confirm", "hygiene",
                       "strict_order"})


class SettingsError(ValueError):
    """Bad configuration (user-facing)."""


@dataclasses.dataclass
class CampaignSettings:
    seed: int | None = None  # None: drawn at start and printed
    time_budget: float = DEFAULT_TIME_BUDGET
    max_cases: int = 0
    workers: int = dataclasses.field(default_factory=default_workers)
    timeout: float = 30.0
    memory_mb: int = 4096
    executor: str = "local"
    known_bugs: str = ""  # "" = the packaged file
    strict_order: bool = False  # new order_preserving_divergence notes set exit status 1 too
    ray_address: str = ""  # executor "ray": the cluster ("" = $RAY_ADDRESS, else a private one)
    # A remote TVM RPC device that runs the kernels (fuzzharness.backends.rpc.RemoteDevice);
    # {} = the local device.  Not part of any case: the same case runs anywhere.
    rpc: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Execution policy, recorded with the campaign (fuzzharness.campaign.confirm, .hygiene)
    confirm: bool = True
    hygiene: bool = True
    generation: GenSettings = dataclasses.field(default_factory=GenSettings)
    #: the interpreter the workers run (and the TVM it imports); "" = this one.  Not
    #: resumable: the campaign's verdicts and stored versions are that TVM's.
    tvm_python: str = ""
    #: why the campaign runs the targets it runs (the default mix is decided by this machine's
    #: OpenCL runtimes; generators/targets.py), printed in the header
    target_note: str = ""

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
        for name in ("time_budget", "timeout"):  # nan and inf pass every comparison below
            if not math.isfinite(getattr(self, name)):
                raise SettingsError(f"{name} must be a finite number of seconds "
                                    f"(got {getattr(self, name)!r}; 0 = no limit for time_budget)")
        if self.time_budget < 0 or self.max_cases < 0:
            raise SettingsError("time_budget and max_cases must be ≥ 0")
        if self.time_budget == 0 and self.max_cases == 0:
            raise SettingsError("no stopping rule: set a time budget or a maximum number of cases")
        if self.workers < 1:
            raise SettingsError("workers must be ≥ 1")
        if self.timeout <= 0:
            raise SettingsError("timeout must be > 0")
        if self.memory_mb < 0 or 0 < self.memory_mb < MIN_MEMORY_MB:
            raise SettingsError(f"memory_mb must be 0 (no limit) or ≥ {MIN_MEMORY_MB} "
                                "(a worker needs ~300 MB to import TVM and compile)")

        try:
            executors.check([self.executor])
            self.generation.validate()
        except (KeyError, ValueError) as e:
            raise SettingsError(str(e)) from None
        factory = executors[self.executor]  # a class's from_config: the class says
        if self.generation.feedback > 0 and not getattr(
                getattr(factory, "__self__", factory), "supports_idle", False):
            # case i waits for the cases below its corpus checkpoint (campaign/feedback.py)
            raise SettingsError(f"generation.feedback needs an executor that can wait for "
                                f"results (local); {self.executor!r} cannot")
        if self.executor == "ray":
            if why := unavailable():
                raise SettingsError(why)
        if self.tvm_python:
            try:
                self.tvm_python = check_interpreter(self.tvm_python)
            except ValueError as e:
                raise SettingsError(f"tvm_python: {e}") from None
        elif why := no_tvm_here():
            raise SettingsError(why)
        self._validate_target()
        return self

    def remote_device(self):
        """The checked :class:`~fuzzharness.backends.rpc.RemoteDevice` (None: run locally)."""
        if not self.rpc:
            return None

        try:
            return RemoteDevice.from_dict({**self.rpc, "timeout": self.timeout})
        except (TypeError, ValueError) as e:
            raise SettingsError(str(e)) from None

    def _validate_target(self) -> None:
        for target in (self.generation.target, *(self.generation.targets or ())):
            self._validate_one_target(target)

    def _validate_one_target(self, target) -> None:

        if not isinstance(target, dict) or not isinstance(target.get("kind"), str):
            raise SettingsError("target must be a table with a 'kind', e.g. { kind = \"llvm\" }")
        try:
            backend = backends[target["kind"]]
        except KeyError as e:
            raise SettingsError(str(e)) from None
        if self.remote_device() is not None:  # runs there, not here

            why = unsupported(target)
            if why:
                raise SettingsError(f"rpc: {why}")
            return
        why = backend.unavailable(target)
        if why:
            raise SettingsError(f"target {target['kind']!r} cannot run here: {why}")


_CAMPAIGN_TYPES = {"seed": int, "time_budget": (int, float), "max_cases": int, "workers": int,
                   "timeout": (int, float), "memory_mb": int, "executor": str, "known_bugs": str,
                   "ray_address": str, "rpc": dict, "confirm": bool, "hygiene": bool,
                   "strict_order": bool, "tvm_python": str}
_GEN_TYPES = {"workloads": list, "dtypes": list, "primitives": list, "max_steps": int,
              "max_reduction": int, "exact_fraction": (int, float),
              "special_fraction": (int, float), "target": dict,
              "metaschedule_fraction": (int, float), "option_fraction": (int, float),
              "known_bug_sites": bool, "graph_fraction": (int, float),
              "targets": list, "target_shares": list, "feedback": (int, float),
              "feedback_period": int}


def _checked(table: dict[str, Any], types: dict[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for k, v in table.items():
        if k not in types:
            raise SettingsError(f"{where}: unknown key {k!r} (known: {', '.join(types)})")
        if not isinstance(v, types[k]) or (isinstance(v, bool) and types[k] is not bool):
            raise SettingsError(f"{where}: {k} has the wrong type ({type(v).__name__})")
        out[k] = tuple(v) if isinstance(v, list) else v
    return out


def read_toml(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The checked ``[campaign]`` and ``[generation]`` tables of a settings file."""
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
    for table in ("campaign", "generation"):
        if not isinstance(doc.get(table, {}), dict):
            raise SettingsError(f"{path}: [{table}] must be a table")
    camp = _checked(doc.get("campaign", {}), _CAMPAIGN_TYPES, f"{path} [campaign]")
    gen = _checked(doc.get("generation", {}), _GEN_TYPES, f"{path} [generation]")
    if "known_bugs" in camp and camp["known_bugs"]:  # relative to the settings file
        camp["known_bugs"] = str((Path(path).parent / camp["known_bugs"]).resolve())
    return camp, gen


def load_toml(path: str | Path, base: CampaignSettings | None = None) -> CampaignSettings:
    camp, gen = read_toml(path)
    s = base or CampaignSettings()
    s = dataclasses.replace(s, **camp)
    return dataclasses.replace(s, generation=dataclasses.replace(s.generation, **gen))
