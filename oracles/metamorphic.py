"""The second reference: TVM's build of the *unscheduled* program, and when to pay for it.

Two references judge a case.  The float64 numpy reference with its error bound
(:mod:`fuzzharness.oracles.bounds`) decides pass/fail.  The unscheduled program built by TVM (same
target, same pass configuration, same inputs) is the *baseline*; it serves twice:

* **order-aware bitwise check** — when the schedule keeps every output element's operations
  and their order (:func:`fuzzharness.oracles.order.accumulation_order`), the kernel should reproduce
  the baseline bit for bit.  A difference that still passes the bound is
  ``order_preserving_divergence``, a *note* (:data:`fuzzharness.core.verdict.NOTES`): a compiler
  may legally select other instructions for the same operations.  The bitwise claim that
  fails a case is the same-order emulation's (:mod:`fuzzharness.execution.second_run`), which does not
  depend on TVM's lowering; where it judged every element, ``auto`` skips this check.
* **cross-check of the numpy reference** — when the baseline itself fails the bound, the
  float64 reference and TVM's default lowering disagree about the *unscheduled* program:
  ``reference_mismatch``, a finding about the reference or about TVM's lowering, never
  blamed on the schedule.

When the baseline is built (:func:`plan`), because it costs a second compile and run:

``self``   the scheduled module is structurally equal to the unscheduled one (an empty or
           fully rejected schedule): the kernel's own outputs are the baseline, free.
``build``  (a) the kernel failed (``wrong_result``/``nan_inf``): always, to tell a schedule bug
           from a reference or lowering bug before anyone reads the report (failures are
           rare, so this costs nothing measurable);
           (b) bound mode, the schedule is order-preserving, the same-order emulation did
           not judge every element of the first run, and the case falls in the sampled
           share :data:`ORDER_CHECK_SHARE` (decided from the case id, so a replay makes the
           same choice).
           On GPU targets (CUDA, OpenCL) the unscheduled program cannot run as it is (no
           loop is bound to threads): only (a) builds it, for llvm — the cross-check of
           the reference; a bitwise comparison across targets would be meaningless.
``skip``   everything else: a reassociating schedule that passes, every passing case whose
           reference is already bitwise (exact-integer mode, and all-zero bounds: integers,
           max/min, copies — the baseline could add nothing), and the order-preserving cases
           outside the sample.

Why a sample: measured with ``benchmarks/baseline_cost.py`` (120 default-generator cases,
llvm, one process, 2-core machine at load ≈ 2.3): 46 % of generated cases are
order-preserving; building the baseline for all of them (policy ``order``) made the average
case 1.64× as expensive as never building it, for every case (``always``) 1.76×, and ``auto``
1.19×.  The bitwise check has not yet told anything on llvm that the bound did not: every
order-preserving schedule tried so far (≈ 1,700 campaign cases under ``order``, and the
tests) reproduced the baseline bit for bit.  A quarter of them still gives the check
thousands of cases per campaign.  Policies for benchmarks and triage: ``auto`` (the above),
``order`` (every order-preserving case), ``always``, ``never``.

Compiled baselines are cached in the worker (:data:`BASELINE_CACHE_SIZE` programs keyed by
program text, target and pass configuration): a minimizer or a replay that runs many
schedules of one program pays for its baseline once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fuzzharness.core.verdict import Status
from fuzzharness.oracles.bounds import Expected
from fuzzharness.oracles.checks import Conclusion, Judged
from fuzzharness.oracles.compare import Judgement, first_bit_difference, judge
from fuzzharness.oracles.order import OrderAnalysis

FAILED = frozenset({Status.WRONG_RESULT, Status.NAN_INF})

POLICIES = ("auto", "order", "always", "never")

#: share of order-preserving, passing bound-mode cases that get the bitwise baseline check
ORDER_CHECK_SHARE = 0.25

BASELINE_CACHE_SIZE = 8


def sample_point(case_id: str) -> float:
    """A number in [0, 1) fixed by the case id (the id is a SHA-256 prefix: uniform)."""
    return int(case_id[:8], 16) / 16**8


#: targets whose unscheduled program cannot run as it is (nothing binds its loops to
#: threads): their baseline is built for llvm — a cross-check of the float64 reference for
#: failed cases only, never a bitwise reference (another target rounds otherwise)
UNSCHEDULED_ON_LLVM = frozenset({"cuda", "opencl"})


def baseline_target(target: dict[str, Any]) -> dict[str, Any]:
    """The target the unscheduled baseline is built for (see :data:`UNSCHEDULED_ON_LLVM`)."""
    return {"kind": "llvm"} if target.get("kind") in UNSCHEDULED_ON_LLVM else target


def plan(judgement: Judgement, order: OrderAnalysis, same_program: bool, exact: bool,
         policy: str = "auto", sample: float = 0.0, target: dict[str, Any] | None = None,
         emulated: bool = False) -> str:
    """``self`` / ``build`` / ``skip`` (see the module docstring; on GPU targets only a failed
    case builds its baseline, for llvm: :func:`baseline_target`).

    ``emulated``: the same-order emulation already judged every element of the case bitwise
    (:mod:`fuzzharness.execution.second_run`) — under ``auto`` the baseline's bitwise check
    then adds nothing; ``order`` and ``always`` still build it (benchmarks and triage compare
    them).
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown baseline policy {policy!r}; known: {', '.join(POLICIES)}")
    if target is not None and baseline_target(target) is not target:
        return "build" if judgement.status in FAILED and policy != "never" else "skip"
    if same_program:
        return "self"
    if policy == "always":
        return "build"
    if policy == "never":
        return "skip"
    if judgement.status in FAILED:
        return "build"
    if order.preserved and not exact and (policy == "order" or sample < ORDER_CHECK_SHARE
                                          and not emulated):
        return "build"
    return "skip"


