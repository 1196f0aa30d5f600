"""``LoopSlice``: long synchronous work hands the event loop a turn once a
slice of it has run, and only then."""

from __future__ import annotations

import asyncio
import time

import pytest

from kavka.common.loop_slice import DEFAULT_SLICE_S, LoopSlice
from tests.common.loop_ticker import Ticker


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def test_a_pause_before_the_slice_is_used_up_does_not_yield() -> None:
    ticker = Ticker()
    await asyncio.sleep(0)  # the ticker is running
    s = LoopSlice(slice_s=60.0)
    before = ticker.ticks
    for _ in range(1000):
        await s.pause()
    assert ticker.ticks == before
    assert s.turns == 0
    await ticker.stop()


async def test_every_used_up_slice_hands_the_loop_one_turn() -> None:
    ticker = Ticker()
    await asyncio.sleep(0)
    s = LoopSlice(slice_s=0.002)
    before = ticker.ticks
    for _ in range(5):
        busy(0.003)  # more than a slice of work
        await s.pause()
    assert s.turns == 5
    assert ticker.ticks - before == 5  # one turn each, no more
    await ticker.stop()


async def test_a_new_slice_starts_after_the_turn() -> None:
    s = LoopSlice(slice_s=0.05)
    busy(0.06)
    await s.pause()
    assert s.turns == 1
    await s.pause()  # the turn just started a fresh slice
    assert s.turns == 1


async def test_tasks_sharing_a_slice_all_let_the_loop_turn() -> None:
    """Two workers of one operation use up the slice in the same loop turn:
    neither runs on before the loop has had its turn."""
    ticker = Ticker()
    await asyncio.sleep(0)
    s = LoopSlice(slice_s=0.001)
    turns_seen: dict[str, int] = {}

    async def worker(name: str) -> None:
        start = ticker.ticks
        busy(0.002)
        await s.pause()
        turns_seen[name] = ticker.ticks - start

    await asyncio.gather(worker("a"), worker("b"))
    assert turns_seen["a"] >= 1 and turns_seen["b"] >= 1
    await ticker.stop()


def test_the_default_slice_is_a_few_milliseconds() -> None:
    assert 0 < DEFAULT_SLICE_S <= 0.01
    assert LoopSlice().slice_s == DEFAULT_SLICE_S


@pytest.mark.parametrize("bad", [0, -0.001])
def test_a_slice_must_be_positive(bad: float) -> None:
    with pytest.raises(ValueError, match="slice_s must be positive"):
        LoopSlice(slice_s=bad)
