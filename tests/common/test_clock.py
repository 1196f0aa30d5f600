"""The clock seam: the system clock reads milliseconds since the epoch;
the manual clock moves only when told to."""

from __future__ import annotations

import time

from kavka.common.clock import Clock, ManualClock, SystemClock


def test_system_clock_reads_wall_milliseconds():
    clock: Clock = SystemClock()
    before = time.time_ns() // 1_000_000
    now = clock.milliseconds()
    assert before <= now <= time.time_ns() // 1_000_000


def test_manual_clock_moves_only_when_advanced():
    clock = ManualClock(1_000)
    assert clock.milliseconds() == 1_000 == clock.milliseconds()
    assert clock.advance(250) == 1_250 == clock.milliseconds()
