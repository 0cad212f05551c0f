"""The feature census (fuzzharness/execution/census.py): each feature is found where a schedule puts it
and absent from the same program unscheduled; and the coverage table / summary carry it."""

from __future__ import annotations

import json

from fuzzharness.execution.census import GOALS, census

MATMUL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 12), "float16"), B: T.Buffer((12, 24), "float16"),
         C: T.Buffer((16, 24), "float32")):
    for i, j, k in T.grid(16, 24, 12):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + T.Cast("float32", A[vi, vk]) * T.Cast("float32", B[vk, vj])
"""

ADD = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4, 24), "float16"), B: T.Buffer((4, 24), "float16")):
    for i, j in T.grid(4, 24):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float16(1)
"""


def features(src: str, schedule=None, target=None) -> list[str]:
    """Census of ``src`` after ``schedule(sch)``, lowered by the llvm backend for real."""
    from tvm import s_tir

    from fuzzharness.backends import backends
    from fuzzharness.core.tvm_support import parse_prim_func

    sch = s_tir.Schedule(parse_prim_func(src))
    if schedule is not None:
        schedule(sch)
    target = target or {"kind": "llvm"}
    lowered = backends[target["kind"]].lower(sch.mod, target, {})
    return census(sch.mod, lowered)


def test_unscheduled_programs_have_only_their_dtype_facts():
    assert features(MATMUL) == ["accumulate:float16->float32"]
    assert features(ADD) == []


def test_vector_store_of_eight_fp16_lanes():
    def vec8(sch):
        _, j = sch.get_loops(sch.get_sblock("B"))
        _, ji = sch.split(j, [None, 8])
        sch.vectorize(ji)

    assert "vector_store:float16x8" in features(ADD, vec8)


def test_unroll_extents_odd_and_even():
    def unroll(extent):
        def apply(sch):
            i, _, k = sch.get_loops(sch.get_sblock("C"))
            _, ki = sch.split(k, [None, extent])
            sch.unroll(ki)
        return apply

    assert {"unroll:odd"} == {f for f in features(MATMUL, unroll(3)) if f.startswith("unroll")}
    assert {"unroll:even"} == {f for f in features(MATMUL, unroll(4)) if f.startswith("unroll")}


def test_predicates_by_block_role():
    def consumer(sch):  # 12 split by 5: a predicated tail on the computing block
        *_, k = sch.get_loops(sch.get_sblock("C"))
        sch.split(k, [None, 5])

    def producer(sch):  # the staged copy of A under a non-dividing split
        blk = sch.get_sblock("C")
        i, _, _ = sch.get_loops(blk)
        io, _ = sch.split(i, [None, 5])
        cache = sch.cache_read(blk, 0, "local")
        sch.compute_at(cache, io)

    def write_back(sch):  # cache_write's copy back into C, its loop split by 5
        blk = sch.get_sblock("C")
        sch.cache_write(blk, 0, "local")
        i, _ = sch.get_loops(sch.get_sblock("C_local"))
        sch.split(i, [None, 5])

    assert "predicate:consumer" in features(MATMUL, consumer)
    got = features(MATMUL, producer)
    assert "predicate:producer" in got and "scope:local" in got
    assert "predicate:write_back" in features(MATMUL, write_back)


def test_reduction_under_parallel_and_vectorized_loops():
    def both(sch):
        blk = sch.get_sblock("C")
        i, j, k = sch.get_loops(blk)
        sch.reorder(i, k, j)
        sch.parallel(i)
        _, ji = sch.split(j, [None, 8])
        sch.vectorize(ji)

    def parallel_only(sch):
        i, *_ = sch.get_loops(sch.get_sblock("C"))
        sch.parallel(i)

    got = features(MATMUL, both)
    assert {"reduction_under:parallel", "reduction_under:vectorized",
            "reduction_under:parallel+vectorized"} <= set(got)
    got = features(MATMUL, parallel_only)
    assert "reduction_under:parallel" in got
    assert not {"reduction_under:vectorized", "reduction_under:parallel+vectorized"} & set(got)


def test_rfactor_partials_and_software_pipeline():
    def rfactor(sch):
        *_, k = sch.get_loops(sch.get_sblock("C"))
        _, ki = sch.split(k, [None, 4])
        sch.rfactor(ki, 0)

    def pipeline(sch):
        blk = sch.get_sblock("C")
        *_, k = sch.get_loops(blk)
        cache = sch.cache_read(blk, 0, "local")
        sch.compute_at(cache, k)
        sch.decompose_reduction(blk, k)
        sch.annotate(k, "software_pipeline_stage", [0, 1])
        sch.annotate(k, "software_pipeline_order", [0, 1])
        sch.annotate(cache, "double_buffer_scope", 0)

    assert "rfactor:partial" in features(MATMUL, rfactor)
    got = features(MATMUL, pipeline)
    assert {"pipeline:stages=2", "pipeline:versions=2"} <= set(got)


def test_texture_scopes_on_adreno():
    """Kernel parameters in texture scopes (the matmul_texture workload) are in the census of
    the lowered Adreno kernel, each scope and the ``scope:texture`` family; not in llvm's."""
    from fuzzharness.backends import backends
    from fuzzharness.generators.workloads import workloads

    target = {"kind": "opencl", "device": "adreno"}
    p = {"M": 6, "N": 8, "K": 12, "dtype": "float32", "scope_A": "global.texture-nhwc",
         "scope_B": "global.texture-weight"}
    from tvm import s_tir

    sch = s_tir.Schedule(workloads["matmul_texture"].prim_func(p))
    i, j, _ = sch.get_loops(sch.get_sblock("C"))
    sch.bind(i, "blockIdx.x")
    sch.bind(j, "threadIdx.x")
    got = census(sch.mod, backends["opencl"].lower(sch.mod, target, {}))
    assert {"scope:texture", "scope:global.texture-nhwc", "scope:global.texture-weight"} <= set(got)
    assert not any("texture" in f for f in features(MATMUL))


def test_census_never_raises():
    assert census(object(), object()) == ["census:error"]


def test_coverage_table_counts_features_per_target():
    from fuzzharness.campaign import coverage

    def row(target, feats, status="pass", stage="done"):
        case = {"workload": {"name": "matmul"}, "target": target, "origin": {"dtype": "f"}}
        verdict = {"details": {} if feats is None else {"features": feats}}
        return status, stage, json.dumps(case), json.dumps(verdict)

    rows = coverage.compute([
        row({"kind": "llvm"}, ["unroll:odd", "scope:local"]),
        row({"kind": "llvm", "mcpu": "x86-64-v3"}, ["unroll:odd"]),
        row({"kind": "llvm"}, None, "compile_error", "lower"),  # no census: not lowered
        row({"kind": "opencl", "device": "adreno"}, ["scope:texture"]),
    ])
    got = {(axis, value): (drawn, accepted) for axis, value, drawn, _, accepted, *_ in rows
           if axis in ("census", "feature")}
    assert got[("census", "llvm")] == (3, 2)
    assert got[("feature", "llvm unroll:odd")] == (2, 2)
    assert got[("feature", "adreno scope:texture")] == (1, 1)
    assert ("feature", "llvm scope:texture") not in got
    text = coverage.format_table(rows)
    assert "llvm: 2 lowered cases" in text
    assert "unroll:odd 2 (100.0 %)" in text
    under = next(ln for ln in text.splitlines() if "llvm" not in ln and "under 2 %" in ln)
    assert "unroll:even" in under and "unroll:odd" not in under
    assert set(GOALS) >= {"vector_store:float16x8", "scope:texture"}
