"""Verdicts for tasks that produced none: the worker died, hung, or ran out of memory.

Shared by every executor (the local worker pool, and a remote one such as Ray): whoever
notices that a worker process ended without a verdict calls :func:`death_verdict` or
:func:`timeout_verdict` with what it knows — the process's return code, the last stage the
worker announced, the tail of its log — so that a segfault reads the same whether it happened
on this machine or on a cluster node.

Classification rules (the ``details["kind"]`` of a ``crash``):

``out_of_memory``  the log shows an allocation failure (std::bad_alloc, MemoryError, LLVM's
                   "out of memory") or the executor itself killed the worker for exceeding its
                   memory limit;
``heap_damage``    glibc's allocator found its heap damaged and aborted (its message, e.g.
                   ``free(): invalid pointer``, is in the log and in ``details["malloc_error"]``;
                   with :mod:`fuzzharness.core.hygiene` this happens at the free nearest to
                   the damage — which case did the damage, confirmation finds out);
``signal``         killed by a signal (SIGSEGV, SIGABRT, SIGILL, SIGBUS, SIGKILL from outside —
                   the kernel's OOM killer sends SIGKILL too, which the message points out);
``exit``           the process exited with a status without sending a verdict.

A death by a signal in a compiler stage (``generate`` — a schedule drawn —, ``schedule``,
``lower``, ``codegen``, ``build``) gets the ``site`` of a compile error: the innermost TVM
frame of the backtrace TVM prints when it crashes (``tvm::s_tir::ReIndex``), so that two
primitives that segfault are two buckets, not one "crash in stage generate"
(:func:`crash_site`).  Not in ``run``: there the crashing code is the generated kernel.

A death is a TVM finding in every stage: even in ``verify`` (numpy, harness code) the likely
cause is generated code that corrupted the heap earlier, and hiding that would hide a
miscompile.  Exceptions in harness code are told apart inside the worker, where the
traceback still exists (see :mod:`fuzzharness.execution.stages`).
"""

from __future__ import annotations

import re
import signal
from typing import Any

from fuzzharness.core.verdict import Stage, Status, Verdict
from fuzzharness.execution.stages import is_out_of_memory_text

#: log lines worth quoting when a worker died: what TVM, LLVM or the C++ runtime said before
#: dying (not TVM's warnings, and not faulthandler's "Fatal Python error: Aborted", which
#: only repeats the signal)
FATAL_LINE = re.compile(
    r"Check failed|InternalError|LLVM ERROR|Assertion .* failed|terminate called"
    r"|std::bad_alloc|MemoryError"
)


#: glibc's malloc diagnostics (malloc_printerr), printed just before it aborts
MALLOC_ERROR = re.compile(
    r"\b(?:free|malloc|realloc|calloc|munmap_chunk|malloc_consolidate|_int_malloc|_int_free"
    r"|memalign|posix_memalign|tcache_thread_shutdown)\(\): [^\n]*"
    r"|double free or corruption[^\n]*|corrupted size vs\. prev_size[^\n]*"
    r"|corrupted double-linked list[^\n]*"
)


#: a frame of the backtrace TVM prints on a fatal signal (innermost first)
FRAME = re.compile(r'^\s*File "([^"]*)", line \d+, in (.+?)\s*$')
#: the IR visitors' own machinery: a crash inside it names the caller, not the dispatch
GENERIC_FRAME = re.compile(r"^tvm::(?:ffi::|ObjectMutator::|ObjectVisitor::|NodeFunctor)"
                           r"|::(?:Stmt|Expr|StmtExpr)(?:Mutator|Visitor|Functor)\b")
COMPILER_STAGES = frozenset({Stage.GENERATE, Stage.SCHEDULE, Stage.LOWER, Stage.CODEGEN,
                             Stage.BUILD})


def crash_site(log_tail: str) -> str:
    """``file:function`` of the innermost TVM frame (``tvm::...``) of the last backtrace in
    the log, as :func:`fuzzharness.execution.facts.throw_site` writes a compile error's
    ("" when the log has none); a file TVM's backtrace does not know is left empty."""
    from fuzzharness.execution.facts import site_of_frame

    lines = (log_tail or "").splitlines()
    start = max((i for i, ln in enumerate(lines) if "Segfault encountered" in ln
                 or ln.startswith("Stack trace") or "Fatal Python error" in ln), default=0)
    for ln in lines[start:]:
        m = FRAME.match(ln)
        if m and m.group(2).startswith("tvm::"):
            site = site_of_frame(m.group(1), m.group(2))
            if not GENERIC_FRAME.search(site.split(":", 1)[1]):
                return site
    return ""


def malloc_error(log_tail: str) -> str:
    """The last glibc heap-corruption diagnostic in the log ("" when none)."""
    found = MALLOC_ERROR.findall(log_tail or "")
    # glibc ends its message without a newline: faulthandler's report may follow on the line
    return found[-1].split("Fatal Python error")[0].strip()[:200] if found else ""


