"""merge: loops of different blocks with equal extents become one loop (the blocks' nests fuse).

Known TVM bug, proposed only in ``KNOWN_SITE_PERMILLE`` ‰ of the draws
(always with ``known_bug_sites``; ``base.ScheduleState.known_site``): ``merge`` does not check data
dependences.  Merging a consumer's loop *before* its producer's (``merge(l_consumer,
l_producer)``) is accepted and keeps that order inside the merged loop, so the consumer
reads the intermediate before it is written (wrong results / nan; ``known_bugs.toml``
``merge-ignores-dependences``).  Without ``known_bug_sites`` the first loop belongs to the
block that comes first in the program (a producer before its consumers).  Block names decide
nothing here: Relax-legalized functions name consumers ``T_add`` before producers ``compute``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fuzzharness.generators.schedules.base import Primitive, ScheduleState, register


@register
class Merge(Primitive):
    name = "merge"
    weight = 2
    covers = ("merge",)

    def propose(self, state: ScheduleState):
        names = state.block_names()
        if len(names) < 2:
            return None
        if not state.known_site():  # program order: see the module docstring
            order = {n: i for i, n in enumerate(state.facts.blocks)}
            names = sorted(names, key=lambda n: order[n])
        nests = {n: state.loops(state.sch.get_sblock(n)) for n in names}
        sites = []  # (block a, block b, depth): distinct loops with equal extents down to depth
        for ai, a in enumerate(names):
            for b in names[ai + 1:]:
                la, lb = nests[a], nests[b]
                for d in range(min(len(la), len(lb))):
                    if state.sch.get(la[d]).same_as(state.sch.get(lb[d])):
                        continue
                    if any(state.extent(la[k]) != state.extent(lb[k]) or state.extent(la[k]) is None
                           for k in range(d + 1)):
                        break
                    sites.append((a, b, d))
        if not sites:
            return None
        a, b, d = state.draw(st.sampled_from(sites))
        first, second = nests[a][d], nests[b][d]
        return lambda: state.sch.merge(first, second)
