"""``EventLoopMonitor``: how busy and how late the broker's one event loop
is, and how long the garbage collector stops it.

Kafka's network threads report NetworkProcessorAvgIdlePercent (the share
of time its processors wait in select); a Kavka broker's processors, request
handlers and replication all run on one event loop, so its idle share is
the loop's: 1 minus the loop thread's CPU time over the wall time of the
last period (about a second), exported as
``kafka_network_socketserver_networkprocessoravgidlepercent`` (0 to 1, as
Kafka's). Near 0 the loop is saturated and every request waits.

Lag (``kavka_event_loop_lag_seconds``, a histogram): every
``interval_s`` a callback made ready measures how long it waits before it
runs — the time any task woken now (a response, a follower's fetch)
waits for the loop to finish what is queued before it. GC pauses
(``kavka_gc_pause_seconds{generation}``): the time of each collection,
from ``gc.callbacks``; the loop stands still for all of it.

Start and stop on the loop; the GC callback may run on any thread (it
only observes a histogram, which locks).
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

from prometheus_client import CollectorRegistry, Histogram

LAG_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
GC_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
IDLE_PERIOD_S = 1.0


class EventLoopMonitor:
    """See the module docstring. ``idle_share`` is the last period's."""

    def __init__(self, registry: CollectorRegistry, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.lag = Histogram("kavka_event_loop_lag_seconds",
                             "How long a callback made ready waits for the event loop to run it",
                             buckets=LAG_BUCKETS, registry=registry)
        self.gc_pause = Histogram("kavka_gc_pause_seconds", "Time of each garbage collection (the loop stops)",
                                  ["generation"], buckets=GC_BUCKETS, registry=registry)
        self._gc_pause_by_generation = [self.gc_pause.labels(str(g)) for g in range(3)]
        self.idle_share = 1.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._period_wall = 0.0
        self._period_cpu = 0.0
        self._gc_started = 0.0

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._period_wall, self._period_cpu = time.perf_counter(), time.thread_time()
        self._timer = self._loop.call_later(self.interval_s, self._probe)
        gc.callbacks.append(self._on_gc)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def _probe(self) -> None:
        loop = self._loop
        if loop is None or self._timer is None:
            return
        loop.call_soon(self._measure, time.perf_counter())
        now = time.perf_counter()
        if now - self._period_wall >= IDLE_PERIOD_S:
            cpu = time.thread_time()
            busy = (cpu - self._period_cpu) / (now - self._period_wall)
            self.idle_share = min(1.0, max(0.0, 1.0 - busy))
            self._period_wall, self._period_cpu = now, cpu
        self._timer = loop.call_later(self.interval_s, self._probe)

    def _measure(self, ready_at: float) -> None:
        self.lag.observe(time.perf_counter() - ready_at)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif phase == "stop" and self._gc_started:
            generation = info.get("generation", 0)
            if 0 <= generation < 3:
                self._gc_pause_by_generation[generation].observe(time.perf_counter() - self._gc_started)
            self._gc_started = 0.0
