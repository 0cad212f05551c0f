"""The version adapter (fuzzharness/core/tvm_compat.py): a no-op on TVM 0.27, the 0.27 names on
older releases (run in their environments when `fuzzharness releases --prepare` made them),
and a fallback IR walk that visits what tvm_ffi.structural_walk visits."""

from __future__ import annotations

import json
import subprocess

import pytest

from fuzzharness.core import tvm_compat

#: a scheduled program (a predicate, a cache stage) and what the tests read from it; run in
#: this process and, as text, under other releases' interpreters
PROGRAM = '''
from tvm import s_tir
from fuzzharness.core.tvm_support import parse_prim_func

SRC = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((8, 12), "float16"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 12):
        with T.sblock("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + T.Cast("float32", A[vi, vk])
"""
sch = s_tir.Schedule(parse_prim_func(SRC))
i, k = sch.get_loops(sch.get_sblock("B"))
sch.split(k, [None, 5])
sch.cache_read(sch.get_sblock("B"), 0, "local")
func = sch.mod["main"]


def visit(walk, **kw):
    from collections import Counter

    import tvm_ffi  # noqa: F401
    from tvm import tirx

    seen = Counter()
    walk(func, [(s_tir.SBlock, lambda b: seen.update([f"block {b.name_hint}"])),
                (tirx.For, lambda f: seen.update([f"for {f.loop_var.name}"])),
                (tirx.BufferStore, lambda s: seen.update([f"store {s.buffer.name}"]))], **kw)
    return dict(seen)
'''


def run_under(release: str, code: str):
    """``code`` (after PROGRAM) under a release's interpreter; its last stdout line as JSON."""
    from fuzzharness.core.interpreter import environment
    from fuzzharness.releases import check as releases

    python = releases.ready(releases.find([release])[0])
    if python is None:
        pytest.skip(f"no TVM {release} environment (fuzzharness releases --prepare makes it)")
    head = "from fuzzharness.core import tvm_compat\nadded = tvm_compat.install()\n"
    p = subprocess.run([str(python), "-c", head + PROGRAM + code], capture_output=True,
                       text=True, env=environment(str(python)), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_install_changes_nothing_on_tvm_027():
    import tvm

    if not tvm.__version__.startswith("0.27"):
        pytest.skip(f"TVM {tvm.__version__}")
    assert tvm_compat.install() == [] and tvm_compat.install() == []


def test_param_buffers():
    scope: dict = {}
    exec(PROGRAM, scope)  # noqa: S102 - our own program text
    got = [(str(b.name), [int(s) for s in b.shape]) for b in tvm_compat.param_buffers(scope["func"])]
    assert got == [("A", [8, 12]), ("B", [8])]


def test_fallback_walk_visits_what_structural_walk_visits():
    """On TVM 0.26 both walks exist: the fallback (TVM's stmt_functor visitors) must see the
    same blocks, loops and stores, in post and pre order, and skip children on False."""
    code = ("\nimport tvm_ffi\nfrom tvm import tirx\n"
            "inner = []\n"
            "tvm_compat._walk(func, [(tirx.For, lambda f: False), "
            "(s_tir.SBlock, lambda b: inner.append(str(b.name_hint)))], order='pre')\n"
            "print(json.dumps([visit(tvm_ffi.structural_walk), visit(tvm_compat._walk), "
            "visit(tvm_compat._walk, order='pre'), inner]))")
    expected, post, pre, inner = run_under("0.26", "\nimport json" + code)
    assert expected["block B"] == 1 and expected["block A_local"] == 1
    assert post == expected and pre == expected
    assert inner == ["root"]


def test_older_release_gets_the_027_names():
    """On TVM 0.25 the adapter back-fills every name the harness uses; a census runs."""
    added, features, ty, source = run_under("0.25", (
        "\nimport json\nfrom tvm import tirx\n"
        "from fuzzharness.execution.census import scheduled_features\n"
        "block = sch.get(sch.get_sblock('B'))\n"
        "print(json.dumps([added, sorted(scheduled_features(func)), "
        "str(tirx.IntImm('int32', 3).ty), str(block.reads[0].source.name)]))"))
    assert {"PrimExpr.ty", "s_tir.SBlock", "BufferRegion.source",
            "tvm_ffi.structural_walk"} <= set(added)
    assert features == ["accumulate:float16->float32", "predicate:consumer"]
    assert (ty, source) == ("int32", "A_local")
