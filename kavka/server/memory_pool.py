"""The broker's budget for requests held in memory (Kafka's ``MemoryPool``,
``queued.max.request.bytes``), and the same bookkeeping counting requests
(``queued.max.requests``).

Kafka's SocketServer reads a request's four-byte size first and asks its
``SimpleMemoryPool`` for that many bytes before reading the rest; a
connection refused waits, muted, while its bytes stay in the kernel's
socket buffer, until requests are done and give memory back. Kavka's
``FrameReceiver`` (``kavka.server.frame_receiver``) does the same with a
``MemoryPool``: no byte of a declared frame is buffered before the pool
grants it, so fifty connections declaring 100 MiB frames cost the broker
the pool's size, not 5 GB.

The grant rule:

- a frame of at most ``large`` bytes (half the capacity unless told) is
  granted when it fits in what is available; frames wait in arrival order,
  but a waiting frame never holds back a later one that fits (memory is
  never left idle while a request could use it);
- a larger frame is granted when no other large frame is held, whatever
  the small frames hold: large frames are read one at a time beside the
  shared budget, so that a stream of maximum-size frames (hostile or not)
  never stalls the small requests of every other client, and a frame
  larger than the whole capacity still makes progress. Kafka's pool,
  non-strict, lets one request overshoot too: the memory held stays below
  ``capacity`` plus one frame of ``socket.request.max.bytes``.

A capacity of 0 or less is unbounded (Kafka's ``MemoryPool.NONE`` for
``queued.max.request.bytes=-1``): every request is granted at once.

The same class with ``large=capacity`` counts requests in units of one:
``queued.max.requests`` bounds the frames read ahead of their connection's
next request (pipelined) and not yet taken up, across all connections —
Kafka's ``RequestChannel`` queue bounds the requests waiting for a handler
thread, and reads one request per connection at a time; every Kavka
connection may read its next request too (see ``kavka.server.network``).

Waiting: ``wait(size, callback)`` registers a callback that the pool calls
(synchronously, from ``release``) once ``size`` would be granted; the
callback then asks ``try_allocate`` itself, which succeeds unless it asks
another pool first. ``Waiter.cancel()`` withdraws (a connection closing).
Counters for the metrics: ``denied`` (requests that had to wait) and
``depleted_s`` (seconds during which some request was waiting), as Kafka's
``MemoryPoolDepletedTimeTotal``.

Event loop only (not thread-safe).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable


class Waiter:
    """A request waiting for ``size`` units; ``cancel()`` withdraws it."""

    __slots__ = ("size", "callback", "cancelled", "_pool")

    def __init__(self, pool: MemoryPool, size: int, callback: Callable[[], None]) -> None:
        self.size = size
        self.callback = callback
        self.cancelled = False
        self._pool = pool

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self._pool._withdraw(self)


class MemoryPool:
    """See the module docstring. ``capacity`` <= 0: unbounded."""

    __slots__ = ("capacity", "large", "used", "large_held", "denied", "_waiters", "_depleted_since",
                 "_depleted_total", "_clock")

    def __init__(self, capacity: int, *, large: int | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = capacity
        # Frames above this are read one at a time beside the budget.
        self.large = (capacity // 2 if large is None else large) if capacity > 0 else 0
        self.used = 0  # units granted to small requests and not yet released
        self.large_held = 0  # the size of the large request granted, 0 when none
        self.denied = 0
        self._waiters: list[Waiter] = []
        self._depleted_since: float | None = None
        self._depleted_total = 0.0
        self._clock = clock

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    @property
    def available(self) -> int:
        """Units a small request may still take (the capacity when unbounded)."""
        return self.capacity - self.used if self.capacity > 0 else sys.maxsize

    @property
    def held(self) -> int:
        """Everything granted and not released, small and large."""
        return self.used + self.large_held

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def depleted_s(self) -> float:
        """Seconds during which at least one request waited."""
        if self._depleted_since is None:
            return self._depleted_total
        return self._depleted_total + self._clock() - self._depleted_since

    def fits(self, size: int) -> bool:
        if self.capacity <= 0:
            return True
        if size > self.large:
            return self.large_held == 0
        return self.used + size <= self.capacity

    def try_allocate(self, size: int) -> bool:
        """Take ``size`` units if they are granted now."""
        if self.capacity <= 0:
            return True
        if size > self.large:
            if self.large_held:
                return False
            self.large_held = size
            return True
        if self.used + size > self.capacity:
            return False
        self.used += size
        return True

    def release(self, size: int) -> None:
        """Give back units granted by ``try_allocate``; waiters that now fit
        are called, oldest first."""
        if self.capacity <= 0:
            return
        if size > self.large:
            self.large_held = 0
        else:
            self.used -= size
        if self._waiters:
            self._wake()

    def wait(self, size: int, callback: Callable[[], None]) -> Waiter:
        """Call ``callback`` once ``size`` units would be granted."""
        waiter = Waiter(self, size, callback)
        self._waiters.append(waiter)
        self.denied += 1
        if self._depleted_since is None:
            self._depleted_since = self._clock()
        return waiter

    def _wake(self) -> None:
        # A callback may allocate (it is meant to), wait again on its next
        # frame (appended to the live list, looked at in turn) or cancel
        # other waiters (a connection closing): hence the index walk.
        waiters = self._waiters
        i = 0
        while i < len(waiters):
            w = waiters[i]
            if self.fits(w.size):
                del waiters[i]
                w.cancelled = True  # done: a later cancel() is a no-op
                w.callback()
            else:
                i += 1
            if self.used >= self.capacity and self.large_held:
                break  # nothing more can fit
        self._note_depletion()

    def _withdraw(self, waiter: Waiter) -> None:
        with contextlib.suppress(ValueError):  # already called
            self._waiters.remove(waiter)
        self._note_depletion()

    def _note_depletion(self) -> None:
        if not self._waiters and self._depleted_since is not None:
            self._depleted_total += self._clock() - self._depleted_since
            self._depleted_since = None

    def __repr__(self) -> str:
        if self.capacity <= 0:
            return "MemoryPool(unbounded)"
        return (f"MemoryPool(capacity={self.capacity}, used={self.used}, large_held={self.large_held}, "
                f"waiting={self.waiting})")
