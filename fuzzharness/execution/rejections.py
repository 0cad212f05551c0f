"""Build errors that are TVM refusing an invalid schedule, not TVM bugs — and schedules that
are our own invalid requests.

The generator proposes schedules that ``s_tir.Schedule`` accepts but that a later stage
rejects by design.  Each pattern here is such a documented refusal, with a short name and the
reason it is not a bug; a build error matching none of them is a ``compile_error`` finding.
Such a verdict is ``schedule_rejected`` at the stage that refused (not ``schedule``): the
coverage counts these "accepted, then refused at lowering" cases apart
(:mod:`fuzzharness.campaign.coverage`, axis ``refused_later``), without a finding.
"""

from __future__ import annotations

import re

PATTERNS: list[tuple[str, str, str]] = [
    (
        "nested_parallel",
        r"Nested parallel loop is not supported by threadpool",
        "llvm's thread pool runs one level of parallel loops; nesting is refused at lowering",
    ),
]

_COMPILED = [(name, re.compile(p), why) for name, p, why in PATTERNS]

#: loop annotations that describe the loop's body statement by statement
PIPELINE_KEYS = ("software_pipeline_stage", "software_pipeline_order")


class InvalidRequest(Exception):
    """The scheduled program asks TVM for something invalid by our own doing (not a TVM
    refusal): its verdict is ``schedule_rejected`` with ``rejection`` = (name, reason)."""

    def __init__(self, name: str, why: str, message: str):
        super().__init__(message)
        self.rejection = (name, why)


def check_request(func, trace) -> None:
    """Raise :class:`InvalidRequest` when a software-pipeline annotation of ``trace`` (a JSON
    trace replayed on ``func``) did not have one entry per statement of its loop's body
    *when it was written*.

    The generator writes only annotations that fit (``generators/schedules/pipeline.py``),
    so this refuses only traces edited afterwards: a minimizer that drops the cache_read +
    compute_at a pipeline was built on keeps a ``[0, 1]`` annotation over a one-block loop,
    and TVM's refusal of that ("the body of the software pipeline should be SeqStmt", or its
    stage-count check) is our request's fault, not a TVM bug — a minimized repro must not
    turn into one (campaign seed 13: 2 of 16 hand-checked groups).  An annotation that fit
    when written and that a later step or lowering makes stale stays TVM's to refuse (known
    bug software-pipeline-stage-count-after-cache-read: an internal check instead of a
    user-facing error)."""
    if not trace:
        return
    insts, decisions = trace[0], trace[1] if len(trace) > 1 else []
    written = [k for k, inst in enumerate(insts) if inst[0] == "Annotate"
               and inst[2] and inst[2][0] in PIPELINE_KEYS]
    seen: dict[int, set[str]] = {}  # prefix length → misfits: the stage and order
    # annotations are consecutive, so one's "after" replay is the next one's "before"

    def misfits(end: int) -> set[str]:
        if end not in seen:
            seen[end] = _misfits(func, insts, decisions, end)
        return seen[end]

    for k in written:
        before, after = misfits(k), misfits(k + 1)
        if after - before:
            raise InvalidRequest(
                "pipeline_annotation_mismatch",
                "a software-pipeline annotation that did not fit its loop's body when written: "
                "the harness's own invalid request", "; ".join(sorted(after - before)))


def _misfits(func, insts: list, decisions: list, end: int) -> set[str]:
    """The pipelined loops whose annotations do not fit their body after ``insts[:end]``."""
    import tvm_ffi
    from tvm import tirx

    from fuzzharness.core.tvm_support import replay_trace

    cut = [insts[:end], [d for d in decisions if d[0] < end]]
    mod = replay_trace(func, cut).mod
    bad: set[str] = set()

    def on_for(loop) -> None:
        sizes = [len(loop.annotations[k]) for k in PIPELINE_KEYS if k in loop.annotations]
        if sizes:
            body = loop.body
            n = len(body.seq) if isinstance(body, tirx.SeqStmt) else 1
            if any(size != n for size in sizes):
                bad.add(f"loop {loop.loop_var.name}: {max(sizes)} pipeline stages over {n} "
                        f"statement(s)")

    for _, f in mod.functions.items():
        tvm_ffi.structural_walk(f, [(tirx.For, on_for)])
    return bad


def match(message: str) -> tuple[str, str] | None:
    """(name, reason) when a build error is a legitimate refusal; None when it may be a bug."""
    for name, rx, why in _COMPILED:
        if rx.search(message):
            return name, why
    return None
