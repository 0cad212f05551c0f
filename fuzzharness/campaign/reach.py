"""The reach map: which program classes each part of TVM's surface must handle, and which of
them a campaign built.

Generated, not hand-picked (``python -m fuzzharness.campaign.reach`` writes
``docs/reach-map.md``; ``tests/test_reach.py`` fails when TVM has a schedule method or a
lowering pass the committed map does not list):

* **schedule methods** — every public method of ``tvm.s_tir.Schedule`` (``dir``), each either
  drawn by a registered generator primitive (its ``covers``), a lookup, produced by another
  schedule source, or excused with its reason
  (:mod:`fuzzharness.generators.schedules.excused`).  A drawn method's *reach classes* are
  the site classes of what it acts on (:data:`SITE_FACTS`, or ``plain``;
  :mod:`fuzzharness.generators.schedules.site_classes`): a method that takes only loops has
  no ``site_shares_outer_loop`` (a block's class);
* **lowering passes** — every pass TVM's llvm pipeline runs on a scheduled PrimFunc, in
  order, recorded with a pass instrument while a small workload compiles.  Each is reached
  by every llvm case; which program features they met is the feature census
  (:mod:`fuzzharness.campaign.census_table`).

The census (:mod:`fuzzharness.campaign.coverage`, axis ``reach``) counts every accepted step
under ``method @ class`` for the classes of its first call's site, so ``fuzzharness status
DIR --coverage`` can list the classes a campaign never built (:func:`never_built`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

from fuzzharness.generators.schedules.base import primitives
from fuzzharness.generators.schedules.excused import EXCUSED, LOOKUPS, SOURCE_COVERS
from fuzzharness.generators.schedules.site_classes import SITE_FACTS

PLAIN = "plain"
#: site classes only a block has (a loop's site is described by the loop itself)
BLOCK_ONLY = frozenset({"site_shares_outer_loop"})


def schedule_methods() -> list[str]:
    """Every public method of ``tvm.s_tir.Schedule``, read from the class."""
    from tvm import s_tir

    return sorted(n for n in dir(s_tir.Schedule) if not n.startswith("_")
                  and callable(getattr(s_tir.Schedule, n))
                  and not isinstance(getattr(s_tir.Schedule, n), type))


def drawn_methods() -> set[str]:
    """The methods registered generator primitives apply (lookups and samplers aside)."""
    return {m for _, p in primitives.items() for m in p.covers} - set(LOOKUPS)


def how_reached(method: str) -> str:
    """``drawn`` / ``lookup`` / ``source:<name>`` / ``excused: <reason>``, or ``""`` for a
    method nothing accounts for (the test fails on it)."""
    if method in drawn_methods():
        return "drawn"
    if method in LOOKUPS:
        return "lookup"
    for source, methods in SOURCE_COVERS.items():
        if method in methods:
            return f"source:{source}"
    return f"excused: {EXCUSED[method]}" if method in EXCUSED else ""


def site_kinds(method: str) -> set[str]:
    """``loop`` and/or ``block``: what the method's random-variable parameters take, from
    their names in its signature (``loop``, ``ordered_loops``, ``block``, ``block_or_loop``)."""
    from tvm import s_tir

    names = list(inspect.signature(getattr(s_tir.Schedule, method)).parameters)[1:]
    kinds = set()
    for n in names:
        if "loop" in n:
            kinds.add("loop")
        if "block" in n or n == "target":
            kinds.add("block")
    return kinds or {"block"}


def has_site(method: str) -> bool:
    """Whether a drawn method transforms a site (not a sampler or a ``can_*`` query)."""
    return not method.startswith(("sample_", "can_"))


def reach_classes() -> list[str]:
    """Every ``method @ class`` a drawn method can meet (see the module docstring)."""
    out = []
    for m in sorted(m for m in drawn_methods() if has_site(m)):
        blocks = "block" in site_kinds(m)
        for c in (PLAIN, *SITE_FACTS):
            if c in BLOCK_ONLY and not blocks:
                continue
            out.append(f"{m} @ {c}")
    return out


def step_reach(calls: Iterable[str], site: Iterable[str], primitive: str | None = None
               ) -> list[str]:
    """The reach classes of one accepted step: the call its primitive is named after when it
    made one (the vectorize idiom splits first, rolling_buffer splits and compute_at's first:
    counted under their first call, they were never counted at all), else its first call
    that is not a sampler — at each class of its site (``plain`` when it has none)."""
    calls = list(calls)
    first = primitive if primitive in calls else next(
        (c for c in calls if not c.startswith("sample_")), None)
    if first is None:
        return []
    return [f"{first} @ {c}" for c in (sorted(site) or [PLAIN])]


def never_built(coverage_rows: Iterable[tuple]) -> list[str]:
    """The reach classes no accepted step of a campaign built (coverage rows, axis
    ``reach``), in map order."""
    built = {r[1] for r in coverage_rows if r[0] == "reach" and int(r[4]) > 0}
    return [c for c in reach_classes() if c not in built]


def pipeline_passes() -> list[str]:
    """The passes TVM's llvm pipeline runs on a scheduled PrimFunc, in order (a pass that
    runs twice is listed once), recorded while ``row_sum`` compiles."""
    import tvm
    from tvm.ir.instrument import pass_instrument

    from fuzzharness.core.tvm_support import PASS_WRAPPERS
    from fuzzharness.generators.workloads import workloads

    seen: list[str] = []

    @pass_instrument
    class Recorder:
        def run_before_pass(self, mod, info):
            if info.name not in PASS_WRAPPERS and info.name not in seen:
                seen.append(info.name)

    func = workloads["row_sum"].prim_func({"M": 2, "N": 3, "dtype": "float32"})
    with tvm.transform.PassContext(opt_level=3, instruments=[Recorder()]):
        tvm.compile(tvm.IRModule({"main": func}), target="llvm")
    return seen


def unlisted(doc: str, methods: Iterable[str] | None = None,
             passes: Iterable[str] | None = None) -> list[str]:
    """What TVM has (``methods``/``passes``: this TVM's, by default) that the map ``doc``
    does not list, or that nothing accounts for (neither drawn, a lookup, another source,
    nor excused)."""
    methods = schedule_methods() if methods is None else list(methods)
    passes = pipeline_passes() if passes is None else list(passes)
    out = [f"method {m}" for m in methods if f"| `{m}` |" not in doc or not how_reached(m)]
    return out + [f"pass {p}" for p in passes if f"`{p}`" not in doc]


def render() -> str:
    """The reach map as Markdown (docs/reach-map.md)."""
    lines = ["# Reach map", "",
             "Generated by `python -m fuzzharness.campaign.reach` (do not edit by hand; "
             "`tests/test_reach.py` fails when TVM has a schedule method or a lowering pass "
             "that is not listed here).  `fuzzharness status DIR --coverage` lists the reach "
             "classes a campaign never built.", "",
             "## Schedule methods (`tvm.s_tir.Schedule`)", "",
             "| method | reached | reach classes (site of its first call) |",
             "| --- | --- | --- |"]
    classes = reach_classes()
    for m in schedule_methods():
        how = how_reached(m) or "**not accounted for**"
        if how == "drawn" and not has_site(m):
            how = "drawn (a sampler or a query: no site of its own)"
        mine = [c.split(" @ ")[1] for c in classes if c.startswith(f"{m} @ ")]
        lines.append(f"| `{m}` | {how} | {', '.join(mine)} |")
    from fuzzharness.generators.schedules.reach_reasons import CLASS_REASONS, REASONS

    lines += ["", "## Why a class is rare", "",
              "What makes a site of each class (`generators/schedules/reach_reasons.py`):", "",
              "| site class | what makes one |", "| --- | --- |"]
    lines += [f"| `{c}` | {r} |" for c, r in CLASS_REASONS.items()]
    lines += ["", "Classes default campaigns left unbuilt, and why (*GAP:* a generator "
              "restriction TVM would not impose; `status --coverage` prints these beside "
              "a campaign's unbuilt classes):", "", "| reach class | why |", "| --- | --- |"]
    lines += [f"| `{c}` | {REASONS[c]} |" for c in classes if c in REASONS]
    lines += ["", "## Lowering passes (llvm pipeline, in order)", "",
              "Every llvm case runs each of them; the feature census (`status --coverage`, "
              "axis `census`) says which program features they met.", ""]
    lines += [f"{i}. `{p}`" for i, p in enumerate(pipeline_passes(), 1)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m fuzzharness.campaign.reach [--write PATH]
    import sys
    from pathlib import Path

    text = render()
    if len(sys.argv) > 2 and sys.argv[1] == "--write":
        Path(sys.argv[2]).write_text(text)
    else:
        sys.stdout.write(text)
