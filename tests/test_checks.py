"""Checks as plugins: a check registered from outside the package joins every verdict.

The toy checks here are what CONTRIBUTING's "where a new thing goes" promises for an oracle:
one class, one ``@register_check``, and the verdict composes it with the built-in bound and
emulation checks — its result in the details, its failure deciding the case by precedence,
its "does not apply" reason kept.
"""

from __future__ import annotations

import numpy as np
import pytest

from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Status
from fuzzharness.execution.stages import execute
from fuzzharness.oracles.checks import CheckBase, CheckResult, checks, register_check
from fuzzharness.oracles.compare import Judgement


def _matmul_case(seed: int = 3) -> Case:
    return Case(workload={"name": "matmul", "params": {"M": 4, "N": 8, "K": 16, "dtype": "float32"}},
                inputs={"distribution": "small_ints", "seed": seed},
                schedule={"source": "test", "trace": []}, target={"kind": "llvm"})


class NumpyMatmul(CheckBase):
    """Exact inputs: the output must equal numpy's float64 product bit for bit."""

    name = "toy_numpy_matmul"

    def judge(self, data):
        if data.case.workload["name"] not in ("matmul", "test_matmul_off_by_one"):
            return "not a matmul"
        want = data.inputs["A"].astype(np.float64) @ data.inputs["B"].astype(np.float64)
        got = data.outputs["C"].astype(np.float64)
        bad = got != want
        status = Status.WRONG_RESULT if bad.any() else Status.PASS
        j = Judgement(status, float(np.inf if bad.any() else 0.0), float(np.abs(got - want).max()),
                      "C", None, f"C differs from numpy in {int(bad.sum())} elements")
        return CheckResult(data.run, self.name, j, complete=True, note="numpy's product")


@pytest.fixture
def registered():
    added = []

    def add(cls, precedence=None):
        if precedence is not None:
            cls.precedence = precedence
        register_check(cls)
        added.append(cls.name)
        return cls

    yield add
    for name in added:
        checks.remove(name)


def test_a_plugin_check_judges_every_run_and_passes_a_correct_kernel(registered):
    registered(NumpyMatmul)
    v = execute(_matmul_case()).verdict
    assert v.status is Status.PASS, v.line()
    mine = [c for c in v.details["checks"] if c["reference"] == "toy_numpy_matmul"]
    assert [c["status"] for c in mine] == ["pass"] * len(mine) and mine[0]["run"] == "first"
    refs = [c["reference"] for c in v.details["checks"]]
    assert refs.index("bound") < refs.index("toy_numpy_matmul")  # built-ins come first


def test_a_failing_plugin_check_decides_a_wrong_kernel(registered, plugin_env):
    """The other side: on a kernel that is off by one the plugin check fails too, and with a
    precedence before the bound's it is the one that decides; the unscheduled program it
    judges as the baseline passes it, so the case is TVM's wrong_result."""
    import fuzzharness.testing.wrong_programs  # noqa: F401  (registers the wrong workloads)

    registered(NumpyMatmul, precedence=-1)
    case = _matmul_case()
    case = Case(workload={**case.workload, "name": "test_matmul_off_by_one"}, inputs=case.inputs,
                schedule=case.schedule, target=case.target)
    v = execute(case).verdict
    assert v.status is Status.WRONG_RESULT, v.line()
    assert v.details["decided_by"] == "toy_numpy_matmul (first run)"
    assert "differs from numpy" in v.message


def test_a_check_that_rejects_the_unscheduled_program_too_blames_the_reference(registered):
    """A check that fails the program with no schedule applied as well is judged like a wrong
    reference (reference_mismatch), never as a TVM miscompile."""

    class Rejects(CheckBase):
        name = "toy_never_satisfied"
        precedence = -1

        def judge(self, data):
            j = Judgement(Status.WRONG_RESULT, float("inf"), 1.0, "C", [0, 0],
                          "the toy check rejects every output")
            return CheckResult(data.run, self.name, j, complete=True)

    registered(Rejects)
    v = execute(_matmul_case()).verdict
    assert v.status is Status.REFERENCE_MISMATCH, v.line()
    assert v.details["decided_by"] == "toy_never_satisfied (first run)"


def test_a_check_that_does_not_apply_says_why(registered):
    registered(NumpyMatmul)
    case = Case(workload={"name": "row_sum", "params": {"M": 4, "N": 8, "dtype": "float32"}},
                inputs={"distribution": "small_ints", "seed": 3},
                schedule={"source": "test", "trace": []}, target={"kind": "llvm"})
    v = execute(case).verdict
    assert v.status is Status.PASS, v.line()
    assert set(v.details["toy_numpy_matmul_skipped"].values()) == {"not a matmul"}


def test_precedence_orders_the_checks_not_import_order(registered):
    """A plugin that asks to come first does: it decides over the bound when both fail."""
    from fuzzharness.oracles.checks import ordered_checks

    class First(CheckBase):
        name = "toy_first"

        def judge(self, data):
            return "never applies"

    registered(First, precedence=-1)
    assert [c.name for c in ordered_checks()][:3] == ["toy_first", "bound", "emulation"]