def signal_name(returncode: int | None) -> str | None:
    """``SIGSEGV`` for a return code of -11 (what ``subprocess`` reports); None for exits."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def fatal_line(log_tail: str) -> str:
    """The last line of the log that reads like a fatal error ("" when none)."""
    for line in reversed((log_tail or "").splitlines()):
        if FATAL_LINE.search(line) and "Warning" not in line:
            return line.strip()[:300]
    return ""


def _stage(stage: str | Stage | None) -> Stage:
    try:
        return Stage(stage) if stage is not None else Stage.GENERATE
    except ValueError:
        return Stage.GENERATE


def death_verdict(
    returncode: int | None,
    stage: str | Stage | None,
    log_tail: str,
    *,
    elapsed: float = 0.0,
    memory_limit_exceeded: str | None = None,
) -> Verdict:
    """The verdict of a task whose worker ended without answering.

    ``memory_limit_exceeded``: set (to a short description) when the executor itself killed
    the worker for using too much memory.
    """
    st = _stage(stage)
    sig = signal_name(returncode)
    details: dict[str, Any] = {"returncode": returncode, "log_tail": log_tail}
    if sig:
        details["signal"] = sig
    fatal = fatal_line(log_tail)
    if fatal:
        details["fatal"] = fatal
    heap = malloc_error(log_tail)
    if memory_limit_exceeded or is_out_of_memory_text(log_tail):
        details["kind"] = "out_of_memory"
        what = memory_limit_exceeded or "ran out of memory"
    elif heap:  # glibc noticed the damage; SIGSEGV or SIGABRT is then a matter of luck
        details["kind"], details["malloc_error"] = "heap_damage", heap
        what = f"killed by {sig or f'exit {returncode}'}: glibc found the heap damaged ({heap})"
    elif sig:
        details["kind"] = "signal"
        what = f"killed by {sig}"
        if st in COMPILER_STAGES and (site := crash_site(log_tail)):
            details["site"] = site
        if sig == "SIGKILL":
            what += " (not by the harness: possibly the kernel's OOM killer)"
    else:
        details["kind"] = "exit"
        what = f"exited with status {returncode}"
    message = f"worker {what} in stage {st.value}" + (f": {fatal}" if fatal else "")
    v = Verdict(Status.CRASH, st, message=message, details=details)
    v.timings[st.value] = elapsed
    return v


def timeout_verdict(timeout: float, stage: str | Stage | None, log_tail: str, *,
                    elapsed: float = 0.0) -> Verdict:
    st = _stage(stage)
    v = Verdict(Status.TIMEOUT, st, message=f"no result after {timeout:g} s in stage {st.value}",
                details={"timeout_s": timeout, "log_tail": log_tail})
    v.timings[st.value] = elapsed
    return v


def ended_verdict(returncode: int | None, timeout: float, stage: str | Stage | None,
                  log_tail: str, *, timed_out: bool, elapsed: float,
                  provisional: dict[str, Any] | None = None) -> Verdict:
    """A task's process ended without a verdict: over its timeout, or dead of ``returncode``.

    ``provisional``: the verdict the case had reached when its worker began a probe that
    runs the kernel built another way (:meth:`fuzzharness.execution.stages.Execution.
    before_probe`).  Then that verdict stands — it is what the case's own kernel did; the
    probe's end is noted in its details (``probe_ended``).  Without this, a wrong result
    whose serial rebuild segfaulted was a ``crash`` at ``verify``: another symptom, another
    bucket, for a crash the case's kernel never had."""
    ended = (timeout_verdict(timeout, stage, log_tail, elapsed=elapsed) if timed_out
             else death_verdict(returncode, stage, log_tail, elapsed=elapsed))
    if provisional is None:
        return ended
    verdict = Verdict.from_dict(provisional)
    verdict.details["probe_ended"] = {"status": ended.status.value,
                                      "kind": ended.details.get("kind"),
                                      "message": ended.message[:300]}
    return verdict


def protocol_verdict(problem: str, stage: str | Stage | None, log_tail: str) -> Verdict:
    """The worker answered something the driver cannot read: a harness bug, not TVM's."""
    return Verdict(Status.HARNESS_ERROR, _stage(stage),
                   message=f"worker protocol error: {problem}",
                   details={"log_tail": log_tail, "kind": "protocol"})


def lost_verdict(problem: str) -> Verdict:
    """The machinery running the task was lost (a cluster node or its actor died, twice).

    Nothing is known about the case itself — not even which stage ran — so this is reported
    as an infrastructure failure (``harness_error``, kind ``lost``), never as a TVM finding.
    """
    return Verdict(Status.HARNESS_ERROR, Stage.GENERATE, message=f"executor lost the task: {problem}",
                   details={"kind": "lost"})
