"""blockize: the subtree under a loop (or a run of sibling blocks) becomes one outer block.

Known TVM bugs, proposed only in ``KNOWN_SITE_PERMILLE`` ‰ of the draws
(always with ``known_bug_sites``; ``base.ScheduleState.known_site``) (both raise ``InternalError`` rather
than a ScheduleError):

* ``blockize([b])`` with a single block: "A SeqStmt of length 1 is prohibited";
* ``blockize([b1, b2])`` for siblings under a loop (e.g. after compute_at): "Cannot find the
  BlockRealize of block outer_...";
* ``blockize(loop)`` of an int64 loop that does not start at 0 (a ``loop_partition`` piece of
  a Relax-legalized function, whose loops are int64): "The dtype of the extent of an IterVar
  (int32) must match its associated Var's dtype (int64)".

Lists of consecutive top-level blocks (their loop nests side by side under the root) work and
are proposed.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


def top_level_runs(func) -> list[list[str]]:
    """Names of the blocks of each top-level statement of the root block, in order."""
    import tvm_ffi
    from tvm import s_tir, tirx

    body = func.body.block.body
    stmts = list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]
    out = []
    for stmt in stmts:
        names: list[str] = []
        tvm_ffi.structural_walk(stmt, [(s_tir.SBlock, lambda b, out=names: out.append(str(b.name_hint)))])
        out.append(names)
    return out


@register
class Blockize(Primitive):
    name = "blockize"
    weight = 3
    covers = ("blockize",)

    def propose(self, state: ScheduleState):
        how = state.draw(st.sampled_from(["loop", "blocks"]))
        preserve = state.draw(st.booleans())
        if how == "blocks":
            if state.known_site():
                names = state.block_names()
                chosen = state.draw(st.lists(st.sampled_from(names), min_size=1, unique=True)) if names else []
            else:
                runs = top_level_runs(state.sch.mod["main"])
                singles = [r[0] if len(r) == 1 else None for r in runs]
                pairs = [(i, j) for i in range(len(runs)) for j in range(i + 2, len(runs) + 1)
                         if all(singles[i:j])]
                if not pairs:
                    return None
                i, j = state.draw(st.sampled_from(pairs))
                chosen = singles[i:j]
            if not chosen:
                return None
            return lambda: state.sch.blockize([state.sch.get_sblock(n) for n in chosen],
                                              preserve_unit_iters=preserve)
        block = state.pick_block()
        if block is None:
            return None
        loops = state.loops(block)
        if not state.known_site():
            loops = [lp for lp in loops if not _int64_offset(state.sch.get(lp))]
        if not loops:
            return None
        loop = state.draw(st.sampled_from(loops))
        return lambda: state.sch.blockize(loop, preserve_unit_iters=preserve)


def _int64_offset(loop) -> bool:
    """An int64 loop whose range does not start at 0 (see the module docstring)."""
    from tvm import tirx

    return (str(loop.loop_var.ty) == "int64"
            and not (isinstance(loop.min, tirx.IntImm) and int(loop.min.value) == 0))
