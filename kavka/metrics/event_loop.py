"""``EventLoopMonitor``: how busy and how late the broker's one event loop
is, and how long the garbage collector stops it.

Kafka's network threads report NetworkProcessorAvgIdlePercent (the share
of time its processors wait in select); a Kavka broker's processors, request
handlers and replication all run on one event loop, so its idle share is
the loop's: the share of the last period (about a second) its thread
neither ran nor waited for a CPU to run on (Linux's per-thread
``schedstat``: time on a CPU and time runnable in the run queue; a thread
starved of CPU by the host is busy, not idle), exported as
``kafka_network_socketserver_networkprocessoravgidlepercent`` (0 to 1, as
Kafka's). Near 0 the loop is saturated and every request waits. Where
``schedstat`` is missing, the thread's CPU time alone.

Lag (``kavka_event_loop_lag_seconds``, a histogram): every
``interval_s`` a watchdog thread hands the loop a callback
(``call_soon_threadsafe``, as an I/O event would wake it) and the callback
measures how long it waited to run: what any task woken at that moment (a
response, a follower's fetch) waits for the loop to finish what it is
doing. A loop blocked for 300 ms shows as a sample near 300 ms; the
samples do not depend on the loop's timer resolution (libuv's is a
millisecond). GC pauses (``kavka_gc_pause_seconds{generation}``): the time
of each collection, from ``gc.callbacks``; the loop stands still for all
of it.

Start and stop on the loop; the watchdog thread only reads the clock and
posts; the GC callback may run on any thread (it only observes a
histogram, which locks).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, disable_created_metrics

# No <name>_created series beside the histograms (the client's default): a
# broker process exports only what its tables name.
disable_created_metrics()

LAG_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
GC_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
IDLE_PERIOD_S = 1.0
SCHEDSTAT = "/proc/thread-self/schedstat"


def _thread_busy_seconds() -> float:
    """The calling thread's time on a CPU plus its time runnable but
    waiting for one (Linux), else its CPU time."""
    try:
        with open(SCHEDSTAT, "rb") as f:
            running_ns, waiting_ns = f.read().split()[:2]
        return (int(running_ns) + int(waiting_ns)) / 1e9
    except (OSError, ValueError):
        return time.thread_time()


class EventLoopMonitor:
    """See the module docstring. ``idle_share`` is the last period's."""

    def __init__(self, registry: CollectorRegistry, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.lag = Histogram("kavka_event_loop_lag_seconds",
                             "How long a callback handed to the event loop waits for it to run",
                             buckets=LAG_BUCKETS, registry=registry)
        self.gc_pause = Histogram("kavka_gc_pause_seconds", "Time of each garbage collection (the loop stops)",
                                  ["generation"], buckets=GC_BUCKETS, registry=registry)
        self._gc_pause_by_generation = [self.gc_pause.labels(str(g)) for g in range(3)]
        self.idle_share = 1.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._period_wall = 0.0
        self._period_cpu = 0.0
        self._gc_started = 0.0

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._period_wall, self._period_cpu = time.perf_counter(), _thread_busy_seconds()
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, name="event-loop-monitor", daemon=True)
        self._thread.start()
        gc.callbacks.append(self._on_gc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def _watch(self) -> None:
        """The watchdog thread: post a probe every ``interval_s``."""
        loop = self._loop
        assert loop is not None
        while not self._stop.wait(self.interval_s):
            try:
                loop.call_soon_threadsafe(self._measure, time.perf_counter())
            except RuntimeError:  # the loop is closed
                return

    def _measure(self, posted_at: float) -> None:
        now = time.perf_counter()
        self.lag.observe(now - posted_at)
        if now - self._period_wall >= IDLE_PERIOD_S:
            busy_s = _thread_busy_seconds()  # the loop thread's: _measure runs on the loop
            busy = (busy_s - self._period_cpu) / (now - self._period_wall)
            self.idle_share = min(1.0, max(0.0, 1.0 - busy))
            self._period_wall, self._period_cpu = now, busy_s

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif phase == "stop" and self._gc_started:
            generation = info.get("generation", 0)
            if 0 <= generation < 3:
                self._gc_pause_by_generation[generation].observe(time.perf_counter() - self._gc_started)
            self._gc_started = 0.0
