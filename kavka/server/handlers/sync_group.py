"""SyncGroup (key 14): the leader sends the assignment, every member gets
its own share (``kavka.group.membership``).

Versions 0-5: v3 group.instance.id (KIP-345); v5 protocol type and name
both ways (KIP-559). Needs READ on the group (Kafka's rule), else
GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.group.membership import SyncResult
from kavka.protocol.messages import SyncGroupRequest, SyncGroupResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 14
MIN_VERSION = 0
MAX_VERSION = 5


class SyncGroupHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
        version = ctx.api_version
        if not self.auth.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            result = SyncResult(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        else:
            result = await self.coordinator.sync_group(
                request.group_id, request.generation_id, request.member_id,
                request.group_instance_id if version >= 3 else None,
                {a.member_id: bytes(a.assignment) for a in request.assignments})
        return SyncGroupResponse(throttle_time_ms=0, error_code=int(result.error),
                                 protocol_type=result.protocol_type, protocol_name=result.protocol,
                                 assignment=result.assignment)


def register(dispatcher: Dispatcher, handler: SyncGroupHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
