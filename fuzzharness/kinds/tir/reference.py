"""The inputs, float64 reference and error bound of a case, and their source for a repro.

:func:`expectation` computes what the harness compares a kernel with — the same steps as
the ``generate`` and ``verify`` stages of :mod:`fuzzharness.execution.stages`, without compiling
anything: the workload's inputs from the case's distribution and seed, its float64
reference and per-element bounds, zero bounds in the exact-integer mode, and the layouts of
parameters that ``transform_layout`` re-laid out.

:func:`reference_source` writes the body of the repro's ``reference(x)``: for workloads with
a formula registered here (:data:`FORMULAS`), the numpy expression and — in the bound mode —
the error model's arithmetic inline, with a comment naming the model; for any other
workload, or when the inline result is not bit-identical to the harness's (a bound model
that changed, say), the reference values and bounds themselves, embedded.  Either way the
function the script runs reproduces the harness's numbers exactly; that is checked here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import parse_prim_func, replay_trace
from fuzzharness.execution import relayout
from fuzzharness.generators.inputs import make_inputs
from fuzzharness.generators.workloads import workloads
from fuzzharness.kinds.tir.numpy_reference import needs_rounding, numpy_source
from fuzzharness.oracles import bounds, numerics, target_math
from fuzzharness.oracles.checks import input_sets
from fuzzharness.oracles.emulate import emulate
from fuzzharness.oracles.numerics import numpy_dtype
from fuzzharness.oracles.program import Numerics
from fuzzharness.repro import arrays


@dataclasses.dataclass
class Expectation:
    func: Any  # the unscheduled PrimFunc (of the program TVM compiles)
    source: str  # its TVMScript text
    input_specs: list  # fuzzharness.generators.inputs.InputSpec
    output_specs: list  # fuzzharness.generators.workloads.base.TensorSpec
    inputs: dict[str, np.ndarray]
    expected: dict[str, Any]  # output name → fuzzharness.oracles.bounds.Expected
    layouts: dict[str, Any]  # parameter → fuzzharness.execution.relayout.Layout
    exact: bool
    program: Any  # what the references read from the program (program_numerics)


def program_source(workload, params: dict[str, Any]) -> str:
    """The text TVM compiles: ``kernel_source`` where a workload distinguishes it."""
    text = getattr(workload, "kernel_source", workload.source)(params)
    return text.strip("\n") + "\n"


def program_numerics(case: Case) -> Numerics:
    """What the references read from the program, as the campaign's run read it: the declared
    program and its schedule's (:class:`~fuzzharness.oracles.program.Numerics`)."""
    func = workloads[case.workload_name].prim_func(case.params)
    try:
        scheduled = replay_trace(func, case.trace).mod["main"] if case.trace else None
    except Exception:  # noqa: BLE001 - a schedule that fails has built nothing to judge
        scheduled = None
    return Numerics(func, case.target, scheduled)


def expectation(case: Case, verdict=None) -> Expectation:
    """What the harness compared the kernel with.  With the ``verdict`` of a failure decided
    by the second input set or by the same-order emulation (``details["decided_by"]``,
    :mod:`fuzzharness.execution.second_run`), the inputs and reference of *that* check: a repro
    of a bitwise failure judges bitwise (bound 0, or the distance to the other multiply-add
    variant; elements the emulation does not determine are not judged)."""

    wl = workloads[case.workload_name]
    source = program_source(wl, case.params)
    func = parse_prim_func(source)
    specs, outs = wl.inputs(case.params), wl.outputs(case.params)
    inputs = make_inputs(specs, case.inputs["distribution"], case.inputs["seed"])
    program = program_numerics(case)
    with np.errstate(all="ignore"), target_math.applied(case.target):
        expected = wl.reference(case.params, inputs, program)
    exact = case.oracle.get("mode") == "exact"
    if exact:
        to_exact = getattr(bounds, "exact_mode", None)
        for name, e in list(expected.items()):
            if to_exact is not None:
                expected[name] = to_exact(e)
            else:
                e.bound = np.zeros_like(e.value)
    layouts = relayout.param_layouts(func, case.trace) if case.trace else {}
    decided = str(((verdict.details or {}) if verdict is not None else {}).get("decided_by", ""))
    if decided:
        inputs, expected, exact = _decisive(case, wl, specs, decided, verdict, inputs, expected,
                                            exact, program)
    return Expectation(func, source, specs, outs, inputs, expected, layouts, exact, program)


