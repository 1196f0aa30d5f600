"""SyncGroup (key 14): the leader sends the assignment, every member gets
its own share (``kavka.group.membership``).

Versions 0-5: v3 group.instance.id (KIP-345); v5 protocol type and name
both ways (KIP-559).
"""

from __future__ import annotations

from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import SyncGroupRequest, SyncGroupResponse
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 14
MIN_VERSION = 0
MAX_VERSION = 5


class SyncGroupHandler:
    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator

    async def __call__(self, ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
        version = ctx.api_version
        result = await self.coordinator.sync_group(
            request.group_id, request.generation_id, request.member_id,
            request.group_instance_id if version >= 3 else None,
            {a.member_id: bytes(a.assignment) for a in request.assignments})
        return SyncGroupResponse(throttle_time_ms=0, error_code=int(result.error),
                                 protocol_type=result.protocol_type, protocol_name=result.protocol,
                                 assignment=result.assignment)


def register(dispatcher: Dispatcher, handler: SyncGroupHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
