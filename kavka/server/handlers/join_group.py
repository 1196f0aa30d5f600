"""JoinGroup (key 11): join or rejoin a group; answered when the rebalance
completes (``kavka.group.membership``).

Versions 0-9: v1 rebalance timeout (v0 uses the session timeout, KIP-62);
v4+ a first join without a member id gets MEMBER_ID_REQUIRED (KIP-394);
v5 group.instance.id (KIP-345); v7 protocol type and name in the answer
(KIP-559); v8 a reason (logged); v9 skip_assignment (always false here).
Needs READ on the group (Kafka's rule), else GROUP_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.group.membership import JoinRequest, JoinResult
from kavka.protocol.messages import JoinGroupRequest, JoinGroupResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 11
MIN_VERSION = 0
MAX_VERSION = 9


class JoinGroupHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
        version = ctx.api_version
        rebalance = request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms
        if not self.auth.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            result = JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        else:
            result = await self.coordinator.join_group(JoinRequest(
                request.group_id, request.member_id, request.group_instance_id if version >= 5 else None,
                ctx.header.client_id or "", ctx.client_host, request.session_timeout_ms, rebalance,
                request.protocol_type, [(p.name, bytes(p.metadata)) for p in request.protocols],
                require_known_member=version >= 4))
        R = JoinGroupResponse
        return R(throttle_time_ms=0, error_code=int(result.error), generation_id=result.generation,
                 protocol_type=result.protocol_type, protocol_name=result.protocol if version >= 7 else
                 (result.protocol or ""), leader=result.leader, member_id=result.member_id,
                 members=[R.Members(member_id=m, group_instance_id=i, metadata=meta)
                          for m, i, meta in result.members])


def register(dispatcher: Dispatcher, handler: JoinGroupHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
