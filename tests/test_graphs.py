"""Whole-graph cases: random Relax graphs through TVM's pipeline, judged per element.

Everything runs the real TVM (legalization, fusion, VM, the OpenCL runtime for Adreno).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tests.plugins.wrong_graph_ops  # noqa: F401  (registers test_wrong_relu, weight 0)
from fuzzharness.core.case import Case
from fuzzharness.core.verdict import Stage, Status
from fuzzharness.execution.stages import execute
from fuzzharness.generators import draw as draws
from fuzzharness.generators.graphs.ops import DrawContext, graph_ops
from fuzzharness.generators.graphs.spec import GRAPH_WORKLOAD, Graph, InvalidGraph
from tests.conftest import need, repro_of

REQUIRED_OPS = {"conv2d", "matmul", "add", "relu", "gelu", "softmax", "layer_norm",
                "max_pool2d", "avg_pool2d", "reshape", "transpose", "layout_transform", "concat"}
DRAWN_OPS = sorted(n for n, op in graph_ops.items() if op.weight > 0)


def graph_case(graph: dict | Graph, *, source="graph:default", layout=None, functions=None,
               distribution="uniform", seed=1, oracle="bound", target=None) -> Case:
    params = graph.to_dict() if isinstance(graph, Graph) else graph
    return Case(workload={"name": GRAPH_WORKLOAD, "params": params},
                inputs={"distribution": distribution, "seed": seed},
                schedule={"source": source, "trace": None, "layout": layout,
                          "functions": functions or {}},
                target=target or {"kind": "llvm"}, oracle={"mode": oracle})


def single_op_graph(op: str, dtype: str, seed: int) -> Graph | None:
    """One node of ``op`` on one input, drawn by the op itself (its attributes vary by seed)."""
    shape = [2, 8, 9, 7] if op in ("conv2d", "max_pool2d", "avg_pool2d") else [3, 10, 8]
    data = draws.for_case(seed, 0, purpose=f"graph-test-{op}")
    ctx = DrawContext(data, dtype, [], [], {})
    ctx.new_input("x", shape, data=True)
    node = graph_ops[op].draw(ctx)
    if node is None:
        return None
    ctx.nodes.append(node)
    ctx.shapes[node.name] = graph_ops[op].infer([ctx.shapes[a] for a in node.args], node.attrs)
    g = Graph(dtype, ctx.inputs, ctx.nodes, [node.name])
    g.shapes()
    return g


# -- the model ---------------------------------------------------------------------------------
def test_every_required_op_is_registered_and_drawn():
    assert REQUIRED_OPS <= set(DRAWN_OPS)


def test_shapes_follow_references_and_invalid_graphs_are_refused():
    g = Graph.from_dict({
        "dtype": "float32",
        "inputs": [{"name": "x0", "shape": [1, 4, 6, 6]},
                   {"name": "w0", "shape": [8, ["x0", 1, 2], 3, 3]},
                   {"name": "b0", "shape": [1, ["n0", 1], 1, 1]}],
        "nodes": [{"name": "n0", "op": "conv2d", "args": ["x0", "w0"],
                   "attrs": {"layout": "NCHW", "strides": [1, 1], "padding": [1, 1, 1, 1],
                             "dilation": [1, 1], "groups": 2, "acc": None}},
                  {"name": "n1", "op": "add", "args": ["n0", "b0"], "attrs": {}}],
        "outputs": ["n1"]})
    shapes = g.shapes()
    assert shapes["w0"] == (8, 2, 3, 3) and shapes["b0"] == (1, 8, 1, 1)
    assert shapes["n1"] == (1, 8, 6, 6)
    bad = g.to_dict()
    bad["inputs"][0]["shape"][1] = 5  # 5 channels do not split into 2 groups
    with pytest.raises(InvalidGraph):
        Graph.from_dict(bad).shapes()
    forward = g.to_dict()
    forward["inputs"][2]["shape"][1] = ["n1", 1]  # refers to a later value
    with pytest.raises(InvalidGraph):
        Graph.from_dict(forward).shapes()
    cut = g.cut("n0")
    assert [n.name for n in cut.nodes] == ["n1"] and "w0" not in cut.input_names()
    assert cut.shapes()["n1"] == (1, 8, 6, 6)


def test_generation_is_deterministic_and_valid():
    from fuzzharness.generators.cases import GenSettings, generate_case

    s = GenSettings(workloads=(GRAPH_WORKLOAD,), metaschedule_fraction=0.0)
    a = [generate_case(3, i, s).to_dict() for i in range(6)]
    b = [generate_case(3, i, s).to_dict() for i in range(6)]
    assert a == b
    for d in a:
        Graph.from_dict(d["workload"]["params"]).shapes()
    assert len({d["id"] for d in a}) == 6


@pytest.mark.slow
def test_default_campaigns_mix_tir_and_graph_cases():
    from fuzzharness.generators.cases import GenSettings, generate_case

    kinds = []
    for i in range(40):
        try:
            kinds.append(generate_case(4, i, GenSettings()).workload_name == GRAPH_WORKLOAD)
        except Exception:  # noqa: BLE001 - TVM raising while a schedule is drawn: a finding
            continue
    assert 2 <= sum(kinds) <= 20 and not all(kinds)
    off = [generate_case(4, i, GenSettings(graph_fraction=0.0)).workload_name
           for i in range(8)]
    assert GRAPH_WORKLOAD not in off


# -- one graph per op, both dtypes, against the float64 reference -------------------------
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("op", DRAWN_OPS)
def test_one_graph_per_op_passes(op, dtype):
    graphs = [g for s in range(6) if (g := single_op_graph(op, dtype, s)) is not None][:2]
    assert graphs, f"{op}: no single-op graph drawn"
    for g in graphs:
        for dist in ("uniform", "cancellation"):
            v = execute(graph_case(g, distribution=dist)).verdict
            assert v.status is Status.PASS, f"{json.dumps(g.to_dict())}: {v.line()}"


def test_legalization_accumulates_where_the_reference_says():
    """The reference's error model assumes TVM's accumulation dtypes; read them from the TIR."""
    from fuzzharness.core.relax_pipeline import legalize, prim_functions
    from fuzzharness.generators.graphs.program import build_module
    from fuzzharness.oracles.program import Numerics

    expect = {"conv2d": None, "matmul": None, "softmax": None, "avg_pool2d": None,
              "max_pool2d": None, "layer_norm": "float32"}  # None: the graph dtype (or acc)
    for op, acc in expect.items():
        for seed in range(4):
            g = single_op_graph(op, "float16", seed)
            if g is None:
                continue
            want = acc or g.nodes[0].attrs.get("acc") or "float16"
            mod = legalize(build_module(g), {"kind": "llvm"}, None)
            reductions = [b for f in prim_functions(mod).values()
                          for b in Numerics(f).reductions()]
            assert reductions, op
            for b in reductions:
                if "max" in b.name:  # max reductions are exact in any dtype
                    continue
                assert b.write_dtypes[0] == want, (op, b)


def test_exact_integer_mode_is_bitwise():
    g = single_op_graph("conv2d", "float16", 0)
    from fuzzharness.generators.graphs.reference import int_max

    assert int_max(g) > 0
    v = execute(graph_case(g, distribution="small_ints", oracle="exact")).verdict
    assert v.status is Status.PASS and v.ratio == 0.0


# -- a wrong program is caught, minimized and reproduced -------------------------------------------
BIG_WRONG = {
    "dtype": "float32",
    "inputs": [{"name": "x0", "shape": [2, 6, 11, 9]},
               {"name": "w0", "shape": [4, ["x0", 1], 3, 3]},
               {"name": "b0", "shape": [1, ["n0", 1], 1, 1]}],
    "nodes": [{"name": "n0", "op": "conv2d", "args": ["x0", "w0"],
               "attrs": {"layout": "NCHW", "strides": [1, 1], "padding": [1, 1, 1, 1],
                         "dilation": [1, 1], "groups": 1, "acc": None}},
              {"name": "n1", "op": "add", "args": ["n0", "b0"], "attrs": {}},
              {"name": "n2", "op": "test_wrong_relu", "args": ["n1"], "attrs": {}},
              {"name": "n3", "op": "max_pool2d", "args": ["n2"],
               "attrs": {"layout": "NCHW", "pool_size": [2, 2], "strides": 2, "padding": 0,
                         "count_include_pad": False}},
              {"name": "n4", "op": "softmax", "args": ["n1"], "attrs": {"axis": 1}}],
    "outputs": ["n3", "n4"]}


def test_wrong_graph_is_caught():
    v = execute(graph_case(BIG_WRONG)).verdict
    assert v.status is Status.WRONG_RESULT and v.worst_output == "n3", v.line()


def test_minimization_keeps_the_failure_and_shrinks_the_graph():
    from fuzzharness.buckets.signatures import signature
    from fuzzharness.kinds.relax import minimize

    case = graph_case(BIG_WRONG)
    target = signature(case.to_dict(), execute(case).verdict)

    def first(cands):
        for c in cands:
            v = execute(c).verdict
            s = signature(c.to_dict(), v)
            if s is not None and s.symptom == target.symptom and \
                    set(s.primitives) <= set(target.primitives):
                return c
        return None

    small = minimize.minimize(case, first)
    g = Graph.from_dict(small.params)
    assert [n.op for n in g.nodes] == ["test_wrong_relu"]
    (x,) = g.input_names()
    assert np.prod(g.shapes()[x]) <= 8  # from 2x6x11x9 (a few elements: one must be negative)
    assert execute(small).verdict.status is Status.WRONG_RESULT
    assert small.origin["minimized_from"] == case.id


@pytest.mark.slow
def test_repro_script_reproduces_and_says_fixed_when_fixed(tmp_path):
    from fuzzharness.core.kinds import kind_of
    from fuzzharness.repro.verify import run_script

    case = graph_case(BIG_WRONG)
    verdict = execute(case).verdict
    script = kind_of(case).write_script(case, verdict)
    (tmp_path / "repro.py").write_text(script.text)
    run = run_script(tmp_path / "repro.py")
    assert run.exit_code == 1, run.output
    assert "R.nn.leakyrelu" in script.text and "import generators" not in script.text
    fixed = script.text.replace("R.nn.leakyrelu(n1, alpha=0.25)", "R.nn.relu(n1)")
    assert fixed != script.text
    (tmp_path / "fixed.py").write_text(fixed)
    again = run_script(tmp_path / "fixed.py")
    assert again.exit_code == 0, again.output


@pytest.mark.slow
def test_minimize_command_shrinks_a_graph_case_into_a_verified_relax_repro(tmp_path):
    """The campaign minimizer on a graph case: per-function trace ddmin, then the graph
    passes; the repro is Relax TVMScript, verified in a fresh process; the issue says Relax."""
    import copy

    from tests.conftest import ROOT, run_cli

    g = copy.deepcopy(MODEL)
    g["nodes"][2]["op"] = "test_wrong_relu"  # fused with the conv2d and the bias add
    case = graph_case(g, source="graph:random", functions=_drawn_schedules_for(g))
    assert sum(len(e["trace"][0]) for e in case.schedule["functions"].values()) >= 5
    (tmp_path / "case.json").write_text(case.to_json())
    env = dict(os.environ, FUZZHARNESS_PLUGINS="tests.plugins.wrong_graph_ops",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = run_cli("minimize", tmp_path / "case.json", "--budget", "60", "--no-triage",
                "--workers", "2", "--out", tmp_path / "repros", env=env)
    assert r.returncode == 1 and "1 verified repro" in r.stdout, r.stdout + r.stderr
    (d,) = (tmp_path / "repros").iterdir()
    small = Case.from_json((d / "case.json").read_text())
    assert [n["op"] for n in small.params["nodes"]] == ["test_wrong_relu"]
    assert not small.schedule.get("functions")  # the traces have nothing to do with the bug
    assert small.inputs["distribution"] == "tiny_ints" and small.oracle["mode"] == "exact"
    script = (d / "repro.py").read_text()
    assert "@I.ir_module" in script and "R.nn.leakyrelu" in script
    issue = (d / "issue.md").read_text()
    assert issue.splitlines()[1].startswith("# [Bug] [Relax] Wrong result"), issue[:300]
    assert "R.nn.leakyrelu" in issue and "lowering passes: not probed" in issue
    import re

    m = re.search(r"\(graph nodes \+ trace instructions (\d+) → 1 in", issue)
    assert m and int(m.group(1)) >= 11, issue  # 6 nodes + ≥ 5 instructions → 1 node


def _drawn_schedules_for(graph: dict) -> dict:
    from fuzzharness.generators.cases import GenSettings
    from fuzzharness.generators.graphs.cases import draw_function_schedules

    data = draws.for_case(2, 0, purpose="graph-test-schedules")
    functions, _ = draw_function_schedules(Graph.from_dict(graph), {"kind": "llvm"}, None,
                                           "graph:random", data, GenSettings())
    return functions


# -- compilation modes -----------------------------------------------------------------------------
MODEL = {
    "dtype": "float32",
    "inputs": [{"name": "x0", "shape": [1, 8, 10, 10]},
               {"name": "w0", "shape": [8, ["x0", 1], 3, 3]},
               {"name": "b0", "shape": [1, ["n0", 1], 1, 1]},
               {"name": "g0", "shape": [["n3", 3]]},
               {"name": "e0", "shape": [["n3", 3]]}],
    "nodes": [{"name": "n0", "op": "conv2d", "args": ["x0", "w0"],
               "attrs": {"layout": "NCHW", "strides": [1, 1], "padding": [1, 1, 1, 1],
                         "dilation": [1, 1], "groups": 1, "acc": None}},
              {"name": "n1", "op": "add", "args": ["n0", "b0"], "attrs": {}},
              {"name": "n2", "op": "relu", "args": ["n1"], "attrs": {}},
              {"name": "n3", "op": "avg_pool2d", "args": ["n2"],
               "attrs": {"layout": "NCHW", "pool_size": [2, 2], "strides": 2, "padding": 0,
                         "count_include_pad": True}},
              {"name": "n4", "op": "layer_norm", "args": ["n3", "g0", "e0"],
               "attrs": {"axes": [3], "epsilon": 1e-05}},
              {"name": "n5", "op": "softmax", "args": ["n4"], "attrs": {"axis": -1}}],
    "outputs": ["n5"]}


@pytest.mark.parametrize("source", ["graph:default", "graph:dlight"])
@pytest.mark.parametrize("layout", [None, "NHWC", "NHWC-HWIO"])
def test_pipeline_modes_pass(source, layout):
    out = execute(graph_case(MODEL, source=source, layout=layout))
    assert out.verdict.status is Status.PASS, out.verdict.line()
    text = out.scheduled.script()
    if layout:
        assert "conv2d_nhwc" in text  # the convolution was converted
    if source == "graph:dlight":
        assert "tirx.is_scheduled" in text


def test_nchw4c_conversion_is_a_known_tvm_bug_on_llvm():
    """ConvertLayout to NCHW4c leaves conv2d unlegalized on llvm: a compile error TVM should
    not make (known_bugs.toml ``relax-nchwc-conv2d-not-legalized``); the generator draws it
    only with known_bug_sites."""
    v = execute(graph_case(MODEL, layout="NCHW4c")).verdict
    assert v.status is Status.COMPILE_ERROR and "CodeGenVM cannot emit" in v.message, v.line()


def _drawn_schedules(source: str, seed: int):
    from fuzzharness.generators.cases import GenSettings
    from fuzzharness.generators.graphs.cases import draw_function_schedules

    data = draws.for_case(seed, 0, purpose="graph-test-schedules")
    return draw_function_schedules(Graph.from_dict(MODEL), {"kind": "llvm"}, None, source,
                                   data, GenSettings())


@pytest.mark.parametrize("source", ["graph:random", "graph:metaschedule"])
def test_per_function_schedules_replay_and_pass(source):
    from fuzzharness.core.relax_pipeline import legalize, prim_functions
    from fuzzharness.core.tvm_support import structural_equal
    from fuzzharness.generators.graphs.program import build_module

    functions, steps = _drawn_schedules(source, 2)
    assert functions and any(s["outcome"] == "accepted" for s in steps)
    case = graph_case(MODEL, source=source, functions=functions)
    out = execute(case)
    assert out.verdict.status is Status.PASS, out.verdict.line()
    plain = prim_functions(legalize(build_module(Graph.from_dict(MODEL)), {"kind": "llvm"}, None))
    changed = [n for n, f in prim_functions(out.scheduled).items()
               if n in functions and not structural_equal(f, plain[n])]
    assert changed, "the stored traces must change the functions they were drawn for"
    # a trace meeting another function than it was drawn for is refused, not blamed on TVM
    name = next(iter(functions))
    stale = dict(functions, **{name: dict(functions[name], fingerprint="0" * 16)})
    v = execute(graph_case(MODEL, source=source, functions=stale)).verdict
    assert v.status is Status.HARNESS_ERROR and "another function" in v.message


def _opencl_images() -> str | None:
    from fuzzharness.backends.opencl import choose_device

    found = choose_device(False, True)
    return found if isinstance(found, str) else None


ADRENO = {"kind": "opencl", "device": "adreno"}
POOL = {"dtype": "float32",
        "inputs": [{"name": "x0", "shape": [1, 8, 10, 10]}, {"name": "b0", "shape": [1, ["x0", 1], 1, 1]}],
        "nodes": [{"name": "n0", "op": "max_pool2d", "args": ["x0"],
                   "attrs": {"layout": "NCHW", "pool_size": [2, 2], "strides": 2, "padding": 0,
                             "count_include_pad": True}},
                  {"name": "n1", "op": "add", "args": ["n0", "b0"], "attrs": {}},
                  {"name": "n2", "op": "sigmoid", "args": ["n1"], "attrs": {}}],
        "outputs": ["n2"]}
CONV1X1 = {"dtype": "float32",
           "inputs": [{"name": "x0", "shape": [1, 4, 1, 1]}, {"name": "w0", "shape": [4, ["x0", 1], 1, 1]}],
           "nodes": [{"name": "n0", "op": "conv2d", "args": ["x0", "w0"],
                      "attrs": {"layout": "NCHW", "strides": [1, 1], "padding": [0, 0, 0, 0],
                                "dilation": [1, 1], "groups": 1, "acc": None}}],
           "outputs": ["n0"]}


def test_adreno_pipeline_runs_on_the_opencl_runtime():
    need(_opencl_images())
    v = execute(graph_case(POOL, target=ADRENO)).verdict
    assert v.status is Status.PASS, v.line()


def test_adreno_texture_scopes_reach_the_opencl_kernels():
    need(_opencl_images())
    from fuzzharness.backends import backends
    from fuzzharness.core.relax_pipeline import graph_target, legalize
    from fuzzharness.execution.relax_run import CallInterpreter
    from fuzzharness.generators.graphs.program import build_module

    target = graph_target(ADRENO)
    assert "texture" in target["keys"]
    mod = legalize(build_module(Graph.from_dict(CONV1X1)), target, None)
    interp = CallInterpreter(mod, backends["opencl"], target, {})
    interp.lower()
    interp.codegen()
    assert interp.build() is None  # PoCL builds every kernel, images included
    scopes = {p.scope for code in interp.code.values() for p in code.plan.params}
    assert "global.texture-weight" in scopes, scopes


@pytest.mark.xfail(strict=True, reason="TVM bug adreno-texture-store-scalarized (known_bugs.toml): "
                   "a 4-lane texture store under a thread predicate is scalarized and each lane "
                   "writes the whole pixel")
def test_adreno_texture_conv2d_is_correct():
    need(_opencl_images())
    v = execute(graph_case(CONV1X1, target=ADRENO)).verdict
    assert v.status is Status.PASS, v.line()


def test_host_code_computing_on_device_memory_is_blamed_on_tvm():
    """dlight's Adreno conv2d rule leaves a gelu epilogue bound to no thread, and lowering
    puts those loops in the host function, storing into device buffers (a GPU's host cannot
    address them): a compile_error finding at codegen, not a harness error.  The conv2d
    alone has every block in a kernel: no such error."""
    conv = {**CONV1X1["nodes"][0], "attrs": {**CONV1X1["nodes"][0]["attrs"], "acc": "float32"}}
    gelu = {"dtype": "float16", "inputs": [{"name": "x0", "shape": [1, 4, 2, 2]},
                                          {"name": "w0", "shape": [4, 4, 1, 1]}],
            "nodes": [conv, {"name": "n1", "op": "gelu", "args": ["n0"], "attrs": {}}],
            "outputs": ["n1"]}
    v = execute(graph_case(gelu, target=ADRENO)).verdict
    assert (v.status, v.stage) == (Status.COMPILE_ERROR, Stage.CODEGEN), v.line()
    assert "host function computes on device memory" in v.message and v.is_finding
    v = execute(graph_case(CONV1X1, target=ADRENO)).verdict
    assert "device memory" not in v.message and v.status is not Status.HARNESS_ERROR, v.line()


# -- bounds ------------------------------------------------------------------------------------------
def test_bilinear_bound_covers_exact_operands_like_the_dot_product_rule():
    from fuzzharness.oracles import bounds
    from fuzzharness.oracles.bounds import Approx

    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (5, 40)), rng.uniform(-1, 1, (40, 3))
    for dt in ("float16", "float32"):
        x = Approx.exact(a.astype(dt).astype(np.float64), dt)
        y = Approx.exact(b.astype(dt).astype(np.float64), dt)
        got = bounds.bilinear(np.matmul, x, y, 40, dt)
        dot = bounds.accumulate(x.value @ y.value, np.abs(x.value) @ np.abs(y.value), 40,
                                acc_dtype=dt, products=True)
        assert np.allclose(got.value, dot.value) and np.all(got.err <= dot.err)
        assert np.all(got.err > 0)


def test_erf_bound_holds_for_tvms_erf():
    """TVM lowers erf to libm's erff: every float16 value and a float32 sample, through TVM."""
    import tvm
    from tvm.script import tirx as T

    from fuzzharness.oracles import bounds
    from fuzzharness.oracles.bounds import Approx

    rng = np.random.default_rng(0)
    f16 = np.arange(2**16, dtype=np.uint16).view(np.float16)
    x = np.concatenate([f16[np.isfinite(f16)].astype(np.float32),
                        rng.uniform(-5, 5, 50_000).astype(np.float32),
                        (np.exp2(rng.uniform(-140, 3, 50_000)) *
                         rng.choice([-1, 1], 50_000)).astype(np.float32)])
    n = x.size
    src = f'''
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({n},), "float32"), B: T.Buffer(({n},), "float32")):
    for i in range({n}):
        with T.sblock("b"):
            vi = T.axis.remap("S", [i])
            B[vi] = T.erf(A[vi])
'''
    lib = tvm.compile(tvm.IRModule({"main": tvm.script.from_source(src, extra_vars={"T": T})}),
                      target="llvm")
    out = tvm.runtime.tensor(np.zeros(n, np.float32))
    lib["main"](tvm.runtime.tensor(x), out)
    e = bounds.erf(Approx.exact(x.astype(np.float64), "float32"), "float32")
    err = np.abs(out.numpy().astype(np.float64) - e.value)
    assert np.all(err <= e.err), float(np.max(err / e.err))


