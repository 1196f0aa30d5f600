"""EventLoopMonitor: the loop's idle share, its lag, GC pauses."""

from __future__ import annotations

import asyncio
import gc
import time

from prometheus_client import CollectorRegistry

from kavka.metrics.event_loop import IDLE_PERIOD_S, EventLoopMonitor


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_an_idle_loop_is_idle_and_a_busy_one_is_not() -> None:
    registry = CollectorRegistry()
    # few wake-ups: on a loaded host each one may wait in the run queue, which counts as busy
    monitor = EventLoopMonitor(registry, interval_s=0.1)
    monitor.start()
    try:
        await asyncio.sleep(IDLE_PERIOD_S * 1.5)
        assert monitor.idle_share > 0.5  # sleeping: the thread used next to no CPU
        deadline = time.monotonic() + IDLE_PERIOD_S * 2.5
        while time.monotonic() < deadline:  # busy: the loop thread spins, yielding now and then
            spin_until = time.perf_counter() + 0.05
            while time.perf_counter() < spin_until:
                pass
            await asyncio.sleep(0)
        assert monitor.idle_share < 0.5
    finally:
        monitor.stop()


async def test_a_blocked_loop_shows_as_lag() -> None:
    registry = CollectorRegistry()
    monitor = EventLoopMonitor(registry, interval_s=0.01)
    monitor.start()
    try:
        # The first probes, however long a loaded host keeps the watchdog thread waiting.
        for _ in range(200):  # at most 10 s
            if _sample(registry, "kavka_event_loop_lag_seconds_count") > 0:
                break
            await asyncio.sleep(0.05)
        assert _sample(registry, "kavka_event_loop_lag_seconds_count") > 0
        fast = _sample(registry, "kavka_event_loop_lag_seconds_bucket", le="0.1")
        slow_before = _sample(registry, "kavka_event_loop_lag_seconds_count") - fast
        time.sleep(0.3)  # noqa: ASYNC251 - the loop blocked on purpose: a probe posted meanwhile waits for it
        await asyncio.sleep(0.05)
        slow_after = (_sample(registry, "kavka_event_loop_lag_seconds_count")
                      - _sample(registry, "kavka_event_loop_lag_seconds_bucket", le="0.1"))
        assert slow_after >= slow_before + 1
        assert _sample(registry, "kavka_event_loop_lag_seconds_sum") >= 0.2
    finally:
        monitor.stop()


async def test_gc_pauses_are_timed_and_the_callback_goes_on_stop() -> None:
    registry = CollectorRegistry()
    monitor = EventLoopMonitor(registry)
    monitor.start()
    gc.collect()
    assert _sample(registry, "kavka_gc_pause_seconds_count", generation="2") == 1
    monitor.stop()
    gc.collect()
    assert _sample(registry, "kavka_gc_pause_seconds_count", generation="2") == 1
    assert monitor._on_gc not in gc.callbacks
