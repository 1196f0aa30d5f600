"""Heartbeat (key 12): a member is alive; REBALANCE_IN_PROGRESS tells it
to rejoin. Versions 0-4 (v3 group.instance.id, KIP-345). Needs READ on the
group (Kafka's rule), else GROUP_AUTHORIZATION_FAILED."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import HeartbeatRequest, HeartbeatResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 12
MIN_VERSION = 0
MAX_VERSION = 4


class HeartbeatHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
        if not self.auth.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            return HeartbeatResponse(throttle_time_ms=0, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        code = self.coordinator.heartbeat(request.group_id, request.generation_id, request.member_id,
                                          request.group_instance_id if ctx.api_version >= 3 else None)
        return HeartbeatResponse(throttle_time_ms=0, error_code=int(code))


def register(dispatcher: Dispatcher, handler: HeartbeatHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