# -- schedule generation on Relax-legalized functions (known TVM bugs avoided) ---------------------
def test_merge_is_proposed_producer_first_unless_known_bug_sites():
    from fuzzharness.core.relax_pipeline import legalize, prim_functions
    from fuzzharness.core.tvm_support import is_schedule_error
    from fuzzharness.generators.graphs.program import build_module
    from fuzzharness.generators.schedules.base import ScheduleOptions, ScheduleState
    from fuzzharness.generators.schedules.merge import Merge

    g = Graph.from_dict({"dtype": "float32", "inputs": [{"name": "x0", "shape": [4, 6]}],
                         "nodes": [{"name": "n0", "op": "relu", "args": ["x0"], "attrs": {}},
                                   {"name": "n1", "op": "min", "args": ["x0", "n0"], "attrs": {}}],
                         "outputs": ["n1"]})
    (func,) = prim_functions(legalize(build_module(g), {"kind": "llvm"}, None)).values()
    from tvm import s_tir

    firsts = set()
    for known in (False, True):
        for seed in range(12):
            state = ScheduleState(s_tir.Schedule(func), draws.for_case(seed, 0, "merge-test"),
                                  ScheduleOptions(known_bug_sites=known))
            thunk = Merge().propose(state)
            try:
                thunk()
            except Exception as e:  # noqa: BLE001 - a refused depth: TVM's ScheduleError
                assert is_schedule_error(e)
                continue
            merged = state.sch.mod["main"].script()
            # the producer block ("compute", relu) must come first inside the merged loop
            firsts.add((known, merged.index('T.sblock("compute")') < merged.index('T.sblock("T_minimum")')))
    assert (False, False) not in firsts  # never consumer-first without known_bug_sites
    assert (True, False) in firsts  # the known bug's site is still reachable when asked


