"""Judge every kernel more than once: several input sets, several checks, one verdict.

A compiled kernel is run on the case's own inputs (``first``: a float distribution, or the
exact-integer mode) and on every registered input set that applies
(:class:`fuzzharness.oracles.checks.InputSet`; compiling is the expensive part, running and
judging are cheap — about 180 ms against 3 ms per case).  Built in is ``second``
(:mod:`fuzzharness.generators.input_sets`): exact inputs for a float-mode case (every
partial sum exact in the declared accumulator), another float distribution otherwise.

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
from fuzzharness.oracles import target_math
from fuzzharness.oracles.checks import (
    CheckResult,
    RunData,
    baseline_judge,
    combine,
    input_sets,
    judge_all,
    ordered_input_sets,
)
from fuzzharness.oracles.compare import Judgement
from fuzzharness.oracles.numerics import numpy_dtype
from fuzzharness.oracles.program import Numerics

# -- the other input sets ----------------------------------------------------------------------


def other_inputs(case, workload, specs) -> list[tuple[str, str, dict[str, np.ndarray]]]:
    """(input set, what its inputs are, arrays) of every input set that applies to ``case``."""
    out = []
    for input_set in ordered_input_sets():
        got = input_set.inputs(case, workload, specs)
        if got is not None:
            _check_arrays(input_set.name, specs, got[1])
            out.append((input_set.name, *got))
    return out


def _check_arrays(name: str, specs, arrays: dict[str, np.ndarray]) -> None:
    """A plugin's wrong arrays are the harness's error (raised here, in harness code), never
    a kernel crash blamed on TVM."""
    for s in specs:
        a = arrays.get(s.name)
        want = np.dtype(numpy_dtype(s.dtype))
        if not isinstance(a, np.ndarray) or a.shape != tuple(s.shape) or a.dtype != want:
            got = "missing" if a is None else f"{getattr(a, 'dtype', type(a).__name__)}{getattr(a, 'shape', '')}"
            raise ValueError(f"input set {name!r}: input {s.name} must be a {want}{tuple(s.shape)} "
                             f"array, got {got}")


# -- one judgement of all runs (the emulation check: fuzzharness.oracles.emulation_check) -----


@dataclasses.dataclass
class Runs:
    """What :func:`judge_runs` tells the pipeline."""

    judgement: Judgement
    checks: list[CheckResult]
    bitwise_first: bool  # the first run was judged bitwise in full (the baseline adds nothing)
    failing_run: str | None  # the input set whose run decided the failure, when not the first
    failing_inputs: dict[str, np.ndarray] | None  # ... and its inputs
    base_judge: Any  # baseline outputs -> Judgement, by the check that decided (see conclude)
    details: dict[str, Any]


def judge_runs(workload, case, func, order, expected, inputs, outputs, others,
               program: Numerics) -> Runs:
    """Judge every run by every registered check (see the module docstring).

    ``expected``: the first run's references (bound or exact mode, as the case asks);
    ``others``: ``(input set, label, inputs, outputs)`` of each other run; ``program``: what
    the references read from the program (the first run's).
    """
    details: dict[str, Any] = {}
    runs = {"first": RunData("first", case, func, order, inputs, outputs, expected,
                             case.oracle.get("mode") == "exact")}
    for name, label, inputs2, outputs2 in others:
        with np.errstate(all="ignore"), target_math.applied(case.target):
            expected2 = workload.reference(case.params, inputs2, program)
        runs[name] = RunData(name, case, func, order, inputs2, outputs2, expected2,
                             label == "exact")
        details[f"{name}_run"] = input_sets[name].details(case, label)
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
    failing = deciding.run if deciding is not None and deciding.run != "first" else None
    return Runs(judgement, results, bitwise_first, failing,
                runs[failing].inputs if failing else None, baseline_judge(runs, deciding), details)
