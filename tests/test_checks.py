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


# -- input sets and program checks: the runs and the builds a verdict composes ------------------
from fuzzharness.oracles.checks import (  # noqa: E402
    Conclusion,
    input_sets,
    program_checks,
    register_input_set,
    register_program_check,
)
from fuzzharness.oracles.compare import first_bit_difference  # noqa: E402


@pytest.fixture
def only_toy_input_sets():
    """The built-in second run out of the way (restored after), toy input sets removed."""
    input_sets.remove("second")
    added: list[str] = []
    yield lambda cls: (register_input_set(cls), added.append(cls.name))
    for name in added:
        input_sets.remove(name)
    input_sets.add_lazy("second", "fuzzharness.generators.input_sets:SECOND")


class LargeFloats:
    """Uniform floats in [-4, 4): partial sums that fp16 cannot hold exactly."""

    name = "toy_large"
    precedence = 0

    def inputs(self, case, workload, specs):
        from fuzzharness.oracles.numerics import numpy_dtype

        rng = np.random.default_rng(int(case.id[:8], 16))
        return "large", {s.name: rng.uniform(-4, 4, s.shape).astype(numpy_dtype(s.dtype))
                         for s in specs}

    def details(self, case, label):
        return {"inputs": label}


def _rounding_case() -> Case:
    return Case(workload={"name": "test_matmul_rounds_accumulator",
                          "params": {"M": 4, "N": 8, "K": 64, "dtype": "float16-acc32"}},
                inputs={"distribution": "tiny_ints", "seed": 3},
                schedule={"source": "test", "trace": []}, target={"kind": "llvm"})


def test_a_plugin_input_set_finds_what_the_first_run_cannot(only_toy_input_sets, plugin_env):
    """A kernel that rounds its fp32 accumulator to fp16 at every step is exact on tiny
    integers (the first run passes it: one side); a toy input set of larger floats, registered
    from outside, runs the same kernel again and decides the failure (the other side), its run
    named in the details and its inputs given to the unscheduled baseline (which passes them:
    TVM's wrong_result, not the reference's)."""
    import fuzzharness.testing.wrong_programs  # noqa: F401  (registers the wrong workloads)

    alone = execute(_rounding_case()).verdict
    assert alone.status is Status.PASS, alone.line()
    assert {c["run"] for c in alone.details["checks"]} == {"first"}
    only_toy_input_sets(LargeFloats)
    v = execute(_rounding_case()).verdict
    assert v.status is Status.WRONG_RESULT, v.line()
    assert v.details["decided_by"] == "bound (toy_large run)"
    assert v.details["toy_large_run"] == {"inputs": "large"}
    assert v.details["baseline"] == "build"


def test_an_input_set_with_wrong_arrays_is_the_harness_s_error_not_tvm_s(only_toy_input_sets):
    """float64 arrays for an fp32 kernel would make TVM refuse the call — a crash blamed on
    TVM; the input set is checked first and the case is a harness_error naming it."""

    class Float64s(LargeFloats):
        name = "toy_float64"

        def inputs(self, case, workload, specs):
            return "f64", {s.name: np.ones(s.shape) for s in specs}

    only_toy_input_sets(Float64s)
    v = execute(_matmul_case()).verdict
    assert v.status is Status.HARNESS_ERROR, v.line()
    assert "input set 'toy_float64': input A must be a float32(4, 16) array, got float64(4, 16)" in v.message


class AgainstAProgram:
    """The kernel must equal, bit for bit, the unscheduled build of workload ``other``."""

    name = "toy_against_program"
    precedence = 5
    other = "matmul"

    def plan(self, judged):
        return "build"

    def program(self, judged):
        from fuzzharness.generators.workloads import workloads

        func = workloads[self.other].kernel_prim_func(judged.case.params)
        return func, judged.case.target, dict(judged.case.pass_config, **{"tirx.disable_vectorize": True})

    def conclude(self, judged, outputs, how):
        same = first_bit_difference(judged.outputs, outputs) is None
        if same:
            return Conclusion(judged.judgement.status, None, {"toy_same": True})
        return Conclusion(Status.WRONG_RESULT, f"differs from the {self.other} build", {"toy_same": False})


@pytest.fixture
def program_check():
    added: list[str] = []

    def add(cls):
        register_program_check(cls)
        added.append(cls.name)

    yield add
    for name in added:
        program_checks.remove(name)


def test_a_plugin_program_check_builds_its_program_and_decides(program_check, plugin_env):
    """A program check registered from outside builds its own program after the built-in
    baseline: against a serial build of the same program a correct kernel passes (one side);
    against the off-by-one program's build it fails, with the plugin's message (the other)."""
    import fuzzharness.testing.wrong_programs  # noqa: F401

    program_check(AgainstAProgram)
    v = execute(_matmul_case()).verdict
    assert v.status is Status.PASS and v.details["toy_same"] is True, v.line()
    assert "order" in v.details  # the built-in baseline check concluded first

    class AgainstOffByOne(AgainstAProgram):
        name = "toy_against_off_by_one"
        other = "test_matmul_off_by_one"

    program_checks.remove("toy_against_program")
    program_check(AgainstOffByOne)
    w = execute(_matmul_case()).verdict
    assert w.status is Status.WRONG_RESULT and w.details["toy_same"] is False, w.line()
    assert "differs from the test_matmul_off_by_one build" in w.message
