"""Progress on long runs: one status line on stderr (redrawn on a terminal, periodic otherwise).

    812/1000 cases  8.7/s  11 failures  5 buckets (2 new)  780 pass  1 restarts  35s left

``failures`` counts this session's TVM findings; ``buckets`` the campaign's distinct finding
buckets and how many of them match no known bug.  ``left`` is the time budget left, or with
only a case limit an estimate from the current rate.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping

from fuzzharness.core.verdict import FINDINGS, Verdict

TTY_INTERVAL = 0.25
LOG_INTERVAL = 15.0
_FINDING_NAMES = frozenset(f.value for f in FINDINGS)


class Progress:
    def __init__(self, *, total: int | None, deadline: float | None, enabled: bool = True,
                 stream=None):
        self.total = total
        self.deadline = deadline
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.start = time.monotonic()
        self.done = 0
        self._last = 0.0
        self._line = ""

    def update(self, verdict: Verdict, counts: Mapping[str, int], restarts: int, *,
               buckets: int = 0, new: int = 0) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < (TTY_INTERVAL if self.tty else LOG_INTERVAL):
            return
        self._last = now
        self.draw(self.line(counts, restarts, buckets=buckets, new=new, now=now))

    def line(self, counts: Mapping[str, int], restarts: int, *, buckets: int, new: int,
             now: float | None = None) -> str:
        now = time.monotonic() if now is None else now
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        failures = sum(n for s, n in counts.items() if s in _FINDING_NAMES)
        parts = [f"{self.done}" + (f"/{self.total}" if self.total else "") + " cases",
                 f"{rate:.1f}/s", f"{failures} failures",
                 f"{buckets} buckets ({new} new)", f"{counts.get('pass', 0)} pass"]
        if counts.get("harness_error"):
            parts.append(f"{counts['harness_error']} harness errors")
        if restarts:
            parts.append(f"{restarts} restarts")
        if self.deadline is not None:
            parts.append(f"{max(0.0, self.deadline - now):.0f}s left")
        elif self.total and rate > 0:
            parts.append(f"~{max(0, self.total - self.done) / rate:.0f}s left")
        return "  ".join(parts)

    def draw(self, line: str) -> None:
        if self.tty:
            self.stream.write("\r" + line.ljust(len(self._line)))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._line = line

    def close(self) -> None:
        if self.enabled and self.tty and self._line:
            self.stream.write("\n")
            self.stream.flush()
        self._line = ""  # closing twice ends the line once
