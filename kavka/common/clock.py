"""The clock seam (docs/ARCHITECTURE.md convention 2: a ``typing.Protocol`` for seams).

Every layer reads time through ``Clock`` so tests drive it by hand with
``ManualClock``: the log's segment rolling (``segment.ms``), flushing
(``flush.ms``), retention (``retention.ms``) and delayed file deletion
(``file.delete.delay.ms``), the replicas' ISR lag
(``replica.lag.time.max.ms``), the coordinators' timeouts.

Any thread: ``SystemClock`` is stateless, ``ManualClock`` is only advanced by
the test that owns it.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Milliseconds since the Unix epoch (what Kafka's ``Time.milliseconds``
    returns and what record timestamps are compared with)."""

    def milliseconds(self) -> int: ...


class SystemClock:
    """The wall clock."""

    __slots__ = ()

    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to (tests)."""

    __slots__ = ("now_ms",)

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def milliseconds(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        self.now_ms += ms
        return self.now_ms
