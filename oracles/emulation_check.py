"""The same-order emulation as a check (:mod:`fuzzharness.oracles.checks`): a run's outputs
against the program's own arithmetic in its own dtypes (:mod:`fuzzharness.oracles.emulate`).

Two modes (the whole argument is in :mod:`fuzzharness.execution.second_run`'s docstring):
*order-independent* on exact inputs — only the elements whose every partial sum is exact in
the declared accumulator, whatever the order, are judged, so a bitwise difference there is
never a legal result; *same order* on float inputs when the order analysis proves the
schedule keeps every element's operations and their order — ``strict``: a legal lowering may
sum in another order, so its failure alone is a note.
"""

from __future__ import annotations

import numpy as np

from fuzzharness.core.verdict import Status
from fuzzharness.oracles.checks import CheckBase, CheckResult, RunData
from fuzzharness.oracles.compare import Judgement
from fuzzharness.oracles.emulate import Unsupported, emulate, target_cpu


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a if a.dtype.kind in "iub" else a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    eq = _bits(a) == _bits(b)
    if a.dtype.kind not in "iub":
        with np.errstate(invalid="ignore"):
            eq |= np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    return eq


def bitwise_judgement(emulation, outputs: dict[str, np.ndarray], why: str) -> tuple[Judgement, int, int]:
    """(judgement, determined elements, all elements) of ``outputs`` against the emulation."""
    determined = total = 0
    for name in sorted(emulation.variants):
        out = np.asarray(outputs[name])
        variants = [np.asarray(v, dtype=out.dtype) for v in emulation.variants[name]]
        mask = emulation.determined[name]
        mask = np.ones(out.shape, bool) if mask is None else mask
        determined += int(mask.sum())
        total += mask.size
        ok = np.zeros(out.shape, bool)
        for v in variants:
            ok |= _same(out, v)
        bad = mask & ~ok
        if bad.any():
            idx = [int(i) for i in np.argwhere(bad)[0]]
            got = float(out[tuple(idx)].astype(np.float64))
            want = [float(v[tuple(idx)].astype(np.float64)) for v in variants]
            alt = f" (or {want[1]!r} with fused multiply-adds)" if len(want) > 1 else ""
            status = Status.NAN_INF if not np.isfinite(got) and np.isfinite(want[0]) \
                else Status.WRONG_RESULT
            return Judgement(
                status, float("inf"), abs(got - want[0]) if np.isfinite(got) else float("inf"),
                name, idx,
                f"{name}{idx}: got {got!r}, the program's own arithmetic in its own dtypes gives "
                f"{want[0]!r}{alt}; {int(bad.sum())} of {int(mask.sum())} determined elements "
                f"differ — bitwise equality is required because {why}",
            ), determined, total
    return Judgement(Status.PASS, 0.0, 0.0, None, None), determined, total


WHY = {True: "the schedule keeps every element's operations and their order",
       False: "every partial sum of these elements is exact in its accumulator, whatever the order"}


class EmulationCheck(CheckBase):
    """The program's own arithmetic in its own dtypes (see the module docstring for the two
    modes); llvm targets, finite inputs, programs the interpreter understands."""

    name = "emulation"
    precedence = 10

    def judge(self, data: RunData) -> CheckResult | str:
        target, order = data.case.target, data.order
        if target_cpu(target) is None:
            return f"no arithmetic model for target kind {target.get('kind')}"
        if order.spatial_kept and (data.exact_inputs or (data.run != "first" and not order.preserved)):
            ordered = False
        elif order.preserved:
            ordered = True
        else:
            return "the schedule changes more than accumulation orders"
        if not all(np.isfinite(np.asarray(x).astype(np.float64)).all() for x in data.inputs.values()):
            return "special-value inputs"
        try:
            em = emulate(data.func, data.inputs, target, ordered=ordered)
        except Unsupported as e:
            return f"not emulated: {e}"
        j, det, total = bitwise_judgement(em, data.outputs, WHY[ordered])
        if det == 0:
            return "no element is order-independent"
        note = f"{det}/{total} elements bitwise" + (" (either multiply-add variant)"
                                                     if any(len(v) > 1 for v in em.variants.values()) else "")
        return CheckResult(data.run, self.name, j, det == total, note, strict=ordered, ordered=ordered,
                           extra={"mode": "same order" if ordered else "order-independent",
                                  "strict": ordered})

    def judge_baseline(self, data, result, baseline):
        # the baseline is the unscheduled program, judged in the mode of the check that failed
        em = emulate(data.func, data.inputs, data.case.target, ordered=result.ordered)
        return bitwise_judgement(em, baseline, WHY[result.ordered])[0]


#: registered lazily by fuzzharness.oracles.checks
EMULATION = EmulationCheck()
