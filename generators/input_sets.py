"""The built-in second input set (:class:`fuzzharness.oracles.checks.InputSet`).

A compiled kernel runs again on another input set — compiling is the expensive part, running
and judging are cheap — and every check judges that run too
(:mod:`fuzzharness.execution.second_run` says what each input set lets the checks see):

* a float-mode case runs on **exact inputs** (:meth:`fuzzharness.generators.workloads.base.
  Workload.exact_inputs`: small integers times powers of two, chosen so that every partial
  sum is exact in the program's declared accumulator but not in a narrower one; balanced
  layer-norm rows; softmax rows whose exponentials are exactly 0 or 1);
* an exact-mode case, and a workload without exact inputs, runs on a float distribution
  (``uniform``, or ``normal`` when the case already draws uniform);
* a special-value case has no second run: its point is the first run's IEEE semantics.

The seed comes from case-id hex digits that nothing else uses (:data:`SEED_DIGITS`), so a
case's second inputs never change and the generator's draws — hence every case id — stay
what they were.  Another input set is one more class like this one, registered with
:func:`fuzzharness.oracles.checks.register_input_set`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fuzzharness.generators.inputs import make_inputs

#: the second run's seed: case-id hex digits not used by fuzzharness.oracles.metamorphic.sample_point
SEED_DIGITS = slice(8, 16)


def second_seed(case_id: str) -> int:
    return int(case_id[SEED_DIGITS], 16)


class SecondInputSet:
    name = "second"
    precedence = 0

    def inputs(self, case, workload, specs) -> tuple[str, dict[str, np.ndarray]] | None:
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

    def details(self, case, label: str) -> dict[str, Any]:
        return {"inputs": label, "seed": second_seed(case.id)}


SECOND = SecondInputSet()