def conclude(
    judgement: Judgement,
    order: OrderAnalysis,
    expected: dict[str, Expected],
    outputs: dict[str, np.ndarray],
    baseline: dict[str, np.ndarray] | None,
    how: str,
    base_judge=None,
) -> Conclusion:
    """Combine the case's judgement with the baseline (None when it was not built).

    ``base_judge(baseline)`` judges the baseline by the check that decided the case
    (:func:`fuzzharness.execution.second_run.judge_runs`: the bound, or the same-order emulation, on the
    input set that failed); by default the bound on ``expected``.
    """
    details: dict[str, Any] = {"order": order.to_dict(), "baseline": how}
    if baseline is None:
        return Conclusion(judgement.status, None, details)
    base = base_judge(baseline) if base_judge is not None else judge(expected, baseline)
    details["baseline_ratio"] = base.ratio
    if base.status in FAILED:
        who = "the program itself (no schedule applied)" if how == "self" else "TVM's unscheduled build"
        details["baseline_message"] = base.message
        return Conclusion(
            Status.REFERENCE_MISMATCH,
            f"{who} disagrees with the float64 reference: {base.message} — a bug in the "
            "reference or in TVM's lowering of the unscheduled program, not in the schedule",
            details,
        )
    if how == "self" or not order.preserved:
        return Conclusion(judgement.status, None, details)
    diff = first_bit_difference(outputs, baseline)
    details["bitwise_equal_to_baseline"] = diff is None
    if diff is None or judgement.status in FAILED:
        return Conclusion(judgement.status, None, details)
    name, idx = diff
    got, ref = _at(outputs[name], idx), _at(baseline[name], idx)
    details["first_difference"] = [name, idx]
    if judgement.status is Status.ORDER_PRESERVING_DIVERGENCE:  # already a note, with its reason
        return Conclusion(judgement.status, None, details)
    if judgement.status is Status.INCONCLUSIVE:
        bound = "the bound cannot judge this case"
    else:
        bound = f"within the bound: error/bound {judgement.ratio:.3g}"
    return Conclusion(
        Status.ORDER_PRESERVING_DIVERGENCE,
        f"{name}{idx}: got {got!r}, the unscheduled build gives {ref!r} although the schedule "
        f"keeps every element's operations and order ({bound})",
        details,
    )


def _at(a: np.ndarray, idx: list[int]) -> float:
    return float(np.asarray(a)[tuple(idx)].astype(np.float64)) if idx else float("nan")


class BaselineCheck:
    """The metamorphic reference as a program check (:mod:`fuzzharness.oracles.checks`;
    registered there by name, as ``baseline``)."""

    name = "baseline"
    precedence = 0

    def plan(self, judged: Judged) -> str:
        return plan(judged.judgement, judged.order, judged.same_program, judged.exact,
                    judged.policy, sample_point(judged.case.id), judged.case.target,
                    emulated=judged.emulated)

    def program(self, judged: Judged) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        return judged.func, baseline_target(judged.case.target), judged.case.pass_config

    def conclude(self, judged: Judged, outputs: dict[str, np.ndarray] | None, how: str) -> Conclusion:
        return conclude(judged.judgement, judged.order, judged.expected, judged.outputs, outputs,
                        how, base_judge=judged.base_judge)


BASELINE = BaselineCheck()
