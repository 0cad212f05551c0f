"""Progress on long runs: one status line on stderr (redrawn on a terminal, periodic otherwise)."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping

from fuzzharness.verdict import FINDINGS, Verdict

TTY_INTERVAL = 0.25
LOG_INTERVAL = 15.0


class Progress:
    def __init__(self, *, total: int | None, deadline: float | None, enabled: bool = True):
        self.total = total
        self.deadline = deadline
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.start = time.monotonic()
        self.done = 0
        self._last = 0.0
        self._line = ""

    def update(self, verdict: Verdict, counts: Mapping[str, int], restarts: int) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < (TTY_INTERVAL if self.tty else LOG_INTERVAL):
            return
        self._last = now
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        failures = sum(n for s, n in counts.items() if s in {f.value for f in FINDINGS})
        parts = [f"{self.done}" + (f"/{self.total}" if self.total else "") + " cases",
                 f"{rate:.1f}/s", f"{failures} findings", f"{counts.get('pass', 0)} pass"]
        if restarts:
            parts.append(f"{restarts} restarts")
        if self.deadline is not None:
            parts.append(f"{max(0.0, self.deadline - now):.0f}s left")
        elif self.total and rate > 0:
            parts.append(f"~{(self.total - self.done) / rate:.0f}s left")
        line = "  ".join(parts)
        if self.tty:
            sys.stderr.write("\r" + line.ljust(len(self._line)))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self._line = line

    def close(self) -> None:
        if self.enabled and self.tty and self._line:
            sys.stderr.write("\n")
            sys.stderr.flush()
