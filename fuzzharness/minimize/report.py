"""What minimizing a bucket (or a case file) came to, as one line each for the terminal."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

REPROS_DIR = "repros"  # under a campaign directory: one folder per bucket


@dataclasses.dataclass
class BucketRepro:
    key: str
    title: str
    count: int
    status: str  # reproduced | not reproduced | did not reproduce at start | skipped (budget) | failed
    #             | attached (placed in a root cause already found, not minimized)
    dir: Path | None = None
    original_length: int = -1
    length: int = -1
    seconds: float = 0.0
    runs: int = 0
    note: str = ""
    issue_title: str = ""
    unit: str = "trace instructions"  # what original_length / length count
    root_cause: str = ""  # key of the minimized case's root cause (fuzzharness.buckets.root_causes)

    @property
    def reproduced(self) -> bool:
        return self.status == "reproduced"

    def line(self) -> str:
        label = "trace" if self.unit == "trace instructions" else f"size ({self.unit})"
        trace = (f"{label} {self.original_length} → {self.length}"
                 if self.original_length >= 0 and self.length >= 0 else "")
        where = f"  {self.dir}" if self.dir and self.reproduced else ""
        extra = ", ".join(x for x in (trace, f"{self.seconds:.0f} s" if self.seconds else "",
                                      self.note) if x)
        return f"  {self.status:<22} {self.key}  {self.title[:90]}" + (
            f"\n        {extra}" if extra else "") + where


def say_to_stderr(enabled: bool) -> Callable[[str], None]:
    def say(msg: str) -> None:
        if enabled:
            print(f"  minimize: {msg}", file=sys.stderr, flush=True)
    return say


def format_report(results: list[BucketRepro], *, total_budget: float | None = None,
                  seconds: float | None = None, live: bool = False) -> str:
    """The minimization's lines for the terminal: a head line (buckets, minimized, verified,
    root causes), one entry per bucket in the order they were done, skipped ones last.

    ``live``: the buckets were minimized while the campaign ran (``total_budget`` is then the
    time allowed after its cases)."""
    if not results:
        return "minimize: no new failure buckets"
    ok = sum(r.reproduced for r in results)
    attached = sum(r.status == "attached" for r in results)
    tried = sum(r.status not in ("skipped (budget)", "attached") for r in results)
    causes = {r.root_cause for r in results if r.reproduced and r.root_cause}
    head = (f"minimize: {len(results)} bucket{'s' if len(results) != 1 else ''}, {tried} "
            f"minimized, {ok} verified repro{'s' if ok != 1 else ''}")
    if attached:
        head += f", {attached} attached unminimized to a root cause already found"
    if causes:
        head += f" → {len(causes)} root cause{'s' if len(causes) != 1 else ''}"
    if seconds is not None:
        head += f" in {seconds:.0f} s"
    if total_budget is not None:
        head += (f" (during the campaign, then time cap {total_budget:g} s; --minimize-budget)"
                 if live else f" (time cap {total_budget:g} s; --minimize-budget)")
    lines = [head]
    lines += [r.line() for r in results]
    skipped = [r for r in results if r.status == "skipped (budget)"]
    if skipped:
        lines.append(f"  {len(skipped)} bucket(s) not minimized within the time cap: "
                     "run `fuzzharness minimize DIR` to do them")
    return "\n".join(lines)
