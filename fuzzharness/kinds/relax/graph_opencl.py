"""A graph repro on OpenCL: the Relax passes as on llvm, then each ``call_tir`` of ``main``
compiled by TVM to OpenCL C and launched through pyopencl, as the harness's call interpreter
does (:class:`fuzzharness.execution.relax_run.CallInterpreter`; TVM's PyPI wheel has no OpenCL
runtime for the VM).  The launch plan of every called PrimFunc is embedded as plain data
(``LAUNCHES``), read from TVM's lowered host functions; the kernel code is TVM's, generated
in the script (:data:`fuzzharness.repro.gpu_runtime.OPENCL_RUNTIME`).
"""

from __future__ import annotations

import pprint
from typing import Any

from fuzzharness.backends import backends
from fuzzharness.backends.launch import UnsupportedHostCode
from fuzzharness.core.relax_pipeline import apply_schedules, legalize
from fuzzharness.repro.kit import NotReproducible


def launches_source(mod, target: dict[str, Any], schedule: dict[str, Any],
                    pass_config: dict[str, Any]) -> str:
    """``LAUNCHES = {function: launch plan}`` for every PrimFunc ``main`` calls."""
    import tvm

    from fuzzharness.execution.relax_run import CallInterpreter

    scheduled = apply_schedules(legalize(mod, target, schedule.get("layout")), schedule, target)
    interp = CallInterpreter(scheduled, backends["opencl"], target, pass_config)
    backend, plans = backends["opencl"], {}
    called = interp.called()
    funcs = {gv.name_hint: f for gv, f in scheduled.functions.items()}
    for name in called:
        f = funcs[name].with_attr("global_symbol", "main")
        try:
            code = backend.codegen(backend.lower(tvm.IRModule({"main": f}), target, pass_config),
                                   target)
        except UnsupportedHostCode as e:
            raise NotReproducible(f"a launch plan cannot be read: {e}") from None
        except Exception:  # noqa: BLE001 - TVM fails on this function: the bug, no plan
            break
        plans[name] = code.plan.to_dict()
    return ("# -- the OpenCL launches " + "-" * 66 + "\n"
            f"CALLED = {called!r}  # the PrimFuncs main calls, in order\n"
            "# How TVM's host function of each called PrimFunc launches its kernels, in order (read\n"
            "# from TVM's lowered host functions by tvm-fuzzharness; an argument is a parameter by\n"
            "# position, a temporary the host allocates, or a scalar); grid × block = global size.\n"
            "# (A function TVM fails to compile has none.)\n"
            "LAUNCHES = " + pprint.pformat(plans, width=100, sort_dicts=False) + "\n")


#: the graph's compile_and_run on OpenCL (after relax.script.LOWER, before template.RUNNER)
COMPILE = r'''
# -- each call_tir of main compiled by TVM to OpenCL C and launched (lower_and_schedule: LOWER)
def compile_and_run(x, scheduled=True):
    mod = lower_and_schedule(tvm.target.Target(TARGET))
    _stage("codegen")
    funcs = {gv.name_hint: f for gv, f in mod.functions.items()}
    sources = {name: device_source(tvm.IRModule({"main": funcs[name].with_attr("global_symbol", "main")}))
               for name in CALLED}
    _stage("build")
    device = OpenCL(list(sources.values()))
    _stage("run")
    main = mod["main"]
    env = {p: x[p.name] for p in main.params}
    for block in main.body.blocks:
        for b in block.bindings:
            v = b.value
            if getattr(getattr(v, "op", None), "name", "") == "relax.call_tir":
                name = v.args[0].name_hint
                args = [np.ascontiguousarray(env[a]).copy() for a in v.args[1].fields]
                out = _poison(tuple(int(s) for s in b.var.ty.shape), str(b.var.ty.dtype))
                plan = LAUNCHES[name]
                env[b.var] = device.run(sources[name], plan, [*args, out],
                                        [p["name"] for p in plan["params"]])[-1]
            else:
                env[b.var] = _value(v, env)
    results = _flatten(_value(main.body.body, env))
    return dict(zip(OUTPUTS, results))


def _value(expr, env):
    if isinstance(expr, relax.Var) and expr in env:
        return env[expr]
    if isinstance(expr, relax.Tuple):
        return tuple(_value(f, env) for f in expr.fields)
    if isinstance(expr, relax.TupleGetItem):
        return _value(expr.tuple_value, env)[expr.index]
    raise RuntimeError(f"cannot execute {type(expr).__name__} of main")


def _flatten(x):
    return [y for item in x for y in _flatten(item)] if isinstance(x, tuple) else [x]
'''
