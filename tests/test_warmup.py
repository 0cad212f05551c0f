"""One-time per-process setups do not count against the per-case timeout; slow cases do,
also when the driver reads their verdict late."""

import os
import time

import pytest

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status
from fuzzharness.engine.pool import WorkerPool
from tests.conftest import ROOT


def env():
    e = dict(os.environ)
    e["FUZZHARNESS_PLUGINS"] = "tests.plugins.slow_setup"
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return e


def case(workload, n=5):
    return Case(workload={"name": workload, "params": {"M": 3, "N": n, "dtype": "float32"}},
                inputs={"distribution": "uniform", "seed": 1}).to_dict()


@pytest.mark.slow
def test_setup_time_is_not_the_cases_time():
    tasks = [{"task": 0, "case": case("test_slow_setup")}, {"task": 1, "case": case("test_slow_setup")}]
    with WorkerPool(1, timeout=2.0, env=env()) as pool:
        results = sorted(pool.run(tasks), key=lambda r: r.task["task"])
    assert [r.verdict.status for r in results] == [Status.PASS, Status.PASS], \
        [r.verdict.line() for r in results]
    assert results[0].elapsed < 2.0  # the setup's 3 s were not charged to the case


@pytest.mark.slow
def test_a_slow_case_still_times_out():
    with WorkerPool(1, timeout=2.0, env=env()) as pool:
        (r,) = list(pool.run([{"task": 0, "case": case("test_slow_case")}]))
    assert r.verdict.status is Status.TIMEOUT and r.verdict.stage.value == "generate"


@pytest.mark.slow
@pytest.mark.parametrize("timeout", [2.0, 6.0])
def test_a_verdict_read_late_is_judged_by_when_the_worker_wrote_it(tmp_path, timeout):
    """The driver's caller may hold the pool's loop for minutes (the end-of-run damage
    search runs inside the task source): a case that finished only after its deadline
    meanwhile is a timeout, as a watching driver would have said — a 30-minute campaign
    stored such a case (165 s of LLVM codegen, timeout 30 s) as a pass that replays as a
    timeout.  A case that finished in time is no timeout however late it is read.  Both on
    a persistent worker and on the zygote's forked child (confirmations)."""
    from fuzzharness.engine.executor import IDLE
    from tests.plugins.slow_setup import SETUP_SECONDS, STARTED_DIR_ENV

    started = tmp_path / "started"
    started.mkdir()
    e = env()
    e[STARTED_DIR_ENV] = str(started)
    persistent = {"task": 0, "case": case("test_slow_case", 5)}
    fresh = {"task": 1, "case": case("test_slow_case", 6), "fresh": True}

    def source():
        for task in (fresh, persistent):  # the zygote starts late: its task goes first
            yield task
            while not (started / str(task["case"]["workload"]["params"]["N"])).exists():
                yield IDLE  # ... until the case is running
        time.sleep(SETUP_SECONDS + 3.0)  # both are: end, while nobody reads the pool

    with WorkerPool(2, timeout=timeout, env=e) as pool:
        results = {r.task["task"]: r for r in pool.run(source())}
    statuses = {k: r.verdict.status for k, r in results.items()}
    if timeout < SETUP_SECONDS:  # a 3 s case under a 2 s timeout
        assert statuses == {0: Status.TIMEOUT, 1: Status.TIMEOUT}, \
            {k: r.verdict.line() for k, r in results.items()}
        assert {r.verdict.stage.value for r in results.values()} == {"generate"}
    else:
        assert statuses == {0: Status.PASS, 1: Status.PASS}, \
            {k: r.verdict.line() for k, r in results.items()}
        # the case's time is the worker's, not the time the driver took to read it
        assert all(r.elapsed < timeout for r in results.values()), \
            {k: r.elapsed for k, r in results.items()}


def test_the_inspect_cache_seed_keeps_inspects_answers():
    """warmup seeds inspect's module cache so that frames of code compiled from strings do
    not walk sys.modules; inspect must answer as it would have: no module, no source."""
    import inspect
    import sys

    from fuzzharness.core import warmup

    def frame_of_code_from(filename):
        namespace = {"sys": sys}
        exec(compile("frame = sys._getframe()", filename, "exec"), namespace)  # noqa: S102
        return namespace["frame"]

    warmup._seed_inspect_cache()
    for filename in warmup.NO_MODULE_FILES:
        frame = frame_of_code_from(filename)
        # how inspect.stack() asks (getsourcefile and findsource pass the file name along)
        assert inspect.getmodule(frame, filename) is None
        assert inspect.getsourcefile(frame) is None
        info = inspect.getframeinfo(frame)
        assert info.filename == filename and info.code_context is None
    # ordinary frames still find their module
    assert inspect.getmodule(sys._getframe()) is sys.modules[__name__]
