"""The stages of a TIR case: one PrimFunc of a registered workload, scheduled by one trace.

``generate``  rebuild the PrimFunc from the workload parameters and the inputs from the seed
``schedule``  replay the stored trace on a fresh ``s_tir.Schedule``; note parameters that
              ``transform_layout`` re-laid out (the kernel then takes and returns them in
              the new layout: inputs are laid out before the call, outputs read back
              through the same map — :mod:`fuzzharness.execution.relayout`)
``lower`` / ``codegen`` / ``build``   the back end's compilation steps
``run``       execute on poisoned output buffers
``verify``    float64 reference + error bound; inputs must be unchanged; transform_layout
              padding must hold the pad value; the order-preservation analysis of the
              scheduled IR decides whether the metamorphic baseline is needed
``baseline``  (only when a program check asks for it: :class:`fuzzharness.oracles.checks.
              ProgramCheck`) build and run another program on the same inputs — built in,
              the *unscheduled* program (:mod:`fuzzharness.oracles.metamorphic`): the
              metamorphic reference for the order-aware bitwise check and the cross-check
              of the numpy reference

In the exact-integer input mode (``case.oracle["mode"] == "exact"``) the reference is the
correctly rounded exact result with bound 0 (:func:`fuzzharness.oracles.bounds.exact_mode`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from fuzzharness.backends import backends
from fuzzharness.backends.base import poison
from fuzzharness.backends.launch import UnsupportedHostCode
from fuzzharness.backends.rpc import backend_for
from fuzzharness.core.case import canonical_json
from fuzzharness.core.kinds import RunKind
from fuzzharness.core.tvm_support import replay_trace, structural_equal
from fuzzharness.core.verdict import Stage
from fuzzharness.execution import rejections, relayout, second_run, tir_check
from fuzzharness.execution.census import census
from fuzzharness.execution.facts import schedule_facts
from fuzzharness.execution.stages import CaseRun, Execution
from fuzzharness.generators.inputs import make_inputs
from fuzzharness.generators.workloads import workloads
from fuzzharness.oracles import bounds, metamorphic, target_math
from fuzzharness.oracles.checks import Conclusion, Judged, ordered_program_checks
from fuzzharness.oracles.compare import judge
from fuzzharness.oracles.numerics import numpy_dtype
from fuzzharness.oracles.order import accumulation_order
from fuzzharness.oracles.program import Numerics

#: the other builds of program checks (the unscheduled programs: fuzzharness.oracles.metamorphic),
#: least recently used first
_BUILDS: dict[tuple[str, str, str, str], Any] = {}


def clear_baseline_cache() -> None:
    """Forget the compiled other programs (a benchmark that times building them)."""
    _BUILDS.clear()


def run_case(execution: Execution, result: CaseRun) -> None:
    """Run a TIR case's stages, filling ``result`` (its verdict last)."""
    case, stage = execution.case, execution.stage
    with stage(Stage.GENERATE):
        workload = workloads[case.workload_name]
        backend = backend_for(case.target)  # a remote device if one is set
        func = workload.prim_func(case.params)
        kernel_func = workload.kernel_prim_func(case.params, func)
        specs = workload.inputs(case.params)
        out_specs = workload.outputs(case.params)
        inputs = make_inputs(specs, case.inputs["distribution"], case.inputs["seed"])
        result.inputs = inputs
    with stage(Stage.SCHEDULE):
        sch = replay_trace(kernel_func, case.trace)
        result.scheduled = sch.mod
        rejections.check_request(kernel_func, case.trace)  # an edited trace may ask for it
        layouts = relayout.param_layouts(kernel_func, case.trace)
    with stage(Stage.LOWER):
        lowered = backend.lower(sch.mod, case.target, case.pass_config)
    execution.features = census(sch.mod, lowered)  # never raises
    with stage(Stage.CODEGEN):
        rt_mod = backend.codegen(lowered, case.target)
    with stage(Stage.BUILD):
        program = backend.build(rt_mod)
        not_run = backend.not_runnable(program)
    if not_run is not None:  # e.g. CUDA compiled by nvcc on a host without a GPU
        result.verdict = execution.not_run(not_run)
        return
    with stage(Stage.RUN):
        kernel_in, args, raw, outputs = _run_kernel(backend, program, layouts, specs,
                                                    out_specs, inputs)
        result.outputs = outputs
        # the same kernel on the other input sets (fuzzharness.execution.second_run)
        others = [(name, label, arrays, _run_kernel(backend, program, layouts, specs,
                                                    out_specs, arrays)[3])
                  for name, label, arrays in second_run.other_inputs(case, workload, specs)]
    with stage(Stage.VERIFY):
        clobbered = [s.name for s, a in zip(specs, args, strict=False)
                     if not np.array_equal(a, kernel_in[s.name], equal_nan=True)]
        unpadded = {n: k for n, r in raw.items()
                    if (k := relayout.unfilled_padding(layouts, n, r))}
        scheduled = sch.mod["main"]
        # a simulated miscompilation (kernel_source) is analysed as the schedule of the
        # declared program, as a real miscompilation's scheduled IR would be
        analysed = scheduled if kernel_func is func else replay_trace(func, case.trace).mod["main"]
        program = Numerics(func, case.target, analysed)
        # special-value inputs make nan/inf on purpose; the target's math decides the
        # bounds of divisions, square roots and library functions (oracles/target_math.py)
        with np.errstate(all="ignore"), target_math.applied(case.target):
            expected = workload.reference(case.params, inputs, program)
        exact = case.oracle.get("mode") == "exact"
        if exact:
            expected = {name: bounds.exact_mode(e) for name, e in expected.items()}
        # all-zero bounds (integers, max, copies) already demand bitwise equality
        exact = exact or not any(e.bound.any() for e in expected.values())
        result.expected = expected
        order = accumulation_order(func, analysed)
        runs = second_run.judge_runs(workload, case, func, order, expected, inputs, outputs,
                                     others, program)
        j = runs.judgement
        judged = Judged(case, func, order, expected, outputs, j, structural_equal(func, scheduled),
                        exact, runs.bitwise_first, execution.baseline_policy, runs.base_judge)
    c = _program_checks(stage, result, judged, runs, others,
                        lambda check, arrays: _run_program(check, judged, backend, workload,
                                                           specs, out_specs, arrays))
    problems = []
    if clobbered:
        problems.append(f"the kernel overwrote its input(s) {', '.join(clobbered)}")
    if unpadded:
        problems.append("transform_layout padding not filled with the pad value: "
                        + ", ".join(f"{n} ({k} elements)" for n, k in unpadded.items()))
    result.verdict = execution.conclude(
        j, outputs, status=c.status, message=c.message, details={**c.details, **runs.details},
        problems=problems,
        facts=lambda: _confirmed(schedule_facts(result.scheduled), case, backend, sch.mod,
                                 layouts, specs, out_specs, inputs, outputs, expected,
                                 execution.before_probe))


