"""The plan of a ``pytest -m differential`` session: its seed, profile and sample.

Profiles are Hypothesis settings profiles (``fuzzharness-ci``, ``fuzzharness-nightly``, or
one a project registered): ``max_examples`` is the number of cases, ``derandomize`` the seed
policy.  Case ``i`` of the sample is ``generate_case(seed, i, GenSettings(workloads=(w,),
dtypes=(d,), target=T))`` with its (target, workload, dtype) chosen round robin over *every*
requested combination, whether this machine can run its target or not — the same seed and
harness version give the same cases on every machine: the llvm items of a machine without
OpenCL are exactly the llvm items of one with it, and the cases planned on a target the
machine lacks are skipped with the reason.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.errors import InvalidArgument

from fuzzharness.backends import backends
from fuzzharness.buckets.known_bugs import KnownBugs, KnownBugsError
from fuzzharness.core.errors import UsageError
from fuzzharness.core.plugins import load_plugins
from fuzzharness.core.registry import UnknownName
from fuzzharness.engine.executor import default_workers
from fuzzharness.generators.cases import TARGET_PRESETS, GenSettings
from fuzzharness.generators.graphs.spec import GRAPH_WORKLOAD
from fuzzharness.generators.workloads import workloads
from fuzzharness.repro import corpus

CACHE_KEY = "fuzzharness/seed"
#: Hypothesis settings profiles the plugin registers (as ``fuzzharness-<name>``) plus what a
#: profile means for generation beyond Hypothesis' own settings.
PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"hypothesis": {"max_examples": 150, "derandomize": True}, "max_steps": 8},
    "nightly": {"hypothesis": {"max_examples": 2000, "derandomize": False}, "max_steps": 12},
}
DEFAULT_PROFILE = "ci"
DERANDOMIZED_SEED = 0


@dataclasses.dataclass
class State:
    """Everything the plugin decided at configure time, plus the session's runner."""

    seed: int
    seed_origin: str
    profile: str
    n_cases: int
    cases_given: bool  # --fuzz-cases N (exactly N) rather than the profile's number
    max_steps: int
    targets: list[str]
    target_filter: tuple[str, ...] | None  # --fuzz-targets as given (None: all)
    workloads: tuple[str, ...] | None
    dtypes: tuple[str, ...] | None
    combos: list[tuple[str, str, str]]  # runnable (target, workload, dtype)
    skipped: list[tuple[str, str, str]]  # on targets this machine lacks
    planned: list[tuple[str, str, str]]  # all of them, in plan order: what the sample cycles
    unavailable: dict[str, str]  # target → reason
    workers: int
    timeout: float
    corpus: Path
    out: Path
    known_bugs: str | None
    runner: Any = None
    bugs: Any = None  # KnownBugs
    baseline: Any = None  # fuzzharness.releases.baseline.Baseline (--fuzz-baseline)
    compared: list = dataclasses.field(default_factory=list)  # (nodeid, Comparison)
    outcomes: Counter = dataclasses.field(default_factory=Counter)
    started: float = dataclasses.field(default_factory=time.monotonic)

    @classmethod
    def from_config(cls, config: pytest.Config) -> State:
        opt = config.getoption
        profile, hyp, extras = _profile(opt("fuzz_profile") or DEFAULT_PROFILE)
        seed, origin = _seed(config, hyp)
        given = opt("fuzz_cases")
        if given is not None and given < 0:
            raise pytest.UsageError("--fuzz-cases must be ≥ 0")
        targets, wls, dts = _split(opt("fuzz_targets")), _split(opt("fuzz_workloads")), _split(opt("fuzz_dtypes"))
        combos, skipped, unavailable = plan_combinations(targets, wls, dts)
        planned = sorted(combos + skipped, key=_plan_order(targets))
        root = Path(config.rootpath)
        state = cls(
            seed=seed, seed_origin=origin, profile=profile,
            # --fuzz-cases N: exactly N; a profile's max_examples: at least one per combination
            # (of every requested target: the plan must not depend on what this machine has)
            n_cases=(given if given is not None
                     else max(int(hyp.max_examples), len(planned)) if combos else 0),
            cases_given=given is not None,
            max_steps=int(extras.get("max_steps", 8)),
            targets=list(targets or TARGET_PRESETS), target_filter=targets, workloads=wls,
            dtypes=dts,
            combos=combos, skipped=skipped, planned=planned, unavailable=unavailable,
            workers=opt("fuzz_workers") or default_workers(), timeout=opt("fuzz_timeout"),
            corpus=Path(opt("fuzz_corpus") or root / "corpus"),
            out=Path(opt("fuzz_out") or root / "fuzz-runs" / "differential") / f"seed-{seed}",
            known_bugs=opt("fuzz_known_bugs"),
        )
        try:
            state.bugs = KnownBugs.load(state.known_bugs)
        except KnownBugsError as e:
            raise pytest.UsageError(f"--fuzz-known-bugs: {e}") from None
        if opt("fuzz_baseline"):
            from fuzzharness.releases.baseline import BaselineError, resolve

            try:
                state.baseline = resolve(opt("fuzz_baseline"))
            except BaselineError as e:
                raise pytest.UsageError(f"--fuzz-baseline: {e}") from None
        if getattr(config, "cache", None) is not None:  # absent with -p no:cacheprovider
            config.cache.set(CACHE_KEY, seed)
        return state

    def settings(self, target: str, workload: str, dtype: str) -> dict[str, Any]:
        return GenSettings(workloads=(workload,), dtypes=(dtype,), max_steps=self.max_steps,
                           target=dict(TARGET_PRESETS[target])).to_dict()


