"""Case generation: (campaign seed, case index) → :class:`~fuzzharness.core.case.Case`.

Draw order (stable within a harness version): workload, its parameters, input mode and
distribution, input seed, the schedule source, the schedule, then the compiler options.
The choice sequence is kept in ``case.origin["choices"]`` so a minimizer can replay and
shrink it with Hypothesis.

Input modes: a share ``exact_fraction`` of the cases uses the exact-integer mode (bitwise
comparison) where the workload offers it; a case whose reduction is too long for its
accumulation dtype's error model to say much (``k·u ≥ 1/2``, read from the program, see
:meth:`fuzzharness.oracles.program.Numerics.meaningless_reductions`) always uses it when available.
Float-mode cases draw one of :data:`FLOAT_DISTRIBUTIONS`, or, with probability
``special_fraction`` and when some input allows IEEE special values, ``special_values``.

Schedule sources (``case.schedule["source"]``):

``random``        a random walk over the registered primitives (:mod:`fuzzharness.generators.schedules`)
``metaschedule``  a MetaSchedule design space, re-sampled and post-processed
                  (:mod:`fuzzharness.generators.schedules.metaschedule`); ``metaschedule_fraction`` of
                  the cases
``gpu:<style>``   a whole GPU schedule for GPU targets (:mod:`fuzzharness.generators.gpu`)

Compiler options (``case.target`` mcpu/mattr, ``case.pass_config``) vary in
``option_fraction`` of the cases (:mod:`fuzzharness.generators.options`); the rest use the campaign's
target as given and an empty PassContext configuration.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from fuzzharness.backends import backends
from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import trace_to_json, unchecked_schedule_calls
from fuzzharness.generators import draw as draws
from fuzzharness.generators.gpu import gpu_schedule, is_gpu_target
from fuzzharness.generators.graphs.cases import draw_graph_case
from fuzzharness.generators.graphs.spec import DTYPES, GRAPH_WORKLOAD
from fuzzharness.generators.inputs import EXACT_DISTRIBUTIONS, FLOAT_DISTRIBUTIONS, distributions
from fuzzharness.generators.options import draw_options
from fuzzharness.generators.schedules import ScheduleOptions, primitives, random_schedule
from fuzzharness.generators.schedules.metaschedule import SOURCE, metaschedule_schedule
from fuzzharness.generators.steering import weighted
from fuzzharness.generators.targets import TARGET_PRESETS, choose, label  # noqa: F401 - TARGET_PRESETS re-exported
from fuzzharness.generators.workloads import GenOptions, workloads
from fuzzharness.oracles.program import Numerics

#: share of whole-graph cases in a default campaign (see draw_case; benchmarks/throughput.py
#: measures what it costs)
GRAPH_FRACTION = 0.2

# ``--target NAME`` presets (a TOML ``generation.target`` table may give any target dict).


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
    metaschedule_fraction: float = 0.1  # share of schedules sampled from MetaSchedule spaces
    option_fraction: float = 0.5  # share of cases with drawn compiler options
    known_bug_sites: bool = False  # also propose where TVM is known to fail (see primitives)
    graph_fraction: float = GRAPH_FRACTION  # share of whole-graph (Relax) cases, see below
    #: a target mix (generators/targets.py): case i gets one of these, by ``target_shares``;
    #: None: every case gets ``target``
    targets: tuple[dict[str, Any], ...] | None = None
    target_shares: tuple[float, ...] | None = None
    #: share of a campaign's cases that are mutants of its feedback corpus (0: none; see
    #: fuzzharness/campaign/feedback.py)
    feedback: float = 0.0
    feedback_period: int = 100  # cases between corpus snapshots (and the least lag to one)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def at(self, seed: int, index: int) -> GenSettings:
        """The settings case ``index`` of seed ``seed`` is drawn with: its target chosen
        from the mix (:func:`generators.targets.choose`); ``self`` when there is no mix."""
        if not self.targets:
            return self
        target = choose(self.targets, self.target_shares, seed, index)
        return dataclasses.replace(self, target=target, targets=None, target_shares=None)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GenSettings:
        d = dict(d)
        for k in ("workloads", "dtypes", "primitives", "targets", "target_shares"):
            if d.get(k) is not None:
                d[k] = tuple(d[k])
        return cls(**d)

    def validate(self) -> GenSettings:
        """Raise UnknownName / ValueError for names and values a user got wrong."""

        for name in ("workloads", "dtypes", "primitives"):  # None: all; () selects nothing
            if getattr(self, name) is not None and not getattr(self, name):
                raise ValueError(f"{name}: an empty list selects nothing (leave it out for all)")
        names = workloads.check(self.workloads or [])
        primitives.check([p for p in self.primitives or [] if p != SOURCE])
        if self.dtypes is not None:
            pool = names or workloads.names()
            known = {d for w in pool for d in workloads[w].dtype_labels}
            bad = [d for d in self.dtypes if d not in known]
            if bad:
                which = f" of workload(s) {', '.join(names)}" if names else ""
                raise ValueError(f"unknown dtype {bad[0]!r}{which}; known: {', '.join(sorted(known))}")
        if self.feedback_period < 1:
            raise ValueError("feedback_period must be ≥ 1")
        if self.max_steps < 0 or self.max_reduction < 1:
            raise ValueError("max_steps must be ≥ 0 and max_reduction ≥ 1")
        for name in ("exact_fraction", "special_fraction", "metaschedule_fraction",
                     "option_fraction", "graph_fraction", "feedback"):
            if not 0 <= getattr(self, name) <= 1:  # nan fails too
                raise ValueError(f"{name} must be between 0 and 1 (got {getattr(self, name)!r})")

        for target in (self.target, *(self.targets or ())):
            if not isinstance(target, dict) or "kind" not in target:
                raise ValueError("target must be a table with a 'kind', e.g. { kind = \"cuda\" }")
            backends[target["kind"]]  # UnknownName lists the known kinds
        if self.target_shares is not None and (
                not self.targets or len(self.target_shares) != len(self.targets)
                or any(s < 0 for s in self.target_shares) or sum(self.target_shares) <= 0):
            raise ValueError("target_shares needs one share ≥ 0 per entry of targets "
                             "(not all 0)")
        return self

    def workload_names(self) -> list[str]:
        if self.workloads is None:
            # GPU workloads (generators/workloads/gpu_matmul.py) join for the targets they are for
            names = [n for n, w in workloads.items()
                     if w.default or getattr(w, "for_target", lambda t: False)(self.target)]
        else:
            names = sorted(self.workloads)
        if self.dtypes is not None:
            names = [n for n in names if set(workloads[n].dtype_labels) & set(self.dtypes)]
        return names

    def graphs_allowed(self) -> bool:
        """Whether graph cases are in the mix: named (``workloads`` includes ``graph``), or
        by default with ``graph_fraction > 0`` — and the dtype filter leaves a graph dtype."""

        if self.dtypes is not None and not set(self.dtypes) & set(DTYPES):
            return False
        if self.workloads is None:
            return self.graph_fraction > 0
        return GRAPH_WORKLOAD in self.workloads


def generate_case(seed: int, index: int, settings: GenSettings,
                  mutation: dict[str, Any] | None = None) -> Case:
    """Case ``index`` of seed ``seed``; with ``mutation`` (a campaign's feedback,
    :mod:`fuzzharness.campaign.feedback`) the mutant it names (:mod:`generators.mutate`)."""
    data = case_data(seed, index, mutation)
    case = draw_case(data, settings.at(seed, index))
    origin = dict(case.origin, seed=seed, index=index, choices=draws.recorded_choices(data))
    if mutation:
        origin["mutant_of"] = {"index": mutation["parent"], "op": mutation["op"]}
    return case.replace(origin=origin)


def case_data(seed: int, index: int, mutation: dict[str, Any] | None = None):
    """The ConjectureData case ``index`` draws from (a mutant's when ``mutation`` is given)."""
    if mutation:
        from fuzzharness.generators.mutate import mutant_data

        return mutant_data(seed, index, mutation)
    return draws.for_case(seed, index)


def draw_case(data: Any, settings: GenSettings) -> Case:
    """Draw one case through ``data.draw`` (a ConjectureData or Hypothesis' ``st.data()``).

    Graph cases: when the settings allow both graphs and single-PrimFunc workloads, the first
    draw decides (``graph_fraction``); with only one of them there is no such draw, so a
    campaign restricted to named workloads generates the cases it always did.

    The schedule calls skip TVM's Python-side argument check (see
    :func:`~fuzzharness.core.tvm_support.unchecked_schedule_calls`: the same cases, faster).
    """
    with unchecked_schedule_calls():
        return _draw_case(data, settings)


def _draw_case(data: Any, settings: GenSettings) -> Case:
    names = [n for n in settings.workload_names() if n != GRAPH_WORKLOAD]
    if settings.graphs_allowed():
        if not names or draws.chance(data, settings.graph_fraction):
            return draw_graph_case(data, settings)
    if not names:
        raise ValueError("the workload/dtype filters leave no workload to generate")
    # steered per target (generators/steering.py: texture workloads for Adreno)
    wl_name = data.draw(st.sampled_from(weighted("workload", names, label(settings.target))))
    workload = workloads[wl_name]
    options = GenOptions(dtypes=settings.dtypes, max_reduction=settings.max_reduction)
    params = workload.draw_params(data, options)

    specs = workload.inputs(params)
    func = workload.prim_func(params)
    exact_ok = all(spec.int_max > 0 for spec in specs)
    must_exact = bool(Numerics(func).meaningless_reductions())
    want_exact = draws.chance(data, settings.exact_fraction)
    want_special = draws.chance(data, settings.special_fraction)
    if (want_exact or must_exact) and exact_ok:
        distribution, oracle = data.draw(st.sampled_from(sorted(EXACT_DISTRIBUTIONS))), "exact"
    elif want_special and any(spec.specials for spec in specs):
        distribution, oracle = "special_values", "bound"
    else:
        distribution, oracle = data.draw(st.sampled_from(FLOAT_DISTRIBUTIONS)), "bound"
    distributions[distribution]
    input_seed = data.draw(st.integers(0, 2**32 - 1))

    origin: dict[str, Any] = {"dtype": workload.dtype_label(params)}
    if is_gpu_target(settings.target):
        # GPU schedules are drawn whole, one style per case (generators/gpu/base.py).
        gs = gpu_schedule(func, data, settings.target)
        sch, source = gs.sch, f"gpu:{gs.style}"
        target, pass_config = dict(settings.target), dict(gs.pass_config)
        origin.update(steps=[], gpu_style=gs.style, notes=gs.notes)
    else:
        source, sch, steps = draw_schedule(func, data, settings)
        target, pass_config, option_labels, tier = draw_options(
            data, settings.target, settings.option_fraction)
        origin.update(steps=[s.to_dict() for s in steps], options=option_labels)
        if tier is not None:
            origin["mcpu_tier"] = tier  # what was drawn; target["mcpu"] is what this host runs
    return Case(
        workload={"name": wl_name, "params": params},
        inputs={"distribution": distribution, "seed": input_seed},
        schedule={"source": source, "trace": trace_to_json(sch.trace)},
        target=target,
        pass_config=pass_config,
        oracle={"mode": oracle},
        origin=origin,
    )


def draw_schedule(func, data: Any, settings: GenSettings):
    """Draw the schedule source, then the schedule; return ``(source, schedule, steps)``."""

    # naming primitives without "metaschedule" switches the source off (its draw stays)
    wanted = settings.primitives is None or SOURCE in settings.primitives
    if draws.chance(data, settings.metaschedule_fraction) and wanted:
        sch, steps = metaschedule_schedule(func, data)
        return SOURCE, sch, steps
    sch, steps = random_schedule(func, data, ScheduleOptions(
        max_steps=settings.max_steps, primitives=settings.primitives,
        known_bug_sites=settings.known_bug_sites))
    return "random", sch, steps
