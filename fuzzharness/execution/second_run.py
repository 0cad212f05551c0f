"""Judge every kernel twice: two input sets, two references, one verdict.

A compiled kernel is run on two input sets (compiling is the expensive part, running and
judging are cheap — about 180 ms against 3 ms per case):

``first``   the case's own inputs (a float distribution, or the exact-integer mode);
``second``  for a float-mode case, exact inputs (:meth:`fuzzharness.generators.workloads.base.Workload.
            exact_inputs`: small integers times powers of two, chosen so that every partial
            sum is exact in the program's declared accumulator but not in a narrower one;
            balanced layer-norm rows; softmax rows whose exponentials are exactly 0 or 1);
            for an exact-mode case, and for workloads without exact inputs, a float
            distribution (``uniform``, or ``normal`` when the case already draws uniform).
            Its seed comes from the case id, so a case's second inputs never change and the
            generator's draws — hence every case id — stay what they were.

Each run is judged by every registered check (:mod:`fuzzharness.oracles.checks`; a plugin
adds its own), built in the two references:

``bound``      the float64 reference with its error bound (:mod:`fuzzharness.oracles.bounds`, exact
               mode where the case asks for it) — sound for every schedule *and* every legal
               lowering (any summation order, any wider accumulator);
``emulation``  the program's own arithmetic in its own dtypes (:mod:`fuzzharness.oracles.emulate`),
               llvm targets only, finite inputs only, programs the interpreter understands,
               in one of two modes:

               *order-independent* (``ordered=False``) on a run whose inputs are exact (the
               exact second run of a float-mode case, the first run of an exact-mode case):
               only the elements whose every partial sum is exact in the declared accumulator
               in any order are judged — their value is the same for every summation order,
               every association and every wider accumulator, so a bitwise difference there
               is never a legal result: it fails the case.  Needs only that the schedule
               keeps the non-reduction arithmetic (``spatial_kept``); also used on a float
               second run when the order is not kept.

               *same order* (``ordered=True``) on float inputs when the order analysis proves
               the schedule keeps every element's operations and their order: every element
               must equal the declared arithmetic in the declared order bit for bit.  That is
               stricter than the program's semantics — TVM's *lowering* may legally sum in
               another order or keep a wider accumulator (and a future release may) — so
               this check is ``strict``: its failure alone does not fail the case.

:func:`fuzzharness.oracles.checks.combine` makes one judgement of the checks: a failing non-strict check fails the case
(a bound failure is reported before a bitwise one: its ratio says more); otherwise a failing
strict check makes the case ``order_preserving_divergence``, a note (failing a campaign only
with ``--strict-order``): the output is within the bound and, where an exact run exists, the
order-independent elements agree — a legal freedom or a bug only the strict mode sees.  A
case is judged (``pass``) when one of its runs had every element judged by a passing check
— by the bound or bitwise — and ``inconclusive`` otherwise.  A failure is never hidden by an
unjudged element elsewhere.  The rule, and which errors each input set can and cannot see,
is worked out in ``docs/error-model.md``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fuzzharness.core.verdict import Status
from fuzzharness.generators.inputs import make_inputs
from fuzzharness.oracles import target_math
from fuzzharness.oracles.checks import (
    CheckResult,
    RunData,
    baseline_judge,
    combine,
    judge_all,
)
from fuzzharness.oracles.compare import Judgement
from fuzzharness.oracles.program import Numerics

#: the second run's seed: case-id hex digits not used by fuzzharness.oracles.metamorphic.sample_point
SEED_DIGITS = slice(8, 16)


# -- the second input set -------------------------------------------------------------------


def second_seed(case_id: str) -> int:
    return int(case_id[SEED_DIGITS], 16)


def second_inputs(case, workload, specs) -> tuple[str, dict[str, np.ndarray]] | None:
    """(label, arrays) of the second run, or None (special-value cases: their point is the
    first run's IEEE semantics)."""
    dist = case.inputs.get("distribution")
    if dist == "special_values":
        return None
    seed = second_seed(case.id)
    if case.oracle.get("mode") != "exact":
        exact = workload.exact_inputs(case.params, np.random.default_rng([seed, 17]))
        if exact is not None:
            return "exact", exact
    other = "normal" if dist == "uniform" else "uniform"
    return other, make_inputs(specs, other, seed)


# -- one judgement of both runs (the emulation check: fuzzharness.oracles.emulation_check) ----


@dataclasses.dataclass
class Runs:
    """What :func:`judge_runs` tells the pipeline."""

    judgement: Judgement
    checks: list[CheckResult]
    bitwise_first: bool  # the first run was judged bitwise in full (the baseline adds nothing)
    failing_inputs: dict[str, np.ndarray] | None  # inputs of the failing run, when the second
    base_judge: Any  # baseline outputs -> Judgement, by the check that decided (see conclude)
    details: dict[str, Any]


def judge_runs(workload, case, func, order, expected, inputs, outputs, second) -> Runs:
    """Judge both runs by every registered check (see the module docstring).

    ``expected``: the first run's references (bound or exact mode, as the case asks);
    ``second``: ``(label, inputs, outputs)`` of the second run, or None.
    """
    details: dict[str, Any] = {}
    runs = {"first": RunData("first", case, func, order, inputs, outputs, expected,
                             case.oracle.get("mode") == "exact")}
    if second is not None:
        label, inputs2, outputs2 = second
        with np.errstate(all="ignore"), target_math.applied(case.target):
            expected2 = workload.reference(case.params, inputs2, Numerics(func, case.target))
        runs["second"] = RunData("second", case, func, order, inputs2, outputs2, expected2,
                                 label == "exact")
        details["second_run"] = {"inputs": label, "seed": second_seed(case.id)}
    results, skipped = judge_all(runs)
    judgement, deciding = combine(results)
    details["checks"] = [c.to_dict() for c in results]
    for name, why in skipped.items():
        details[f"{name}_skipped"] = why
    bitwise_first = any(c.run == "first" and c.reference == "emulation" and c.complete
                        and c.judgement.status is Status.PASS for c in results)
    if deciding is not None and deciding.strict:  # a note: the baseline is judged by the bound
        details["note_by"] = f"emulation, same order ({deciding.run} run)"
        deciding = None
    if deciding is not None:
        details["decided_by"] = f"{deciding.reference} ({deciding.run} run)"
        if deciding.reference == "emulation":
            details["emulation_ordered"] = deciding.ordered
    failing = runs["second"].inputs if deciding is not None and deciding.run == "second" else None
    return Runs(judgement, results, bitwise_first, failing, baseline_judge(runs, deciding), details)