def _plan_order(targets):
    """Sort key: targets in the order requested (or TARGET_PRESETS'), then as planned."""
    names = list(targets or TARGET_PRESETS)
    return lambda c: names.index(c[0])


def _split(text: str | None) -> tuple[str, ...] | None:
    return tuple(x.strip() for x in text.split(",") if x.strip()) if text else None


def _profile(name: str):
    """(name, Hypothesis settings, extras) of a fuzz profile; UsageError when unknown."""
    for short, p in PROFILES.items():
        full = f"fuzzharness-{short}"
        try:
            settings.get_profile(full)
        except InvalidArgument:
            settings.register_profile(full, deadline=None, database=None, **p["hypothesis"])
    if name in PROFILES:
        return name, settings.get_profile(f"fuzzharness-{name}"), PROFILES[name]
    try:
        return name, settings.get_profile(name), {}
    except InvalidArgument:
        raise pytest.UsageError(
            f"--fuzz-profile: no profile {name!r} (ours: {', '.join(sorted(PROFILES))}; or a "
            "Hypothesis profile your conftest registers)") from None


def _seed(config: pytest.Config, hyp) -> tuple[int, str]:
    worker = getattr(config, "workerinput", None)
    if worker and "fuzz_seed" in worker:
        return int(worker["fuzz_seed"]), "from the xdist controller"
    given = config.getoption("fuzz_seed")
    if given == "last":
        cache = getattr(config, "cache", None)
        last = cache.get(CACHE_KEY, None) if cache is not None else None
        if last is None:
            raise pytest.UsageError("--fuzz-seed last: no earlier run recorded a seed")
        return int(last), "the last run's"
    if given is not None:
        try:
            seed = int(given)
        except ValueError:
            raise pytest.UsageError(f"--fuzz-seed: expected an integer or 'last', got {given!r}") from None
        if seed < 0:
            raise pytest.UsageError("--fuzz-seed must be ≥ 0")
        return seed, "given"
    if hyp.derandomize:
        return DERANDOMIZED_SEED, "fixed: the profile is derandomized"
    return random.randrange(2**31), "random"


