"""What a repro's triage found: the lowering pass involved, and the culprit schedule step.

Filled by a case kind's ``bisect_passes`` (:mod:`fuzzharness.kinds.tir.pass_bisect` probes
the lowering passes of a TIR case; :mod:`fuzzharness.minimize.step_bisect` names the culprit
schedule step of a TIR case or a graph), read by the repro writer (the issue's hints and IR,
the root cause's step and site) and by :func:`fuzzharness.buckets.root_causes.culprit_of`.
A field nobody probed stays empty.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class Triage:
    passes: list[str] = dataclasses.field(default_factory=list)  # pipeline order
    raised_in: str | None = None  # the pass that raised (errors during lowering)
    implicated: list[str] = dataclasses.field(default_factory=list)
    required: list[str] = dataclasses.field(default_factory=list)
    crashed: list[str] = dataclasses.field(default_factory=list)
    ir_before: str = ""  # IR given to the first implicated pass (or the raising one)
    ir_after: str = ""  # IR after it
    scheduled_tir: str = ""
    note: str = ""
    seconds: float = 0.0
    fix_test: str = ""  # "confirmed" / "not confirmed": the repro run without the culprit pass
    culprit_step: str = ""  # the first schedule step after which it fails (step_bisect)
    step_facts: list[str] = dataclasses.field(default_factory=list)  # that prefix's facts
    step_site: list[str] = dataclasses.field(default_factory=list)  # what the step acted on
    #: the defect the culprit step left in the scheduled program
    #: (fuzzharness.buckets.root_causes.located_mechanisms): no pass is the culprit then
    located: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def first_wrong_pass(self) -> str | None:
        if self.raised_in:
            return self.raised_in
        return self.implicated[0] if self.implicated and not self.located else None