def test_cli_rejects_a_bad_graph_fraction(tmp_path):
    from tests.conftest import run_cli

    r = run_cli("run", "--graph-fraction", "1.5", "--max-cases", "1", "--out", tmp_path / "x")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert "--graph-fraction: must be between 0 and 1" in r.stderr


if os.environ.get("FUZZHARNESS_GRAPH_SWEEP"):  # heavy: benchmarks/graph_false_alarms.py
    def test_false_alarm_sweep():
        import subprocess
        import sys

        r = subprocess.run([sys.executable, "benchmarks/graph_false_alarms.py", "--cases",
                            os.environ["FUZZHARNESS_GRAPH_SWEEP"], "--quiet"], text=True,
                           capture_output=True)
        print(r.stdout)


@pytest.mark.slow
def test_an_adreno_graph_bug_gets_a_standalone_script_that_reproduces(tmp_path):
    """The Relax passes as TVM runs them, then each call_tir compiled to OpenCL C by TVM in the
    script and launched through pyopencl: the texture conv2d bug reproduces alone."""
    need(_opencl_images())
    from fuzzharness.repro.verify import foreign_imports

    case = graph_case(CONV1X1, target=ADRENO)
    verdict = execute(case).verdict
    assert verdict.status is Status.WRONG_RESULT, verdict.line()
    out = repro_of(tmp_path / "conv", case, verdict)
    assert out.reproduced, out.runs[-1].output
    text = (out.dir / "repro.py").read_text()
    assert foreign_imports(text) == [] and "LAUNCHES = {" in text and "global.texture" in text
    assert "farther from the float64 reference" in text and "RESULT: the bug reproduces" in out.runs[0].output


@pytest.mark.slow
def test_an_adreno_graph_script_of_a_correct_graph_says_fixed(tmp_path):
    """The other side: a graph the Adreno pipeline compiles correctly, written as if it had
    given a wrong result — the script judges its output correct (exit 0)."""
    need(_opencl_images())
    import dataclasses

    from fuzzharness.core.tvm_support import versions
    from fuzzharness.core.verdict import Stage
    from fuzzharness.kinds.relax.script import write_script
    from fuzzharness.repro.verify import run_script

    case = graph_case(POOL, target=ADRENO)
    verdict = execute(case).verdict
    assert verdict.status is Status.PASS, verdict.line()
    wrong = dataclasses.replace(verdict, status=Status.WRONG_RESULT, stage=Stage.VERIFY)
    (tmp_path / "repro.py").write_text(write_script(case, wrong, versions=versions()).text)
    run = run_script(tmp_path / "repro.py")
    assert run.exit_code == 0 and "RESULT: fixed" in run.output, run.output
