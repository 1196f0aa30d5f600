"""A plain progress bar on stderr (no dependency).

On a terminal it redraws one line (``\\r``) at most every 0.2 s; elsewhere
(a pipe, CI logs) it prints a line at every tenth of the total, so logs
stay short. Call from one thread.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30


class Progress:
    """``Progress("flights", total)``; ``update(done)``; ``close()``."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = max(total, 0)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.monotonic()
        self._last_draw = 0.0
        self._last_tenth = -1
        self.done = 0

    def line(self) -> str:
        fraction = self.done / self.total if self.total else 1.0
        filled = int(WIDTH * fraction)
        elapsed = max(time.monotonic() - self.start, 1e-9)
        return (f"  {self.label:<16} [{'#' * filled}{'.' * (WIDTH - filled)}] {self.done:>9,}/{self.total:,} "
                f"{fraction:6.1%} {self.done / elapsed:>10,.0f}/s")

    def update(self, done: int) -> None:
        self.done = done
        if self.tty:
            now = time.monotonic()
            if now - self._last_draw >= 0.2:
                self._last_draw = now
                self.stream.write("\r" + self.line())
                self.stream.flush()
            return
        tenth = int(10 * done / self.total) if self.total else 10
        if tenth != self._last_tenth and tenth < 10:
            self._last_tenth = tenth
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        self.stream.write(("\r" if self.tty else "") + self.line() + f" in {time.monotonic() - self.start:.1f} s\n")
        self.stream.flush()
