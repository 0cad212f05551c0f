"""transform_layout on parameters: the harness lays inputs out anew and reads outputs back."""

import numpy as np
import pytest

from fuzzharness.core.case import Case
from fuzzharness.core.tvm_support import trace_to_json
from fuzzharness.core.verdict import Status
from fuzzharness.execution.relayout import Layout, param_layouts
from fuzzharness.execution.stages import execute
from fuzzharness.generators.workloads import workloads

PARAMS = {"M": 5, "N": 6, "K": 19, "dtype": "float32"}


def index_map(fn, ndim):
    from tvm.tirx import IndexMap

    return IndexMap.from_func(fn, ndim=ndim, index_dtype="int32")


def relaid_matmul_trace():
    """A split with padding (19 = 2·8 + 3) then a fuse on input A; output C transposed and
    split with padding (6 = 4 + 2)."""
    from tvm import s_tir, tirx

    func = workloads["matmul"].prim_func(PARAMS)
    sch = s_tir.Schedule(func)
    block = sch.get_sblock("C")
    zero = tirx.const(0, "float32")
    sch.transform_layout(block, ("read", 0), index_map(lambda i, k: [k // 8, i, k % 8], 2),
                         pad_value=zero)
    sch.transform_layout(block, ("read", 0), index_map(lambda a, b, c: [b, a * 8 + c], 3))
    sch.transform_layout(block, ("write", 0), index_map(lambda i, j: [j // 4, i, j % 4], 2),
                         pad_value=zero)
    return func, sch


def test_layouts_are_read_from_the_trace():
    func, sch = relaid_matmul_trace()
    layouts = param_layouts(func, trace_to_json(sch.trace))
    assert set(layouts) == {"A", "C"}
    kernel = {str(p.name): tuple(int(s) for s in p.shape) for p in sch.mod["main"].params}
    assert layouts["A"].kernel_shape() == kernel["A"] == (5, 24)
    assert layouts["C"].kernel_shape() == kernel["C"] == (2, 5, 4)
    x = np.arange(5 * 19, dtype=np.float32).reshape(5, 19)
    a = layouts["A"].to_kernel(x)
    assert np.array_equal(layouts["A"].from_kernel(a), x)
    assert layouts["A"].padding_mask().sum() == 5 * (24 - 19) and not a[layouts["A"].padding_mask()].any()


@pytest.mark.parametrize("dist, oracle", [("uniform", "bound"), ("small_ints", "exact")])
def test_relaid_out_parameters_run_and_pass(dist, oracle):
    func, sch = relaid_matmul_trace()
    case = Case(workload={"name": "matmul", "params": PARAMS},
                inputs={"distribution": dist, "seed": 5},
                schedule={"source": "test", "trace": trace_to_json(sch.trace)},
                oracle={"mode": oracle})
    out = execute(case)
    assert out.verdict.status is Status.PASS, out.verdict.line()
    assert out.outputs["C"].shape == (5, 6)  # back in the reference layout


def test_unfilled_output_padding_is_a_wrong_result():
    """TVM promises the pad value in a padded output; a kernel that leaves the poison there
    fails.  (Simulated on the arrays: the layout check, not TVM, is under test here.)"""
    from fuzzharness.execution.relayout import unfilled_padding

    layout = Layout((2, 6), [index_map(lambda i, j: [j // 4, i, j % 4], 2)])
    y = layout.to_kernel(np.ones((2, 6), dtype=np.float32))
    assert unfilled_padding({"C": layout}, "C", y) == 0
    y[layout.padding_mask()] = np.nan
    assert unfilled_padding({"C": layout}, "C", y) == 2 * 2
