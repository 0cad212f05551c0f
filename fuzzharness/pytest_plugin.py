"""pytest plugin: ``pytest -m differential`` runs seeded differential cases and the corpus.

Registered through the ``pytest11`` entry point ``fuzzharness`` (disable it with
``-p no:fuzzharness``).  It does one thing, in the manner of pytest-randomly: it turns a
seed into a sample of fuzz cases, runs them as ordinary test items, prints the seed in the
session header and accepts it back.

What it provides
================

* the ``differential`` marker;
* the ``differential_case`` fixture, parametrized over a seeded sample of cases: every
  (target, workload, dtype) the registries offer, for every target preset of
  :data:`generators.cases.TARGET_PRESETS` — read at run time, so new workloads, dtypes and
  back ends join without editing anything here;
* the ``corpus_entry`` fixture, parametrized over the regression corpus
  (``corpus/<name>/{case.json, repro.py, issue.md, meta.json}``);
* ``fuzz_seed`` (session fixture) for tests that want the seed.

A test module that uses them (``tests/test_differential.py`` in this repository; any project
can copy it)::

    import pytest
    pytestmark = pytest.mark.differential
    def test_case(differential_case): differential_case.check()
    def test_corpus(corpus_entry): corpus_entry.check()

Selection (decided: deselected by default)
==========================================

The items of the ``differential_case`` and ``corpus_entry`` fixtures are *deselected* unless
the ``-m`` expression names ``differential`` — plain ``pytest`` neither plans nor runs any
case and starts no worker (the summary line says ``N deselected``).  ``pytest -m
differential`` runs the sample, the corpus, and any other test marked ``differential``
(those also run in a plain ``pytest``: the marker only deselects this plugin's own items).

Seed and profiles
=================

``--fuzz-seed N`` (or ``last``: the previous run's seed, from pytest's cache) fixes the
sample; every run prints ``fuzzharness: --fuzz-seed=N`` in its header.  Without it the seed
comes from the profile: ``--fuzz-profile`` names a Hypothesis settings profile — ``ci``
(default: 150 cases, ``derandomize=True`` → the fixed seed 0, so CI runs the same cases every
time) or ``nightly`` (2000 cases, a fresh random seed, longer schedules), or any profile a
project registered with ``hypothesis.settings.register_profile``.  ``max_examples`` is the
number of cases and ``derandomize`` picks the seed policy; ``--fuzz-cases N`` overrides the
number.  The sample has at least one case per available (target, workload, dtype).

Case ``i`` of the sample is ``generate_case(seed, i, GenSettings(workloads=(w,),
dtypes=(d,), target=T))`` with its combination chosen round robin — the same seed and
harness version give the same cases (the campaign generator, :mod:`generators.cases`).

Execution and verdicts
======================

Cases run in a :class:`~fuzzharness.engine.pool.WorkerPool` (``--fuzz-workers``, default one
per CPU; ``--fuzz-timeout`` per case), generated and executed inside the workers: a case that
segfaults TVM costs one ``crash`` verdict, not the pytest session.  Items consume results in
order while the pool keeps every worker busy.  Outcomes:

* ``pass`` → passed; ``inconclusive`` (error model cannot judge, or the machine cannot run
  the program, e.g. CUDA without a GPU) and ``schedule_rejected`` (TVM legitimately refused
  the random schedule) → skipped with the reason — never passed;
* a TVM finding that the known-bugs file (``--fuzz-known-bugs``) matches → xfail with the
  bug's link; any other finding, and harness errors → failed, printing the verdict (status,
  stage, worst element, error/bound ratio, message) and where the failing case was written
  (:func:`write_failure`: ``case.json``, the ``fuzzharness replay`` command, and a verified
  standalone ``repro.py`` where the minimizer's repro writer is installed);
* targets the machine lacks (``Backend.unavailable``) → one skipped item per (target,
  workload, dtype), with the back end's reason.

Corpus entries replay ``case.json`` in the same pool and run ``repro.py`` (exit 1: the bug
reproduces, 0: fixed; the two must agree).  ``meta.json`` ``expected``:
``"reproduces"`` (upstream bug open) → ``xfail(strict=True)``: the test must keep failing with
the recorded bucket signature, so a fixed bug XPASSes and fails loudly until the entry is
updated; ``"fixed"`` → the case must not be a finding any more.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

MARKER = "differential"
CASE_FIXTURE, CORPUS_FIXTURE = "differential_case", "corpus_entry"
NOT_SELECTED = "not-selected"
CACHE_KEY = "fuzzharness/seed"

#: Hypothesis settings profiles the plugin registers (as ``fuzzharness-<name>``) plus what a
#: profile means for generation beyond Hypothesis' own settings.
PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"hypothesis": {"max_examples": 150, "derandomize": True}, "max_steps": 8},
    "nightly": {"hypothesis": {"max_examples": 2000, "derandomize": False}, "max_steps": 12},
}
DEFAULT_PROFILE = "ci"
DERANDOMIZED_SEED = 0

_STATE = pytest.StashKey["State"]()


# -- options and configuration -------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("fuzzharness", "fuzzharness differential tests (pytest -m differential)")
    g.addoption("--fuzz-seed", metavar="N|last",
                help="seed of the differential sample (default: the profile's policy)")
    g.addoption("--fuzz-cases", type=int, metavar="N",
                help="number of sampled cases (default: the profile's max_examples)")
    g.addoption("--fuzz-profile", default=DEFAULT_PROFILE, metavar="NAME",
                help="Hypothesis settings profile: ci (default), nightly, or a registered one")
    g.addoption("--fuzz-targets", metavar="LIST",
                help="comma-separated target presets (default: all; unavailable ones skip)")
    g.addoption("--fuzz-workloads", metavar="LIST", help="comma-separated workloads")
    g.addoption("--fuzz-dtypes", metavar="LIST", help="comma-separated dtype labels")
    g.addoption("--fuzz-workers", type=int, metavar="N", help="worker processes (default: CPUs)")
    g.addoption("--fuzz-timeout", type=float, default=60.0, metavar="S",
                help="seconds per case (default 60)")
    g.addoption("--fuzz-corpus", metavar="DIR", help="regression corpus (default: ROOTDIR/corpus)")
    g.addoption("--fuzz-out", metavar="DIR",
                help="where failing cases are written (default: ROOTDIR/fuzz-runs/differential)")
    g.addoption("--fuzz-known-bugs", metavar="FILE",
                help="known-bugs file (default: the packaged one)")


def selected(config: pytest.Config) -> bool:
    """Differential items run only when the -m expression names the marker."""
    return bool(re.search(rf"\b{MARKER}\b", config.getoption("markexpr", "") or ""))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: seeded differential fuzz cases and the regression corpus "
        "(deselected unless -m names it; see fuzzharness.pytest_plugin)")
    if selected(config):
        config.stash[_STATE] = State.from_config(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # pytest-xdist: every worker uses the same seed
    state = node.config.stash.get(_STATE, None)
    if state is not None:
        node.workerinput["fuzz_seed"] = state.seed


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return None
    lines = [f"fuzzharness: --fuzz-seed={state.seed} ({state.seed_origin}), profile "
             f"{state.profile}: {state.n_cases} cases over {len(state.combos)} target/workload/"
             f"dtype combinations, {state.workers} workers"]
    for target, reason in state.unavailable.items():
        lines.append(f"fuzzharness: target {target} skipped: {reason}")
    return lines


@dataclasses.dataclass
class State:
    """Everything the plugin decided at configure time, plus the session's runner."""

    seed: int
    seed_origin: str
    profile: str
    n_cases: int
    max_steps: int
    targets: list[str]
    workloads: tuple[str, ...] | None
    dtypes: tuple[str, ...] | None
    combos: list[tuple[str, str, str]]  # runnable (target, workload, dtype)
    skipped: list[tuple[str, str, str]]  # on targets this machine lacks
    unavailable: dict[str, str]  # target → reason
    workers: int
    timeout: float
    corpus: Path
    out: Path
    known_bugs: str | None
    runner: Any = None
    bugs: Any = None  # KnownBugs
    outcomes: Counter = dataclasses.field(default_factory=Counter)
    started: float = dataclasses.field(default_factory=time.monotonic)

    @classmethod
    def from_config(cls, config: pytest.Config) -> State:
        from fuzzharness.engine.executor import default_workers

        opt = config.getoption
        profile, hyp, extras = _profile(opt("fuzz_profile"))
        seed, origin = _seed(config, hyp)
        n = opt("fuzz_cases")
        n = int(hyp.max_examples) if n is None else n
        if n < 0:
            raise pytest.UsageError("--fuzz-cases must be ≥ 0")
        targets, wls, dts = _split(opt("fuzz_targets")), _split(opt("fuzz_workloads")), _split(opt("fuzz_dtypes"))
        combos, skipped, unavailable = plan_combinations(targets, wls, dts)
        root = Path(config.rootpath)
        state = cls(
            seed=seed, seed_origin=origin, profile=profile,
            n_cases=max(n, len(combos)) if combos else 0,
            max_steps=int(extras.get("max_steps", 8)),
            targets=list(targets or _presets()), workloads=wls, dtypes=dts,
            combos=combos, skipped=skipped, unavailable=unavailable,
            workers=opt("fuzz_workers") or default_workers(), timeout=opt("fuzz_timeout"),
            corpus=Path(opt("fuzz_corpus") or root / "corpus"),
            out=Path(opt("fuzz_out") or root / "fuzz-runs" / "differential") / f"seed-{seed}",
            known_bugs=opt("fuzz_known_bugs"),
        )
        from fuzzharness.buckets import KnownBugs, KnownBugsError

        try:
            state.bugs = KnownBugs.load(state.known_bugs)
        except KnownBugsError as e:
            raise pytest.UsageError(f"--fuzz-known-bugs: {e}") from None
        if getattr(config, "cache", None) is not None:  # absent with -p no:cacheprovider
            config.cache.set(CACHE_KEY, seed)
        return state

    def settings(self, target: str, workload: str, dtype: str) -> dict[str, Any]:
        from generators.cases import TARGET_PRESETS, GenSettings

        return GenSettings(workloads=(workload,), dtypes=(dtype,), max_steps=self.max_steps,
                           target=dict(TARGET_PRESETS[target])).to_dict()


