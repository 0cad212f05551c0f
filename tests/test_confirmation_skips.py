"""What a confirmation run may leave out: the facts of a verdict nobody will read.

A confirmation's verdict decides only the outcome (status class and output bits,
``campaign/confirm_outcomes.py``); when it ends in the campaign verdict's class the settled
verdict *is* the campaign's, with the facts the worker computed.  So such a run skips the
facts — for a wrong result with a buffer planned inside a vectorized loop they rebuild the
kernel with vectorization off — and any other status computes them, since it may become the
stored verdict (and its bucket) itself."""

from __future__ import annotations

import json
import os

from fuzzharness.campaign.confirm import Confirmer
from fuzzharness.core.verdict import Stage, Status, Verdict
from fuzzharness.engine.tasks import run_task
from tests.conftest import ROOT

#: a labelled wrong result of the dedup benchmark whose facts rebuild the kernel
ALLOC_CASE = "seed7/8160bbbd0643abb9"


def case_dict() -> dict:
    records = {r["id"]: r for r in json.loads((ROOT / "benchmarks/dedup/cases.json").read_text())}
    c = dict(records[ALLOC_CASE]["case"])
    c.pop("id", None)
    return c


def confirmer(tmp_path) -> Confirmer:
    return Confirmer(None, tmp_path, enabled=True, submit=lambda t: None,
                     task_for=lambda i: {"task": i})


def test_a_confirmation_skips_the_facts_only_of_its_campaign_verdicts_class(tmp_path):
    case = case_dict()
    worker = run_task({"task": 1, "case": case, "outputs": True}, lambda m: None)
    assert worker.status is Status.WRONG_RESULT
    assert worker.details["facts"] == ["alloc_in_vectorized_loop"]

    c = confirmer(tmp_path)
    same = c.confirmation_task(1, case, worker)  # the usual confirmation of a wrong result
    assert set(same["skip_facts"]) == {"wrong_result", "nan_inf"}
    alone = run_task(same, lambda m: None)
    assert alone.status is Status.WRONG_RESULT and alone.digest == worker.digest
    assert "facts" not in alone.details

    # a campaign verdict of another class (here a compile error): a wrong result alone
    # would become the stored verdict, so it keeps its facts
    other = c.confirmation_task(1, case, Verdict(Status.COMPILE_ERROR, Stage.LOWER).to_dict())
    assert other["skip_facts"] == ["compile_error"]
    alone = run_task(other, lambda m: None)
    assert alone.details["facts"] == ["alloc_in_vectorized_loop"]

    # a confirmation without the campaign's verdict skips nothing
    assert "skip_facts" not in c.confirmation_task(1, case)


def test_a_probe_that_kills_the_worker_leaves_the_case_its_own_verdict(tmp_path, monkeypatch):
    """The alloc fact's probe (the kernel rebuilt with vectorization off) segfaults in a real
    worker process: the case keeps the wrong result its own kernel gave — with the facts
    known without the probe, and the probe's death noted — in a campaign's worker and in a
    confirmation's fresh child alike.  Before, it was a ``crash`` at ``verify`` (seen in a
    campaign: a pad with read_at, whose serial rebuild reads out of bounds)."""
    from fuzzharness.engine.pool import WorkerPool

    monkeypatch.setenv("FUZZHARNESS_PLUGINS", "tests.plugins.fault_backends")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    case = {**case_dict(), "target": {"kind": "test_llvm_serial_crash"}}
    # confirming what such a case was before (a crash): the run alone computes its facts
    first = Verdict(Status.CRASH, Stage.VERIFY)
    tasks = [{"task": 0, "case": case}, confirmer(tmp_path).confirmation_task(0, case, first)]
    pool = WorkerPool(1, log_dir=tmp_path / "logs", fresh_tasks=True)
    try:
        got = {str(r.task["task"]): (r.verdict, r.process) for r in pool.run(tasks)}
    finally:
        pool.close()
    for name, (v, _) in got.items():
        assert v.status is Status.WRONG_RESULT and v.stage is Stage.VERIFY, (name, v.line())
        assert v.details["facts"] == ["alloc_in_vectorized_loop"], name
        assert v.details["probe_ended"]["kind"] == "signal", name
        assert "SIGSEGV" in v.details["probe_ended"]["message"], name
    assert got["confirm-0"][1].startswith("fresh/")


def test_a_worker_dying_outside_a_probe_is_still_the_cases_crash(tmp_path, monkeypatch):
    """The other side: a kernel that segfaults in its own run is a crash at ``run``."""
    from fuzzharness.engine.pool import WorkerPool

    monkeypatch.setenv("FUZZHARNESS_PLUGINS", "tests.plugins.fault_backends")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    case = {**case_dict(), "target": {"kind": "test_llvm_serial_crash"},
            "pass_config": {"tirx.disable_vectorize": True}}
    pool = WorkerPool(1, log_dir=tmp_path / "logs")
    try:
        (r,) = list(pool.run([{"task": 0, "case": case}]))
    finally:
        pool.close()
    assert (r.verdict.status, r.verdict.stage) == (Status.CRASH, Stage.RUN), r.verdict.line()
    assert "probe_ended" not in r.verdict.details
