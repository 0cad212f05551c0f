"""A case kind registered from outside the package: every layer reaches it through its protocol.

The toy kind ("toy", workload ``toy_sum``): a program that sums its input with numpy and a
"compiler" that drops the last element when the case asks for a bug.  It is registered the
way CONTRIBUTING says — ``kinds`` and ``run_kinds`` entries and ``WORKLOAD_KINDS`` — and the
generic code (the stage machine, bucket signatures, the minimizer's size) runs it, buckets it
and measures it without knowing it exists.
"""

from __future__ import annotations

import numpy as np
import pytest

from fuzzharness.buckets.signatures import signature
from fuzzharness.core import kinds
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Stage, Status
from fuzzharness.execution.stages import execute
from fuzzharness.minimize import passes
from fuzzharness.oracles.bounds import Expected
from fuzzharness.oracles.compare import judge


class ToyRun(kinds.RunKind):
    name = "toy"

    def run(self, execution, result) -> None:
        case = execution.case
        with execution.stage(Stage.GENERATE):
            x = np.random.default_rng(case.inputs["seed"]).integers(0, 9, 16).astype(np.float32)
        with execution.stage(Stage.RUN):
            got = np.array([x[:-1].sum() if case.params.get("bug") else x.sum()], np.float32)
        with execution.stage(Stage.VERIFY):
            want = np.array([x.astype(np.float64).sum()])
            expected = {"out": Expected(want, np.zeros(1), "float32", "toy/exact")}
            result.verdict = execution.conclude(judge(expected, {"out": got}), {"out": got})

    def check_case(self, case):
        return None if isinstance(case.params.get("bug", False), bool) else "bug must be a bool"


class ToyKind(ToyRun, kinds.CaseKind):
    tag = "[toy]"
    size_unit = "toy units"

    def bucket_primitives(self, case, status):
        return ("toy_drop_last",) if case["workload"]["params"].get("bug") else ()

    def size(self, case) -> int:
        return 1 + bool(case.params.get("bug"))


@pytest.fixture
def toy_kind():
    kinds.kinds.add("toy", ToyKind())
    kinds.run_kinds.add("toy", ToyRun())
    kinds.WORKLOAD_KINDS["toy_sum"] = "toy"
    yield
    kinds.kinds.remove("toy")
    kinds.run_kinds.remove("toy")
    del kinds.WORKLOAD_KINDS["toy_sum"]


def _case(bug: bool) -> Case:
    return Case(workload={"name": "toy_sum", "params": {"bug": bug}},
                inputs={"distribution": "toy", "seed": 1}, schedule={"source": "toy", "trace": []},
                target={"kind": "llvm"})


def test_a_toy_kind_runs_buckets_and_sizes_through_the_generic_code(toy_kind):
    ok, bad = execute(_case(False)).verdict, execute(_case(True)).verdict
    assert ok.status is Status.PASS, ok.line()
    assert (bad.status, bad.stage) == (Status.WRONG_RESULT, Stage.VERIFY), bad.line()
    sig = signature(_case(True).to_dict(), bad)
    assert sig.primitives == ("toy_drop_last",)
    assert passes.size(_case(True)) == 2 and passes.size_unit(_case(True)) == "toy units"
    assert kinds.run_kind(_case(True)).check_case(_case(True)) is None


def test_without_its_registration_the_toy_workload_is_not_a_toy_case():
    """The other side: unregistered, ``toy_sum`` is taken for a TIR workload, which does not
    exist — the stage machine says so instead of running anything."""
    assert kinds.kind_name(_case(True)) == "tir"
    v = execute(_case(True)).verdict
    assert v.status is not Status.WRONG_RESULT and "toy_sum" in v.message, v.line()
