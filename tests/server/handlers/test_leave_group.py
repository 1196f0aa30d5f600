"""The LeaveGroup handler at every version it serves, against a real
``GroupCoordinator``: the response encodes at the request's version
(v0-2 have no member list: librdkafka < 2.x sends v1, and a v1 response
carrying the v3+ ``members`` could not be encoded, so the connection was
closed under a client that was leaving cleanly), and carries the
member's own answer - in the top-level error before v3, per member from
v3 on."""

from __future__ import annotations

import asyncio

import pytest

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupConfig, GroupCoordinator
from kavka.group.membership import JoinRequest
from kavka.group.state import GroupState
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import LeaveGroupRequest
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.leave_group import API_KEY, MAX_VERSION, MIN_VERSION, LeaveGroupHandler
from kavka.server.network import RequestContext


class MemoryGroupLog:
    def __init__(self) -> None:
        self.batches: list[bytes] = []

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        self.batches.append(batch)
        return ErrorCode.NONE

    def read_all(self, partition: int):
        yield from self.batches

    async def wait_committed(self, partition, still_wanted) -> bool:
        return still_wanted()  # every append here is committed at once


async def _one_member_group() -> tuple[GroupCoordinator, str]:
    """A coordinator owning group "g", which has one Stable member."""
    coordinator = GroupCoordinator(1, GroupConfig(num_partitions=1, initial_rebalance_delay_ms=0), MemoryGroupLog())
    coordinator.on_elected(0, 1)
    for _ in range(200):
        if 0 in coordinator.owned:
            break
        await asyncio.sleep(0.01)
    join = JoinRequest("g", "", None, "leaver", "/127.0.0.1", 10000, 10000, "consumer", [("range", b"")])
    joined = await coordinator.join_group(join)
    assert joined.error is ErrorCode.NONE and joined.generation == 1
    synced = await coordinator.sync_group("g", 1, joined.member_id, None, {joined.member_id: b""})
    assert synced.error is ErrorCode.NONE
    return coordinator, joined.member_id


def _context(version: int) -> RequestContext:
    return RequestContext(RequestHeader(API_KEY, version, 7, "leaver"), "conn-1", "127.0.0.1", 40000,
                          "PLAINTEXT", 0)


def _request(version: int, member_id: str) -> LeaveGroupRequest:
    if version >= 3:
        return LeaveGroupRequest(group_id="g", members=[LeaveGroupRequest.Members(member_id=member_id)])
    return LeaveGroupRequest(group_id="g", member_id=member_id)


def _round_trip(version: int, response):
    _, decoded = decode_response(API_KEY, version, encode_response(API_KEY, version, 7, response))
    return decoded


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
async def test_leave_answers_at_the_request_version(version):
    coordinator, member = await _one_member_group()
    handler = LeaveGroupHandler(coordinator, AuthHelper(None))
    left = _round_trip(version, await handler(_context(version), _request(version, member)))
    assert left.error_code == 0
    assert coordinator.groups["g"].state is GroupState.EMPTY and not coordinator.groups["g"].members
    again = _round_trip(version, await handler(_context(version), _request(version, member)))
    if version >= 3:
        assert again.error_code == 0
        assert [(m.member_id, m.error_code) for m in left.members] == [(member, 0)]
        assert [(m.member_id, m.error_code) for m in again.members] == [
            (member, int(ErrorCode.UNKNOWN_MEMBER_ID))]
    else:
        assert again.error_code == int(ErrorCode.UNKNOWN_MEMBER_ID)
