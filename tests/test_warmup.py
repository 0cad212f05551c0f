"""One-time per-process setups do not count against the per-case timeout; slow cases do."""

import os

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


def case(workload):
    return Case(workload={"name": workload, "params": {"M": 3, "N": 5, "dtype": "float32"}},
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