def _split(text: str | None) -> tuple[str, ...] | None:
    return tuple(x.strip() for x in text.split(",") if x.strip()) if text else None


def _presets() -> list[str]:
    from generators.cases import TARGET_PRESETS

    return list(TARGET_PRESETS)


def _profile(name: str):
    """(name, Hypothesis settings, extras) of a fuzz profile; UsageError when unknown."""
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

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
        known = sorted(set(PROFILES) | set(settings._profiles))
        raise pytest.UsageError(
            f"--fuzz-profile: no profile {name!r} (known: {', '.join(known)})") from None


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
    from fuzzharness.backends import backends
    from fuzzharness.engine.tasks import load_plugins
    from fuzzharness.errors import UsageError
    from fuzzharness.registry import UnknownName
    from generators.cases import TARGET_PRESETS, GenSettings
    from generators.graphs.spec import GRAPH_WORKLOAD
    from generators.workloads import workloads

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


# -- parametrization, selection ------------------------------------------------------------------
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


@dataclasses.dataclass(frozen=True)
class CorpusSpec:
    name: str
    path: Path
    case: dict[str, Any] | None
    meta: dict[str, Any]
    problem: str | None = None  # an unreadable entry fails with this message


def sample(state: State) -> list[CaseSpec]:
    combos = state.combos
    return [CaseSpec(*combos[i % len(combos)], index=i) for i in range(state.n_cases)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for fixture, make in ((CASE_FIXTURE, _case_params), (CORPUS_FIXTURE, _corpus_params)):
        if fixture in metafunc.fixturenames:
            state = metafunc.config.stash.get(_STATE, None)
            if state is None:  # deselected anyway: plan nothing, import nothing
                params = [pytest.param(None, id=NOT_SELECTED, marks=pytest.mark.differential)]
            else:
                params = make(state)
            metafunc.parametrize(fixture, params, indirect=True)


def _case_params(state: State) -> list[Any]:
    mark = pytest.mark.differential
    params = [pytest.param(spec, id=spec.id, marks=mark) for spec in sample(state)]
    for target, workload, dtype in state.skipped:
        reason = f"target {target} unavailable on this machine: {state.unavailable[target]}"
        params.append(pytest.param(None, id=f"{target}-{workload}-{dtype}",
                                   marks=[mark, pytest.mark.skip(reason=reason)]))
    return params


def _corpus_params(state: State) -> list[Any]:
    entries = read_corpus(state.corpus)
    if not entries:
        return [pytest.param(None, id="empty", marks=[pytest.mark.differential, pytest.mark.skip(
            reason=f"no regression corpus entries in {state.corpus}")])]
    params = []
    for e in entries:
        marks = [pytest.mark.differential]
        if e.problem is None and e.meta.get("expected") == "reproduces":
            link = e.meta.get("upstream") or e.meta.get("link") or "not yet reported"
            marks.append(pytest.mark.xfail(strict=True, raises=BugReproduces, reason=(
                f"open upstream bug ({link}); an XPASS means it is fixed: set expected = "
                f'"fixed" in {e.path / "meta.json"}')))
        params.append(pytest.param(e, id=e.name, marks=marks))
    return params


def read_corpus(root: Path) -> list[CorpusSpec]:
    """The entries under ``root`` (subfolders with a ``meta.json`` or ``case.json``), sorted."""
    if not root.is_dir():
        return []
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        if not ((d / "meta.json").exists() or (d / "case.json").exists()):
            continue
        try:
            meta = json.loads((d / "meta.json").read_text())
            case = json.loads((d / "case.json").read_text())
            if not isinstance(meta, dict) or not isinstance(case, dict):
                raise ValueError("not a JSON object")
            expected = meta.get("expected")
            if expected not in ("reproduces", "fixed"):
                raise ValueError(f'meta.json: expected must be "reproduces" or "fixed", '
                                 f"not {expected!r}")
            out.append(CorpusSpec(d.name, d, case, meta))
        except (OSError, ValueError) as e:
            out.append(CorpusSpec(d.name, d, None, {}, f"corpus entry {d}: {e}"))
    return out


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if selected(config):
        return
    # Only the items this plugin generates wait for -m differential; other tests that carry
    # the marker (a project's own differential checks) run in every suite as usual.
    ours = {CASE_FIXTURE, CORPUS_FIXTURE}
    keep, drop = [], []
    for item in items:
        (drop if ours & set(getattr(item, "fixturenames", ())) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_collection_finish(session: pytest.Session) -> None:
    """Queue the selected items' cases in test order (runs start on the first request)."""
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return
    tasks = []
    for item in session.items:
        spec = getattr(item, "callspec", None) and item.callspec.params.get(CASE_FIXTURE)
        spec = spec or (getattr(item, "callspec", None) and item.callspec.params.get(CORPUS_FIXTURE))
        task = _task(state, spec)
        if task is not None:
            tasks.append(task)
    state.runner = Runner(state, tasks)


def _task(state: State, spec: Any) -> dict[str, Any] | None:
    if isinstance(spec, CaseSpec):
        return {"task": spec.id, "generate": {
            "seed": state.seed, "index": spec.index,
            "settings": state.settings(spec.target, spec.workload, spec.dtype)}}
    if isinstance(spec, CorpusSpec) and spec.case is not None and _corpus_reason(spec) is None:
        return {"task": f"corpus:{spec.name}", "case": spec.case}
    return None


def _corpus_reason(spec: CorpusSpec) -> str | None:
    """Why this machine cannot run a corpus entry (its target's back end is unavailable)."""
    from fuzzharness.backends import backends
    from fuzzharness.registry import UnknownName

    target = spec.case.get("target") or {"kind": "llvm"}
    try:
        return backends[target.get("kind", "")].unavailable(target)
    except UnknownName as e:
        return str(e)


# -- running -------------------------------------------------------------------------------------
class Runner:
    """Runs the queued tasks in a worker pool; :meth:`result` waits for one of them.

    The pool is started on the first request and pulled from the pytest thread: while a test
    waits for its own case, the other workers run the next ones, and results that arrive
    early are kept until their test asks.
    """

    def __init__(self, state: State, tasks: list[dict[str, Any]]):
        self.state = state
        self.tasks = {t["task"]: t for t in tasks}
        self.order = tasks
        self.results: dict[str, Any] = {}
        self.pool = None
        self.stream = None

    def result(self, task_id: str):
        if task_id not in self.tasks:
            raise KeyError(task_id)
        if self.stream is None:
            from fuzzharness.engine.pool import WorkerPool

            self.pool = WorkerPool(min(self.state.workers, max(1, len(self.order))),
                                   timeout=self.state.timeout, memory_mb=4096,
                                   log_dir=self.state.out / "logs")
            self.stream = self.pool.run(iter(self.order))
        while task_id not in self.results:
            r = next(self.stream, None)
            if r is None:
                raise RuntimeError(f"the worker pool ended without a result for {task_id}")
            self.results[r.task["task"]] = r
        return self.results.pop(task_id)

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
        if self.pool is not None:
            self.pool.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is not None and state.runner is not None:
        state.runner.close()


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not state.outcomes:
        return
    o = state.outcomes
    judged = sum(v for k, v in o.items() if k.startswith("judged"))
    parts = ", ".join(f"{n} {k.split(':', 1)[-1]}" for k, n in sorted(o.items()))
    terminalreporter.write_line(
        f"fuzzharness: seed {state.seed}: {sum(o.values())} differential cases run, {judged} "
        f"judged by the oracle ({parts}) in {time.monotonic() - state.started:.1f} s with "
        f"{state.workers} workers; failing cases under {state.out}")


# -- fixtures ------------------------------------------------------------------------------------
class BugReproduces(AssertionError):
    """A corpus entry still fails with its recorded bucket signature."""


@pytest.fixture(scope="session")
def fuzz_seed(request) -> int | None:
    state = request.config.stash.get(_STATE, None)
    return state.seed if state is not None else None


@pytest.fixture
def differential_case(request) -> DifferentialCase:
    spec = request.param
    if spec is None:
        pytest.skip("differential cases run with -m differential")
    return DifferentialCase(request.config.stash[_STATE], spec)


@pytest.fixture
def corpus_entry(request) -> CorpusEntry:
    spec = request.param
    if spec is None:
        pytest.skip("corpus entries run with -m differential")
    return CorpusEntry(request.config.stash[_STATE], spec)


class DifferentialCase:
    """One sampled case; :meth:`check` runs it and turns its verdict into a test outcome."""

    def __init__(self, state: State, spec: CaseSpec):
        self.state, self.spec = state, spec

    def run(self):
        """The :class:`~fuzzharness.engine.executor.TaskResult` of this case."""
        return self.state.runner.result(self.spec.id)

    def check(self) -> None:
        result = self.run()
        judge_result(self.state, result, f"{self.spec.workload} {self.spec.dtype} on "
                     f"{self.spec.target}, seed {self.state.seed} index {self.spec.index}")


class CorpusEntry:
    """One regression-corpus entry; :meth:`check` replays it against ``meta.json``."""

    def __init__(self, state: State, spec: CorpusSpec):
        self.state, self.spec = state, spec

    def check(self) -> None:
        """The entry reproduces when replaying ``case.json`` gives a finding with the bucket
        key of ``meta.json`` and, where there is a ``repro.py``, the script exits 1; it is
        fixed when neither fails.  A disagreement between the two fails the test."""
        from fuzzharness.buckets import signature
        from fuzzharness.verdict import Verdict

        spec = self.spec
        if spec.problem is not None:
            pytest.fail(spec.problem, pytrace=False)
        if (reason := _corpus_reason(spec)) is not None:
            pytest.skip(f"corpus entry {spec.name}: target unavailable on this machine: {reason}")
        result = self.state.runner.result(f"corpus:{spec.name}")
        v, case = result.verdict, result.case or spec.case
        script = spec.path / "repro.py"
        code, output = run_script(script, self.state.timeout) if script.is_file() else (None, "")
        origin = (spec.case or {}).get("origin") or {}
        if origin.get("failing_call") and origin.get("failing_verdict") and code == 1:
            # a failure while the schedule was drawn: case.json holds the trace *before* the
            # failing call (fuzzharness/repro/generation_failure.py), so replaying it passes;
            # only the script makes the call, and the stored verdict is what it reproduces
            v = Verdict.from_dict(origin["failing_verdict"])
        sig = signature(case, v)
        want = expected_key(spec.meta)
        self.state.outcomes[f"corpus:{spec.meta['expected']}"] += 1
        reproduces = sig is not None and v.is_finding and (want is None or sig.key == want)
        if script.is_file():
            if code not in (0, 1):
                pytest.fail(f"corpus entry {spec.name}: {script} exited {code} (1 means "
                            f"reproduces, 0 fixed):\n{output}", pytrace=False)
            if (code == 1) != reproduces:
                pytest.fail(
                    f"corpus entry {spec.name}: repro.py exits {code} "
                    f"({'reproduces' if code == 1 else 'fixed'}) but replaying case.json "
                    f"{'reproduces bucket ' + str(want) if reproduces else 'gives ' + v.line()}"
                    ": one of them no longer captures the bug", pytrace=False)
        if reproduces:
            text = failure_text(self.state, case, v, f"corpus entry {spec.name}",
                                spec.path / "case.json", script if script.is_file() else None)
            if spec.meta["expected"] == "reproduces":
                raise BugReproduces(text)
            pytest.fail(f"corpus entry {spec.name} is marked fixed but fails again:\n{text}",
                        pytrace=False)
        if v.is_finding or v.status.value == "harness_error":
            paths = write_failure(self.state.out / "corpus" / spec.name, case, v)
            text = failure_text(self.state, case, v, f"corpus entry {spec.name}", *paths)
            pytest.fail(f"corpus entry {spec.name} fails with a different bucket "
                        f"({sig.key if sig else '-'} ≠ {want}):\n{text}", pytrace=False)


def run_script(script: Path, timeout: float) -> tuple[int | None, str]:
    """Run a corpus entry's standalone repro in a fresh interpreter: (exit code, output tail)."""
    import subprocess
    import sys

    try:
        r = subprocess.run([sys.executable, str(script)], cwd=script.parent, capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"(no exit within {timeout:g} s)"
    return r.returncode, (r.stdout + r.stderr)[-2000:]


def expected_key(meta: dict[str, Any]) -> str | None:
    """The bucket key a corpus entry must reproduce (meta.json ``signature``: a Signature
    dict or its key; ``bucket``/``key`` also accepted).  None: any finding counts."""
    from fuzzharness.buckets import Signature

    sig = meta.get("signature")
    if isinstance(sig, dict):
        if isinstance(sig.get("key"), str):
            return sig["key"]
        return Signature.from_dict(sig).key
    for k in ("signature", "bucket", "key"):
        if isinstance(meta.get(k), str) and meta[k]:
            return meta[k]
    return None


def judge_result(state: State, result, what: str) -> None:
    """pass → return; inconclusive / schedule_rejected → skip; known bug → xfail; else fail."""
    from fuzzharness.buckets import signature
    from fuzzharness.verdict import Status

    v, case = result.verdict, result.case
    if v.status is Status.PASS:
        state.outcomes["judged:pass"] += 1
        return
    if v.status is Status.INCONCLUSIVE:
        state.outcomes["inconclusive (skipped)"] += 1
        why = v.details.get("not_run") or v.details.get("inconclusive") or v.message
        pytest.skip(f"inconclusive: {why}")
    if v.status.is_note:  # order_preserving_divergence: recorded, not a failure
        state.outcomes[f"note: {v.status.value} (passed)"] += 1
        return
    if v.status is Status.SCHEDULE_REJECTED:
        state.outcomes["schedule rejected (skipped)"] += 1
        pytest.skip(f"TVM refused the random schedule (not a finding): {v.message[:200]}")
    sig = signature(case, v)
    if v.is_finding and sig is not None:
        bug = state.bugs.match(sig, _tvm_version())
        if bug is not None:
            state.outcomes[_judged(v, "known bug (xfail)")] += 1
            pytest.xfail(f"known TVM bug {bug.label()}: {v.line()}")
    state.outcomes[_judged(v, "FAILED")] += 1
    paths = write_failure(state.out / (case or {}).get("id", result.task["task"]), case, v)
    pytest.fail(failure_text(state, case, v, what, *paths), pytrace=False)


def _judged(v, label: str) -> str:
    return f"judged:{label}" if v.stage.value in ("verify", "done") else label


def _tvm_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("apache-tvm")
    except PackageNotFoundError:
        return None


def write_failure(folder: Path, case: dict[str, Any] | None, verdict) -> tuple[Path | None, Path | None]:
    """Write what a maintainer needs to reproduce a failing case; return (case JSON, repro).

    The one place where a failing differential test hands its case on: ``case.json`` and
    ``verdict.json`` always; with the minimizer's repro writer installed
    (``fuzzharness.repro.package.write_repro``), also a standalone ``repro.py`` — returned only
    when it reproduced in a fresh process (no triage: that is the campaign's job).  Without
    the writer, or when it fails, the message names ``fuzzharness replay`` instead.
    """
    if case is None:  # the worker died before it reported the generated case
        return None, None
    folder.mkdir(parents=True, exist_ok=True)
    case_path = folder / "case.json"
    case_path.write_text(json.dumps(case, indent=1, sort_keys=True))
    (folder / "verdict.json").write_text(json.dumps(verdict.to_dict(), indent=1, default=str))
    try:
        from fuzzharness.repro.package import write_repro
    except ImportError:
        return case_path, None
    try:
        from fuzzharness.buckets import signature
        from fuzzharness.case import Case
        from fuzzharness.tvm_support import versions

        sig = signature(case, verdict)
        outcome = write_repro(folder, Case.from_dict(case), verdict,
                              bucket=sig.key if sig else "", signature=sig,
                              versions=versions(), triage=False)
    except Exception as e:  # noqa: BLE001 - a failing writer must not hide the verdict
        (folder / "repro-error.txt").write_text(f"{type(e).__name__}: {e}\n")
        return case_path, None
    script = Path(outcome.dir) / "repro.py"
    return case_path, script if outcome.reproduced and script.is_file() else None


def failure_text(state: State, case, v, what: str, case_path: Path | None,
                 repro: Path | None) -> str:
    worst = (f"{v.worst_output}{list(v.worst_index)}"
             if v.worst_output is not None and v.worst_index is not None else "-")
    ratio = f"{v.ratio:.4g}" if v.ratio is not None else "-"
    lines = [f"{v.status.value} at stage {v.stage.value}: {what}",
             f"  error/bound ratio {ratio} (> 1 fails), worst element {worst}"]
    if v.worst_error is not None:
        lines[-1] += f", |actual - reference| = {v.worst_error:.4g}"
    if v.message:
        lines.append(f"  message: {v.message.strip().splitlines()[0][:300]}")
    if v.status.value == "harness_error" and v.details.get("traceback"):
        tail = [ln for ln in str(v.details["traceback"]).splitlines() if ln.strip()][-6:]
        lines.append("  harness traceback (a bug in tvm-fuzzharness, not TVM):")
        lines += [f"    {ln}" for ln in tail]
    if case:
        lines.append(f"  case {case.get('id')} ({case.get('workload', {}).get('name')} "
                     f"{json.dumps(case.get('workload', {}).get('params'))})")
    if repro is not None:
        lines.append(f"  repro script: {repro}  (run: python {repro})")
    if case_path is not None:
        lines.append(f"  case JSON: {case_path}")
        lines.append(f"  replay: fuzzharness replay {case_path}")
    else:
        lines.append("  (no case recorded: its generation failed, or the worker died before "
                     f"reporting it; it regenerates with --fuzz-seed {state.seed})")
    lines.append(f"  rerun: pytest -m differential --fuzz-seed {state.seed}")
    return "\n".join(lines)