def plan_combinations(targets, workloads_filter, dtypes_filter):
    """Every (target, workload, dtype) the registries offer, split by target availability.

    Returns ``(runnable, skipped, unavailable)``: two lists of triples and the reason per
    unavailable target.  Workloads per target are those a campaign on that target draws
    (``GenSettings.workload_names``: default ones plus those ``for_target`` it, plus the
    whole-graph family ``graph`` when the settings mix graphs in), or the named ones; dtypes
    are each workload's ``dtype_labels``.  Bad names are a usage error.
    """
    try:
        load_plugins()  # FUZZHARNESS_PLUGINS: workloads from outside the package
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None
    runnable: list[tuple[str, str, str]] = []
    skipped: list[tuple[str, str, str]] = []
    unavailable: dict[str, str] = {}
    for name in targets or TARGET_PRESETS:
        if name not in TARGET_PRESETS:
            raise pytest.UsageError(f"--fuzz-targets: unknown target {name!r} "
                                    f"(known: {', '.join(TARGET_PRESETS)})")
        target = dict(TARGET_PRESETS[name])
        gen = GenSettings(workloads=workloads_filter, dtypes=dtypes_filter, target=target)
        try:
            gen.validate()
        except (UnknownName, ValueError) as e:
            raise pytest.UsageError(f"fuzzharness: {e}") from None
        reason = backends[target["kind"]].unavailable(target)
        if reason:
            unavailable[name] = reason
        names = gen.workload_names()
        if gen.graphs_allowed() and GRAPH_WORKLOAD not in names:  # campaigns mix graphs in
            names.append(GRAPH_WORKLOAD)
        for w in names:
            for d in workloads[w].dtype_labels:
                if dtypes_filter is None or d in dtypes_filter:
                    (skipped if reason else runnable).append((name, w, d))
    return runnable, skipped, unavailable


@dataclasses.dataclass(frozen=True)
class CaseSpec:
    """One sampled case: index ``index`` of the sample on ``(target, workload, dtype)``."""

    target: str
    workload: str
    dtype: str
    index: int

    @property
    def id(self) -> str:
        return f"{self.target}-{self.workload}-{self.dtype}-{self.index}"


def sample(state: State) -> list[CaseSpec]:
    """Case ``i`` is planned on combination ``i mod C`` of every requested combination
    (round robin, available or not: see the module docstring); with fewer cases than
    combinations (``--fuzz-cases N``, N < C) the N cases are spread evenly over them, so a
    small sample still mixes targets, workloads and dtypes.  The caller skips the cases on
    targets in ``state.unavailable``."""
    combos, n = state.planned, state.n_cases
    if not state.combos:
        return []
    if n >= len(combos):
        return [CaseSpec(*combos[i % len(combos)], index=i) for i in range(n)]
    return [CaseSpec(*combos[i * len(combos) // n], index=i) for i in range(n)]


def rerun_command(state: State, nodeid: str | None = None) -> str:
    """The pytest command line that plans this very sample again (seed, profile, number of
    cases and filters) and, with ``nodeid``, runs only that item."""
    import shlex

    parts = ["pytest", "-m", "differential", f"--fuzz-seed={state.seed}"]
    if state.profile != DEFAULT_PROFILE:
        parts.append(f"--fuzz-profile={state.profile}")
    if state.cases_given:
        parts.append(f"--fuzz-cases={state.n_cases}")
    for flag, value in (("--fuzz-targets", state.target_filter),
                        ("--fuzz-workloads", state.workloads), ("--fuzz-dtypes", state.dtypes)):
        if value:
            parts.append(f"{flag}={','.join(value)}")
    if state.known_bugs:
        parts.append(f"--fuzz-known-bugs={state.known_bugs}")
    if nodeid:
        parts.append(nodeid)
    return " ".join(shlex.quote(x) for x in parts)


def task_of(state: State, spec: Any) -> dict[str, Any] | None:
    if isinstance(spec, CaseSpec):
        return {"task": spec.id, "generate": {
            "seed": state.seed, "index": spec.index,
            "settings": state.settings(spec.target, spec.workload, spec.dtype)}}
    if isinstance(spec, corpus.Entry) and spec.case is not None and unavailable_reason(spec) is None:
        return {"task": f"corpus:{spec.name}", "case": spec.case}
    return None


def unavailable_reason(spec: corpus.Entry) -> str | None:
    """Why this machine cannot run a corpus entry (its target's back end is unavailable)."""
    target = spec.case.get("target") or {"kind": "llvm"}
    try:
        return backends[target.get("kind", "")].unavailable(target)
    except UnknownName as e:
        return str(e)
