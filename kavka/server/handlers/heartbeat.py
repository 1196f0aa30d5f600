"""Heartbeat (key 12): a member is alive; REBALANCE_IN_PROGRESS tells it
to rejoin. Versions 0-4 (v3 group.instance.id, KIP-345)."""

from __future__ import annotations

from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import HeartbeatRequest, HeartbeatResponse
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 12
MIN_VERSION = 0
MAX_VERSION = 4


class HeartbeatHandler:
    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator

    async def __call__(self, ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
        code = self.coordinator.heartbeat(request.group_id, request.generation_id, request.member_id,
                                          request.group_instance_id if ctx.api_version >= 3 else None)
        return HeartbeatResponse(throttle_time_ms=0, error_code=int(code))


def register(dispatcher: Dispatcher, handler: HeartbeatHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
