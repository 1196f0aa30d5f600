"""The ListGroups handler against a real ``GroupCoordinator``: v5 (KIP-848)
names every group's type, ``classic`` or ``consumer``, and filters by type
as Kafka's coordinator does (case-insensitive).
librdkafka's ListConsumerGroups with a type filter sends v5 and expects the
type set."""

from __future__ import annotations

import asyncio

import pytest

from kavka.common.errors import ErrorCode
from kavka.group.consumer_group import HeartbeatRequest
from kavka.group.coordinator import GroupConfig, GroupCoordinator
from kavka.group.membership import JoinRequest
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import ListGroupsRequest
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.list_groups import API_KEY, MAX_VERSION, ListGroupsHandler
from kavka.server.network import RequestContext


class MemoryGroupLog:
    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        return ErrorCode.NONE

    def read_all(self, partition: int):
        yield from ()

    async def wait_committed(self, partition, still_wanted) -> bool:
        return still_wanted()  # every append here is committed at once


async def _coordinator_with_group() -> GroupCoordinator:
    coordinator = GroupCoordinator(1, GroupConfig(num_partitions=1, initial_rebalance_delay_ms=0), MemoryGroupLog())
    coordinator.on_elected(0, 1)
    for _ in range(200):
        if 0 in coordinator.owned:
            break
        await asyncio.sleep(0.01)
    join = JoinRequest("g", "", None, "c", "/127.0.0.1", 10000, 10000, "consumer", [("range", b"")])
    assert (await coordinator.join_group(join)).error is ErrorCode.NONE
    # a consumer-protocol group (KIP-848) whose only member left: kept, Empty
    for epoch in (0, -1):
        out = await coordinator.consumer_group_heartbeat("k", HeartbeatRequest(
            "m", epoch, rebalance_timeout_ms=30000, subscribed_topic_names=(), owned={}))
        assert out.error is ErrorCode.NONE
    return coordinator


async def _list(version: int, types: list[str]) -> list[tuple[str, str]]:
    handler = ListGroupsHandler(await _coordinator_with_group(), AuthHelper(None))
    ctx = RequestContext(RequestHeader(API_KEY, version, 7, "c"), "conn-1", "127.0.0.1", 40000, "PLAINTEXT", 0)
    request = ListGroupsRequest(states_filter=[], types_filter=types)
    response = await handler(ctx, request)
    _, decoded = decode_response(API_KEY, version, encode_response(API_KEY, version, 7, response))
    assert decoded.error_code == 0
    return [(g.group_id, g.group_type if version >= 5 else "") for g in decoded.groups]


async def test_v5_names_the_classic_type():
    assert MAX_VERSION >= 5
    assert await _list(5, []) == [("g", "classic"), ("k", "consumer")]


@pytest.mark.parametrize(("types", "listed"), [(["classic"], ["g"]), (["Classic", "consumer"], ["g", "k"]),
                                               (["consumer"], ["k"]), (["share"], [])])
async def test_v5_filters_by_type(types, listed):
    assert [g for g, _ in await _list(5, types)] == listed


async def test_v4_has_no_type():
    assert await _list(4, []) == [("g", ""), ("k", "")]
