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
  :data:`fuzzharness.generators.cases.TARGET_PRESETS` — read at run time, so new workloads, dtypes and
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
number of cases and ``derandomize`` picks the seed policy; a profile's sample has at least
one case per available (target, workload, dtype).  ``--fuzz-cases N`` runs exactly N cases
(spread evenly over the combinations when N is smaller).  Every failure prints the command
that runs it again — the same seed, profile, number and filters, and its node id.

Case ``i`` of the sample is ``generate_case(seed, i, GenSettings(workloads=(w,),
dtypes=(d,), target=T))`` with its combination chosen round robin — the same seed and
harness version give the same cases (the campaign generator, :mod:`fuzzharness.generators.cases`).

Execution and verdicts (:mod:`fuzzharness.differential`)
========================================================

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
* targets the machine lacks (``Backend.unavailable``) → the cases the plan puts there are
  skipped with the back end's reason (the plan is the same on every machine, so the llvm
  items are too); with no runnable target at all, one skipped item per combination.

Corpus entries replay ``case.json`` in the same pool and run ``repro.py`` (exit 1: the bug
reproduces, 0: fixed; the two must agree).  ``meta.json`` ``expected``:
``"reproduces"`` (upstream bug open) → ``xfail(strict=True)``: the test must keep failing with
the recorded bucket signature, so a fixed bug XPASSes and fails loudly until the entry is
updated; ``"fixed"`` → the case must not be a finding any more.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

MARKER = "differential"
CASE_FIXTURE, CORPUS_FIXTURE = "differential_case", "corpus_entry"
NOT_SELECTED = "not-selected"

_STATE = pytest.StashKey["Any"]()


# -- options and configuration -------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("fuzzharness", "fuzzharness differential tests (pytest -m differential)")
    g.addoption("--fuzz-seed", metavar="N|last",
                help="seed of the differential sample (default: the profile's policy)")
    g.addoption("--fuzz-cases", type=int, metavar="N",
                help="number of sampled cases (default: the profile's max_examples)")
    g.addoption("--fuzz-profile", metavar="NAME",
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
    g.addoption("--fuzz-baseline", metavar="SPEC",
                help="re-run each failure under a baseline TVM (a release such as 0.26, or a "
                     "Python interpreter's path): also failing there → xfail (pre-existing), "
                     "passing there → FAIL (regression)")


def selected(config: pytest.Config) -> bool:
    """Differential items run only when the -m expression names the marker."""
    return bool(re.search(rf"\b{MARKER}\b", config.getoption("markexpr", "") or ""))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: seeded differential fuzz cases and the regression corpus "
        "(deselected unless -m names it; see fuzzharness.pytest_plugin)")
    if selected(config):  # the harness is imported only now: this plugin loads in every session
        from fuzzharness.differential.plan import State

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
             f"{state.profile}: {state.n_cases} cases over {len(state.planned)} target/workload/"
             f"dtype combinations, {state.workers} workers"]
    for target, reason in state.unavailable.items():
        lines.append(f"fuzzharness: target {target} skipped: {reason}")
    if state.baseline is not None:
        lines.append(f"fuzzharness: baseline {state.baseline.label} ({state.baseline.python}): "
                     "a failure that passes there is a regression; one that fails there too "
                     "is pre-existing (xfail)")
    return lines


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for fixture, make in ((CASE_FIXTURE, _case_params), (CORPUS_FIXTURE, _corpus_params)):
        if fixture in metafunc.fixturenames:
            state = metafunc.config.stash.get(_STATE, None)
            if state is None:  # deselected anyway: plan nothing, import nothing
                params = [pytest.param(None, id=NOT_SELECTED, marks=pytest.mark.differential)]
            else:
                params = make(state)
            metafunc.parametrize(fixture, params, indirect=True)


def _case_params(state) -> list[Any]:
    from fuzzharness.differential.plan import sample

    mark = pytest.mark.differential
    def skipped(target: str, item_id: str):
        reason = f"target {target} unavailable on this machine: {state.unavailable[target]}"
        return pytest.param(None, id=item_id, marks=[mark, pytest.mark.skip(reason=reason)])

    # planned everywhere, run where the machine can (stable ids)
    params = [skipped(spec.target, spec.id) if spec.target in state.unavailable
              else pytest.param(spec, id=spec.id, marks=mark) for spec in sample(state)]
    if not params:  # nothing runnable at all: one skipped item per combination says why
        params = [skipped(t, f"{t}-{w}-{d}") for t, w, d in state.skipped]
    return params


def _corpus_params(state) -> list[Any]:
    from fuzzharness.differential.outcomes import BugReproduces
    from fuzzharness.repro import corpus

    entries = corpus.read(state.corpus)
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
                f'"fixed" in {e.dir / "meta.json"}')))
        params.append(pytest.param(e, id=e.name, marks=marks))
    return params


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
    from fuzzharness.differential.plan import task_of
    from fuzzharness.differential.runner import Runner

    tasks = []
    for item in session.items:
        spec = getattr(item, "callspec", None) and item.callspec.params.get(CASE_FIXTURE)
        spec = spec or (getattr(item, "callspec", None) and item.callspec.params.get(CORPUS_FIXTURE))
        task = task_of(state, spec)
        if task is not None:
            tasks.append(task)
    state.runner = Runner(state, tasks)


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
    if state.baseline is not None and state.compared:
        from fuzzharness.releases.baseline import OUTCOMES

        n = {k: sum(c.outcome == k for _, c in state.compared) for k in OUTCOMES}
        terminalreporter.write_line(
            f"fuzzharness: against {state.baseline.label}: " + ", ".join(
                f"{n[k]} {k}" for k in OUTCOMES))
        for k in OUTCOMES:
            for nodeid, c in state.compared:
                if c.outcome == k:
                    terminalreporter.write_line(f"  {k:<15} {nodeid}: {c.status}")


# -- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def fuzz_seed(request) -> int | None:
    state = request.config.stash.get(_STATE, None)
    return state.seed if state is not None else None


@pytest.fixture
def differential_case(request) -> DifferentialCase:
    spec = request.param
    if spec is None:
        pytest.skip("differential cases run with -m differential")
    return DifferentialCase(request.config.stash[_STATE], spec, request.node.nodeid)


@pytest.fixture
def corpus_entry(request) -> CorpusEntry:
    spec = request.param
    if spec is None:
        pytest.skip("corpus entries run with -m differential")
    return CorpusEntry(request.config.stash[_STATE], spec)


class DifferentialCase:
    """One sampled case; :meth:`check` runs it and turns its verdict into a test outcome."""

    def __init__(self, state, spec, nodeid: str | None = None):
        self.state, self.spec, self.nodeid = state, spec, nodeid

    def run(self):
        """The :class:`~fuzzharness.engine.executor.TaskResult` of this case."""
        return self.state.runner.result(self.spec.id)

    def check(self) -> None:
        from fuzzharness.differential.outcomes import check_case

        check_case(self.state, self.run(), f"{self.spec.workload} {self.spec.dtype} on "
                   f"{self.spec.target}, seed {self.state.seed} index {self.spec.index}",
                   self.nodeid)


class CorpusEntry:
    """One regression-corpus entry; :meth:`check` replays it against ``meta.json``
    (:func:`fuzzharness.differential.outcomes.check_corpus`)."""

    def __init__(self, state, spec):
        self.state, self.spec = state, spec

    def check(self) -> None:
        from fuzzharness.differential.outcomes import check_corpus

        check_corpus(self.state, self.spec)