def _program_checks(stage, result, judged: Judged, runs, others, run_program) -> Conclusion:
    """Every registered program check (:class:`fuzzharness.oracles.checks.ProgramCheck`, the
    unscheduled baseline built in) in order, each on the status the previous one left; the
    other build (``run_program(check, inputs)``) runs on the inputs of the run that decided
    the case."""
    c = Conclusion(judged.judgement.status, None, {})
    for check in ordered_program_checks():
        if c.status is not judged.judgement.status or c.message is not None:
            judged = dataclasses.replace(judged, judgement=dataclasses.replace(
                judged.judgement, status=c.status, message=c.message or judged.judgement.message))
        with stage(Stage.VERIFY):
            how = check.plan(judged)
        other = judged.outputs if how == "self" else None
        if how == "build":
            with stage(Stage.BASELINE):
                try:
                    other = run_program(check, runs.failing_inputs or result.inputs)
                except UnsupportedHostCode:  # the other program has no kernel for the
                    how = "skip"  # device (a GPU target needs bindings): nothing to compare
            result.baseline = other if result.baseline is None else result.baseline
        elif how == "self" and runs.failing_run is not None:  # the program itself, on the run that failed
            other = next(o for name, _, _, o in others if name == runs.failing_run)
        with stage(Stage.VERIFY):
            now = check.conclude(judged, other, how)
        c = Conclusion(now.status, now.message or c.message, {**c.details, **now.details})
    return c


