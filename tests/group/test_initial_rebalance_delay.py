"""group.initial.rebalance.delay.ms ends on the event loop's timer, not on
the wall clock: a wall clock that moved less than the delay (adjusted,
slewed, or frozen here) must not hold the first join of an empty group
until the rebalance timeout. librdkafka's 0030 hung four minutes on this
when a consumer joined a group its predecessor had just left."""

from __future__ import annotations

import asyncio

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupConfig, GroupCoordinator
from kavka.group.membership import JoinRequest


class MemoryGroupLog:
    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        return ErrorCode.NONE

    def read_all(self, partition: int):
        yield from ()

    async def wait_committed(self, partition, still_wanted) -> bool:
        return still_wanted()  # every append here is committed at once


async def test_initial_delay_ends_with_a_frozen_wall_clock():
    coordinator = GroupCoordinator(1, GroupConfig(num_partitions=1, initial_rebalance_delay_ms=100), MemoryGroupLog())
    coordinator.on_elected(0, 1)
    for _ in range(200):
        if 0 in coordinator.owned:
            break
        await asyncio.sleep(0.01)
    frozen = coordinator.now_ms()
    coordinator.manager.now_ms = lambda: frozen  # type: ignore[method-assign]
    # Rebalance timeout 30 s: the join must not wait for it.
    join = JoinRequest("g", "", None, "c", "/127.0.0.1", 30000, 30000, "consumer", [("range", b"")])
    joined = await asyncio.wait_for(coordinator.join_group(join), 5.0)
    assert joined.error is ErrorCode.NONE and joined.generation == 1
