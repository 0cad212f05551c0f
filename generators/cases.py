"""Case generation: (campaign seed, case index) → :class:`~fuzzharness.case.Case`.

Draw order (stable within a harness version): workload, its parameters, input mode and
distribution, input seed, then the schedule.  The choice sequence is kept in
``case.origin["choices"]`` so a minimizer can replay and shrink it with Hypothesis.

Input modes: a share ``exact_fraction`` of the cases uses the exact-integer mode (bitwise
comparison) where the workload offers it; a case whose reduction is too long for its
accumulation dtype's error model to say much (``k·u ≥ 1/2``, read from the program, see
:meth:`oracles.program.Numerics.meaningless_reductions`) always uses it when available.  Float-mode cases draw one
of :data:`FLOAT_DISTRIBUTIONS`, or, with probability ``special_fraction`` and when some input
allows IEEE special values, ``special_values``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from fuzzharness.case import Case
from fuzzharness.tvm_support import trace_to_json
from generators import draw as draws
from generators.inputs import EXACT_DISTRIBUTIONS, distributions
from generators.schedules import ScheduleOptions, random_schedule
from generators.workloads import GenOptions, workloads
from oracles.program import Numerics

FLOAT_DISTRIBUTIONS = ("uniform", "normal", "cancellation", "wide_range")


@dataclasses.dataclass(frozen=True)
class GenSettings:
    """Everything generation depends on besides (seed, index); plain data (JSON-able)."""

    workloads: tuple[str, ...] | None = None  # None: every registered workload
    dtypes: tuple[str, ...] | None = None
    primitives: tuple[str, ...] | None = None
    max_steps: int = 8
    max_reduction: int = 1024
    exact_fraction: float = 0.25  # share of cases in the exact-integer mode
    special_fraction: float = 0.1  # share of float-mode cases with inf/nan inputs (where allowed)
    target: dict[str, Any] = dataclasses.field(default_factory=lambda: {"kind": "llvm"})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GenSettings:
        d = dict(d)
        for k in ("workloads", "dtypes", "primitives"):
            if d.get(k) is not None:
                d[k] = tuple(d[k])
        return cls(**d)

    def validate(self) -> GenSettings:
        """Raise UnknownName / ValueError for names and values a user got wrong."""
        from generators.schedules import primitives

        names = workloads.check(self.workloads or [])
        primitives.check(self.primitives or [])
        if self.dtypes is not None:
            pool = self.workload_names() if names else workloads.names()
            known = {d for w in pool for d in workloads[w].dtype_labels}
            bad = [d for d in self.dtypes if d not in known]
            if bad:
                raise ValueError(f"unknown dtype {bad[0]!r}; known: {', '.join(sorted(known))}")
        if self.max_steps < 0 or self.max_reduction < 1:
            raise ValueError("max_steps must be ≥ 0 and max_reduction ≥ 1")
        return self

    def workload_names(self) -> list[str]:
        if self.workloads is None:
            names = [n for n, w in workloads.items() if w.default]
        else:
            names = sorted(self.workloads)
        if self.dtypes is not None:
            names = [n for n in names if set(workloads[n].dtype_labels) & set(self.dtypes)]
        return names


def generate_case(seed: int, index: int, settings: GenSettings) -> Case:
    data = draws.for_case(seed, index)
    case = draw_case(data, settings)
    origin = dict(case.origin, seed=seed, index=index, choices=draws.recorded_choices(data))
    return case.replace(origin=origin)


def draw_case(data: Any, settings: GenSettings) -> Case:
    """Draw one case through ``data.draw`` (a ConjectureData or Hypothesis' ``st.data()``)."""
    names = settings.workload_names()
    if not names:
        raise ValueError("the workload/dtype filters leave no workload to generate")
    wl_name = data.draw(st.sampled_from(names))
    workload = workloads[wl_name]
    options = GenOptions(dtypes=settings.dtypes, max_reduction=settings.max_reduction)
    params = workload.draw_params(data, options)

    specs = workload.inputs(params)
    func = workload.prim_func(params)
    exact_ok = all(spec.int_max > 0 for spec in specs)
    must_exact = bool(Numerics(func).meaningless_reductions())
    want_exact = data.draw(st.floats(0, 1)) < settings.exact_fraction
    want_special = data.draw(st.floats(0, 1)) < settings.special_fraction
    if (want_exact or must_exact) and exact_ok:
        distribution, oracle = data.draw(st.sampled_from(sorted(EXACT_DISTRIBUTIONS))), "exact"
    elif want_special and any(spec.specials for spec in specs):
        distribution, oracle = "special_values", "bound"
    else:
        distribution, oracle = data.draw(st.sampled_from(FLOAT_DISTRIBUTIONS)), "bound"
    distributions[distribution]
    input_seed = data.draw(st.integers(0, 2**32 - 1))

    sch, steps = random_schedule(
        func, data, ScheduleOptions(max_steps=settings.max_steps, primitives=settings.primitives)
    )
    trace = trace_to_json(sch.trace)
    return Case(
        workload={"name": wl_name, "params": params},
        inputs={"distribution": distribution, "seed": input_seed},
        schedule={"source": "random", "trace": trace},
        target=dict(settings.target),
        pass_config={},
        oracle={"mode": oracle},
        origin={"steps": [s.to_dict() for s in steps], "dtype": workload.dtype_label(params)},
    )