#: the mechanism fact, and what it becomes when the case still fails without vectorization
ALLOC, ALLOC_NOT_ALONE = "alloc_in_vectorized_loop", "alloc_in_vectorized_loop_not_alone"


def _confirmed(facts, case, backend, mod, layouts, specs, out_specs, inputs, outputs, expected,
               before_probe):
    """The mechanism fact only where it explains the failure: a wrong output with a buffer
    planned inside a vectorized loop must come out right when the same program is compiled
    with vectorization off (``tirx.disable_vectorize``: the loop runs serially, one lane at a
    time).  If it is still wrong, the case has another bug too, and the fact is renamed
    (:data:`ALLOC_NOT_ALONE`, not a mechanism: its root cause comes from its trigger).  Only
    failing cases pay for this (facts are computed for a failure's bucket)."""
    if ALLOC not in facts or judge(expected, outputs).status.value not in ("wrong_result", "nan_inf"):
        return facts
    before_probe(facts)  # the serial build may crash where the vectorized one did not
    try:
        config = dict(case.pass_config, **{"tirx.disable_vectorize": True})
        program = backend.build(backend.codegen(backend.lower(mod, case.target, config), case.target))
        serial = _run_kernel(backend, program, layouts, specs, out_specs, inputs)[3]
        alone = judge(expected, serial).status.value not in ("wrong_result", "nan_inf")
    except Exception:  # noqa: BLE001 - cannot tell: keep what the IR shows
        return facts
    return facts if alone else sorted({*facts} - {ALLOC} | {ALLOC_NOT_ALONE})


def _run_kernel(backend, program, layouts, specs, out_specs, inputs):
    """Run the kernel once on poisoned outputs: (kernel inputs, args, raw outputs, outputs in
    the reference layout)."""
    kernel_in = {s.name: relayout.kernel_array(layouts, s.name, inputs[s.name]) for s in specs}
    args = [kernel_in[s.name].copy() for s in specs]
    args += [poison(relayout.kernel_shape(layouts, o.name, o.shape),
                    np.dtype(numpy_dtype(o.dtype))) for o in out_specs]
    results = backend.run(program, args, len(out_specs))
    raw = {o.name: r for o, r in zip(out_specs, results, strict=True)}
    outputs = {n: relayout.reference_array(layouts, n, r) for n, r in raw.items()}
    return kernel_in, args, raw, outputs


def _run_program(check, judged: Judged, backend, workload, specs, out_specs, inputs):
    """The outputs of ``check``'s other build; builds are cached per check, program text,
    target and pass configuration."""
    import tvm

    case = judged.case
    func, target, config = check.program(judged)
    if target is not case.target and target.get("kind") != case.target.get("kind"):
        backend = backends[target["kind"]]  # e.g. GPU: the unscheduled program on llvm
    # a program check's program is a function of the case's program, target and options
    key = (check.name, workload.source(case.params), canonical_json(target), canonical_json(config))
    program = _BUILDS.pop(key, None)
    if program is None:
        module = tvm.IRModule({"main": func})
        program = backend.build(backend.codegen(backend.lower(module, target, config), target))
    _BUILDS[key] = program  # most recently used last
    while len(_BUILDS) > metamorphic.BASELINE_CACHE_SIZE:
        _BUILDS.pop(next(iter(_BUILDS)))
    args = [inputs[s.name].copy() for s in specs]
    args += [poison(o.shape, np.dtype(numpy_dtype(o.dtype))) for o in out_specs]
    results = backend.run(program, args, len(out_specs))
    return {o.name: r for o, r in zip(out_specs, results, strict=True)}


class TirRun(RunKind):
    """The TIR kind's protocol at the execution layer (:mod:`fuzzharness.core.kinds`)."""

    name = "tir"

    def run(self, execution, result) -> None:
        run_case(execution, result)

    def check_case(self, case) -> str | None:
        return tir_check.check_case(case)


RUN = TirRun()