def _decisive(case, wl, specs, decided: str, verdict, inputs, expected, exact, program):
    """(inputs, expected, exact) of the check that decided ``verdict`` (see expectation)."""
    run = re.search(r"\((\w+) run\)", decided)
    if run and run.group(1) != "first":  # another input set decided: its inputs
        _, inputs = input_sets[run.group(1)].inputs(case, wl, specs)
        exact = False
        with np.errstate(all="ignore"), target_math.applied(case.target):
            expected = wl.reference(case.params, inputs, program)
    if decided.startswith("emulation"):
        d = verdict.details or {}
        # the check's own mode; verdicts stored before it was recorded: same order where kept
        ordered = bool(d.get("emulation_ordered", (d.get("order") or {}).get("preserved")))
        em = emulate(wl.prim_func(case.params), inputs, case.target, ordered=ordered)
        for name, variants in em.variants.items():
            v0 = np.asarray(variants[0]).astype(np.float64)
            spread = np.abs(np.asarray(variants[-1]).astype(np.float64) - v0)
            mask = em.determined[name]
            bound = np.where(mask if mask is not None else True, np.nan_to_num(spread), np.inf)
            expected[name] = bounds.Expected(v0, bound, expected[name].dtype,
                                             "the program's own arithmetic, same order (bitwise)")
        exact = False  # the bounds are per element (0, a variant's distance, inf: not judged)
    return inputs, expected, exact


# -- formulas -------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Formula:
    """A reduction ``value = Σ terms`` spelled in numpy over float64 inputs."""

    value: str  # expression of the float64 input arrays (named after the parameters)
    abs_sum: str  # Σ|terms|, the same expression on absolute values
    terms: Callable[[dict[str, Any]], int]  # k, the number of terms per output element
    products: bool  # each term is a product of two inputs (one more rounding)
    model: str  # the model name oracles/bounds.py reports


FORMULAS: dict[tuple[str, str], Formula] = {
    ("matmul", "C"): Formula("A @ B", "np.abs(A) @ np.abs(B)", lambda p: p["K"], True, "dot"),
    ("row_sum", "B"): Formula("A.sum(axis=1)", "np.abs(A).sum(axis=1)", lambda p: p["N"], False,
                              "sum"),
}
#: how close an inline value must come to the harness's where the bound is not 0: a float64
#: reference summed in another order differs in the last bits, far below any error bound
VALUE_SLACK = 1e-9  # of the bound


def _fmt(dtype: str):

    return numerics.fmt(dtype)


def _pow2(x: float) -> str:
    e = int(np.log2(x))
    return f"2.0**{e}" if 2.0**e == x else repr(x)


