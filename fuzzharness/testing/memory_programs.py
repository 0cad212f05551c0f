"""Kernels that damage memory on purpose: what heap hygiene and guard zones must catch.

Registered as non-default workloads (drawn only when named), for the confirmation tests
(``tests/plugins/memory_bugs.py`` adds the ones that need test-only hooks) and for
``benchmarks/heap_checks.py``, which measures which defence catches which damage.  Each is
a float32 row sum whose *kernel* differs from its program as if TVM had miscompiled it
(``fuzzharness/testing/wrong_programs.py`` explains the pattern):

``test_oob_write``          the kernel also stores one element past the end of its output
                            ``B`` (``side = "after"``) or one before its start
                            (``"before"``) — without guard zones this damages whatever lies
                            next to ``B`` in the heap;
``test_via_temp``           the kernel sums through a temporary ``W`` (a copy of ``A``):
                            correct;
``test_reads_unwritten``    the same, but ``W`` is never written: the kernel sums whatever
                            the memory held (``W`` ≥ 1 KiB comes from TVM's CPU workspace
                            pool, which hands it the pages an earlier kernel's ``W`` had);
``test_workspace_overflow`` the kernel sums through a temporary ``W`` (a copy of ``A``, from
                            TVM's workspace allocator) and stores past ``W``'s end (one row,
                            or ``elements`` elements):
                            damage inside the kernel's own workspace, which no guard zone
                            around an argument sees.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzzharness.generators.workloads.base import GenOptions, register
from fuzzharness.generators.workloads.row_reduce import RowSum


@register
class OutOfBoundsWrite(RowSum):
    name = "test_oob_write"
    description = "row sum whose kernel writes one element outside its output (tests only)"
    dtype_labels = ("float32",)
    default = False

    def draw_params(self, data: Any, options: GenOptions) -> dict[str, Any]:
        return {**super().draw_params(data, options),
                "side": data.draw(st.sampled_from(("after", "before")))}

    def kernel_source(self, p: dict[str, Any]) -> str:
        index = f"vi + {p['M']}" if p.get("side", "after") == "after" else "vi - 1"
        return self.source(p).rstrip("\n") + (
            "\n    for i in range(1):\n"
            '        with T.sblock("out_of_bounds"):\n'
            "            vi = T.axis.spatial(1, i)\n"
            f"            B[{index}] = T.float32(7)\n")


class ThroughTemp(RowSum):
    """The row sum through a temporary ``W`` (TVM's workspace), filled with ``fill``; after
    filling, ``overflow(p)`` may add a block (text) that writes where it should not."""

    dtype_labels = ("float32",)
    default = False
    fill = "A[vi, vj]"

    def overflow(self, p: dict[str, Any]) -> str:
        return ""

    def kernel_source(self, p: dict[str, Any]) -> str:
        m, n = p["M"], p["N"]
        return f'''
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({m}, {n}), "float32"), B: T.Buffer(({m},), "float32")):
    W = T.alloc_buffer(({m}, {n}), "float32")
    for i, j in T.grid({m}, {n}):
        with T.sblock("W"):
            vi, vj = T.axis.remap("SS", [i, j])
            W[vi, vj] = {self.fill}
{self.overflow(p)}    for i, j in T.grid({m}, {n}):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SR", [i, j])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + W[vi, vj]
'''


@register
class ViaTemp(ThroughTemp):
    name = "test_via_temp"
    description = "row sum through a temporary copy of its input (tests only)"


@register
class ReadsUnwritten(ThroughTemp):
    name = "test_reads_unwritten"
    description = "row sum of a temporary that nothing wrote (tests only)"
    fill = "W[vi, vj]"


@register
class WorkspaceOverflow(ThroughTemp):
    name = "test_workspace_overflow"
    description = "row sum through a temporary the kernel writes past (tests only)"

    def overflow(self, p: dict[str, Any]) -> str:
        k = p.get("elements", p["N"])  # how many elements past W's end are written
        return (f"    for i in range({k}):\n"
                '        with T.sblock("overflow"):\n'
                f"            vj = T.axis.spatial({k}, i)\n"
                f"            W[{p['M']}, vj] = T.float32(7)\n")
