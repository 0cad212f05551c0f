"""The worker's shortcuts keep the guarantee that the stored case is what ran.

Throughput itself is measured by ``benchmarks/throughput.py`` (printed numbers, not a timed
test).  What is tested here is the safety of the shortcut it motivated: TVMScript parses
are cached (``tvm_support.parse_prim_func``), so generation and the replay of the stored
trace share one PrimFunc — which is only sound if scheduling never mutates it.
"""

import tvm_ffi

from fuzzharness.core.tvm_support import parse_prim_func
from fuzzharness.engine.tasks import run_task
from fuzzharness.generators.cases import GenSettings, generate_case
from fuzzharness.generators.workloads import workloads


def test_a_case_parses_its_program_once_and_scheduling_never_mutates_it():
    gen = GenSettings(graph_fraction=0.0)  # single-PrimFunc cases: graph cases parse no TVMScript
    checked = 0
    for i in range(14):
        try:
            case = generate_case(9, i, gen)  # the stream a campaign of seed 9 runs
        except Exception:  # noqa: BLE001 - TVM failing while the schedule is drawn: no case
            continue
        checked += 1
        source = workloads[case.workload_name].source(case.params)
        parse_prim_func.cache_clear()
        sent = []
        run_task({"task": i, "generate": {"seed": 9, "index": i, "settings": gen.to_dict()}},
                 sent.append)
        info = parse_prim_func.cache_info()
        assert info.misses == 1 and info.hits >= 1, (i, info)  # generation parsed, replay reused
        cached = parse_prim_func(source)
        fresh = parse_prim_func.__wrapped__(source)
        assert tvm_ffi.structural_equal(cached, fresh), f"case {i}: scheduling mutated the cached PrimFunc"
        assert cached.script() == fresh.script()
        # the case the worker reported is the generated case: what is stored is what ran
        (reported,) = [m["case"] for m in sent if "case" in m]
        assert reported == case.to_dict()
    assert checked >= 8


def test_the_parse_shortcut_gives_the_stock_parsers_prim_func_and_its_errors():
    """``parse_prim_func`` skips the stock ``T.prim_func`` decorator (tvm_support docstring):
    for every workload's programs the result must be the stock parser's, and a program the
    stock parser refuses must still be refused."""
    import pytest
    import tvm
    from tvm.script import tirx as T

    from fuzzharness.generators import draw as draws
    from fuzzharness.generators.graphs.spec import GRAPH_WORKLOAD
    from fuzzharness.generators.workloads import GenOptions

    def stock(text):
        return tvm.script.from_source(text, extra_vars={"T": T})

    names = [n for n in workloads.names() if n != GRAPH_WORKLOAD]
    assert len(names) >= 10
    for name in names:
        for i in range(2):
            params = workloads[name].draw_params(draws.for_case(0, i, "parse"), GenOptions())
            text = workloads[name].source(params)
            fast = parse_prim_func.__wrapped__(text)
            slow = stock(text)
            assert tvm_ffi.structural_equal(fast, slow, map_free_vars=False), (name, params)
            assert fast.script() == slow.script(), (name, params)

    # the well-formedness check still runs: a loop variable used inside a block
    bad = '''
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.sblock("B"):
            vi = T.axis.spatial(4, i)
            B[i] = A[vi]
'''
    for parse in (stock, parse_prim_func.__wrapped__):
        with pytest.raises(Exception, match="not well-formed"):
            parse(bad)