def _bound_lines(f: Formula, k: int, acc: str, out: str) -> list[str]:
    """The arithmetic of :func:`fuzzharness.oracles.bounds.reduction`, written out (checked bit for bit
    against the harness's numbers by :func:`_agrees` before it is used)."""

    a = _fmt(acc)
    n = max(k - 1, 0) + (1 if f.products else 0)
    lines = [
        f"# error model \"{f.model}\" (tvm-fuzzharness oracles/bounds.py; Higham, Accuracy and",
        "# Stability of Numerical Algorithms, 2nd ed., eq. 3.5 and Lemma 3.1): whatever order a",
        f"# schedule sums the {k} terms in, |computed - exact| <= gamma_n * sum|terms| + (n + 1) * eta,",
        f"# gamma_n = n*u / (1 - n*u), n = k - 1{' + 1 (products)' if f.products else ''} = {n};",
        f"# u: one {acc} operation as TVM lowers it"
        + (" (through float32: double rounding)" if a.precision < 24 else "")
        + ", plus 2^-53 for this float64 reference's own rounding",
        f"u, eta, largest = {numerics.op_u(acc) + numerics.U64!r}, {_pow2(a.eta)}, {a.max!r}",
        f"n = {n}",
        "ku = n * u",
        "gamma = ku / (1.0 - ku) if ku < 1.0 else np.inf",
        f"abs_sum = {f.abs_sum}",
        "err = gamma * abs_sum + (n + 1) * eta",
        "overflow = abs_sum * (1.0 + gamma) > largest if np.isfinite(gamma) else np.zeros(value.shape, bool)",
        "err = np.where(overflow | (np.abs(value) + err > largest), np.inf, err)",
    ]
    o = _fmt(out)
    narrowing = out != acc and not (o.precision >= a.precision and o.emin <= a.emin and o.max >= a.max)
    if narrowing:
        lines += [
            f"# then one rounding to the {out} output: err + u_out * (|value| + err) + eta_out",
            f"u_out, eta_out, largest_out = {numerics.op_u(out) + numerics.U64!r}, {_pow2(o.eta)}, {o.max!r}",
            "err = err + u_out * (np.abs(value) + err) + eta_out",
            "err = np.where(np.abs(value) + err > largest_out, np.inf, err)",
        ]
    lines.append(f"bound = err * {bounds.BOUND_SLACK!r}  # slack for evaluating the bound in float64"
                 "; inf: the model cannot judge")
    return lines


def _formula_body(case: Case, e: Expectation) -> list[str] | None:
    """The reference as the operator's definition in numpy
    (:mod:`fuzzharness.kinds.tir.numpy_reference`) with its bound: 0 in the exact-integer
    mode, the error model's arithmetic inline where a formula is registered here, else the
    model's per-element bound as numbers (one line says which model)."""
    defined = numpy_source(case.workload_name, case.params)
    if defined is None:
        return None
    body = [f"{s.name} = x[{s.name!r}].astype(np.float64)" for s in e.input_specs]
    body.append("# the operator's definition, in float64:")
    if any(not np.all(np.isfinite(np.asarray(v, dtype=np.float64))) for v in e.inputs.values()):
        # the case drew inf/nan inputs on purpose: their IEEE results are the reference (the
        # bound is inf where the model cannot judge them), not a warning in the bug report
        body.append("with np.errstate(invalid='ignore', over='ignore', divide='ignore'):"
                    "  # inf/nan inputs")
        body += ["    " + ln for ln in defined]
    else:
        body += defined
    results = []
    program = e.program
    for o in e.output_specs:
        exp = e.expected[o.name]
        body.append(f"value = np.asarray({o.name}, dtype=np.float64)")
        f = FORMULAS.get((case.workload_name, o.name))
        if e.exact or not np.any(exp.bound):
            why = ("exact-integer inputs: every partial result is an integer small enough to be "
                   "exact, so any legal order gives exactly this value" if e.exact else
                   f"an exact operation (error model \"{exp.model}\"): TVM must give this value")
            body += [f"# {why}: bound 0"]
            if e.exact and not numerics.is_int(o.dtype) and needs_rounding(case, e, o.name):
                body += [f"# (correctly rounded once, to the {o.dtype} output)",
                         f"value = value.astype({arrays.dtype_source(numpy_dtype(o.dtype))})"
                         ".astype(np.float64)"]
            body.append("bound = np.zeros_like(value)")
        elif f is not None:
            body += _bound_lines(f, int(f.terms(case.params)), program.accumulation_dtype(o.name),
                                 o.dtype)
        else:
            body += [f"# per-element error bound of the \"{exp.model}\" model "
                     f"(tvm-fuzzharness oracles/bounds.py; inf: it cannot judge)",
                     f"bound = {arrays.array_source(np.asarray(exp.bound, dtype=np.float64))}"]
        body.append(f"{o.name}_expected = (value, bound)")
        results.append(f"{o.name!r}: {o.name}_expected")
    body.append("return {" + ", ".join(results) + "}")
    return body


