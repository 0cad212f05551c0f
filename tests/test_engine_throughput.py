"""The worker's shortcuts keep the guarantee that the stored case is what ran.

Throughput itself is measured by ``benchmarks/throughput.py`` (printed numbers, not a timed
test).  What is tested here is the safety of the shortcut it motivated: TVMScript parses
are cached (``tvm_support.parse_prim_func``), so generation and the replay of the stored
trace share one PrimFunc — which is only sound if scheduling never mutates it.
"""

import tvm_ffi

from fuzzharness.engine.tasks import run_task
from fuzzharness.tvm_support import parse_prim_func
from generators.cases import GenSettings, generate_case
from generators.workloads import workloads


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
