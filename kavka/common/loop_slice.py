"""``LoopSlice``: a long stretch of synchronous work on the event loop, cut
into slices so that what became ready meanwhile runs between them.

A broker runs request handling, replication and the controller on one
asyncio event loop (docs/ARCHITECTURE.md, "Threads"). Kafka runs its
controller on a thread of its own (ControllerEventManager), so a failover's
state changes never hold up the request handler threads. Here the
controller's work over thousands of partitions between two awaits (decoding
the state znodes it read, deciding and recording their new states, logging
them, queueing their LeaderAndIsr) is plain Python on the loop: on a broker
failure at 10,000 partitions one such stretch held the controller's broker
for half a second, and the clients' Produce and Metadata requests and the
followers' fetches on that broker waited for it (bench/README.md,
"failover.py --processes").

The worker calls ``await slice.pause()`` between units of work; once
``slice_s`` of work has run since the loop last had a turn, ``pause`` hands
it one turn (``asyncio.sleep(0)``: the loop polls its sockets and runs
every ready callback and task once) before the work goes on. A pause that
is not due costs a clock read.

Used by one task at a time (or by tasks of one operation that share the
budget: each resumes a fresh slice once the loop has had its turn).
"""

from __future__ import annotations

import asyncio
import time

# Long enough that the turns cost nothing measurable (a turn is a poll of
# the selector and whatever became ready), short enough that a request
# arriving meanwhile waits for at most this much of the work.
DEFAULT_SLICE_S = 0.005


class LoopSlice:
    """See module doc."""

    __slots__ = ("slice_s", "_since", "turns")

    def __init__(self, slice_s: float = DEFAULT_SLICE_S) -> None:
        if slice_s <= 0:
            raise ValueError(f"slice_s must be positive, got {slice_s}")
        self.slice_s = slice_s
        self._since = time.perf_counter()
        self.turns = 0  # turns handed to the loop so far

    async def pause(self) -> None:
        """Hand the loop a turn if this slice is used up."""
        if time.perf_counter() - self._since < self.slice_s:
            return
        await asyncio.sleep(0)
        self.turns += 1
        self._since = time.perf_counter()