def _embedded_body(e: Expectation) -> list[str]:
    body = []
    results = []
    for o in e.output_specs:
        exp = e.expected[o.name]
        body += [f"# float64 reference for exactly these inputs, computed by tvm-fuzzharness "
                 f"(workload reference, error model \"{exp.model}\", oracles/bounds.py)",
                 f"value = {arrays.array_source(np.asarray(exp.value, dtype=np.float64))}"]
        if e.exact or not np.any(exp.bound):
            body += ["# bound 0: the result must equal the reference bit for bit "
                     "(exact-integer inputs or an exact operation)",
                     "bound = np.zeros_like(value)"]
        else:
            body += [f"# per-element bound of the \"{exp.model}\" error model (inf: cannot judge)",
                     f"bound = {arrays.array_source(np.asarray(exp.bound, dtype=np.float64))}"]
        body.append(f"{o.name}_expected = (value, bound)")
        results.append(f"{o.name!r}: {o.name}_expected")
    body.append("return {" + ", ".join(results) + "}")
    return body


def _function(body: list[str]) -> str:
    head = ['def reference(x):',
            '    """float64 value and per-element error bound of every output."""']
    return "\n".join(head + ["    " + ln if ln else "" for ln in body]) + "\n"


def _agrees(text: str, e: Expectation) -> bool:
    import ml_dtypes

    ns: dict[str, Any] = {"np": np, "ml_dtypes": ml_dtypes}
    try:
        exec(arrays.UNPACK_HELPER + "\n" + text, ns)  # noqa: S102 - our generated source
        with np.errstate(all="ignore"):
            got = ns["reference"]({k: v.copy() for k, v in e.inputs.items()})
    except Exception:  # noqa: BLE001 - a formula that does not fit: embed instead
        return False
    for o in e.output_specs:
        exp = e.expected[o.name]
        value, bound = got[o.name]
        want_value = np.asarray(exp.value, dtype=np.float64)
        want_bound = np.ascontiguousarray(np.asarray(exp.bound, dtype=np.float64))
        value = np.asarray(value, dtype=np.float64)
        if value.shape != want_value.shape or not arrays.same_bits(
                np.ascontiguousarray(np.broadcast_to(bound, want_value.shape), dtype=np.float64),
                want_bound):
            return False
        if not (arrays.same_bits(np.ascontiguousarray(value), np.ascontiguousarray(want_value))
                or _close(value, want_value, want_bound)):
            return False
    return True


def _close(got: np.ndarray, want: np.ndarray, bound: np.ndarray) -> bool:
    """Equal where the bound is 0 or either is not finite; within :data:`VALUE_SLACK` of the
    bound elsewhere."""
    with np.errstate(all="ignore"):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        loose = (bound > 0) & np.isfinite(got) & np.isfinite(want)
        near = np.abs(got - want) <= VALUE_SLACK * np.where(np.isfinite(bound), bound, 0.0)
    return bool(np.all(same | (loose & near)))


def reference_source(case: Case, e: Expectation) -> tuple[str, bool]:
    """``(source of def reference(x), inline)``; inline False means the values are embedded
    (True: the operator's definition in numpy; its bound may still be numbers)."""
    body = _formula_body(case, e)
    if body is not None:
        text = _function(body)
        if _agrees(text, e):
            return text, True
    text = _function(_embedded_body(e))
    if not _agrees(text, e):
        raise AssertionError("embedded reference does not reproduce the harness's numbers")
    return text, False
