"""LeaveGroup (key 13): members leave; the group rebalances.

Versions 0-5: v0-2 one member id; v3+ a batch of members, each by member
id and/or group.instance.id with its own error (KIP-345); v5 a reason.
Needs READ on the group (Kafka's rule), else GROUP_AUTHORIZATION_FAILED
for the request (no member answers).
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import LeaveGroupRequest, LeaveGroupResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 13
MIN_VERSION = 0
MAX_VERSION = 5


class LeaveGroupHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
        version = ctx.api_version
        if not self.auth.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            return LeaveGroupResponse(throttle_time_ms=0, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
                                      members=[])
        if version >= 3:
            leaving = [(m.member_id, m.group_instance_id) for m in request.members]
        else:
            leaving = [(request.member_id, None)]
        code, results = self.coordinator.leave_group(request.group_id, leaving)
        R = LeaveGroupResponse
        if version < 3:
            # One member and no member list before v3 (it is not ignorable):
            # the member's own answer is the request's.
            if results and int(code) == 0:
                code = results[0][2]
            return R(throttle_time_ms=0, error_code=int(code))
        return R(throttle_time_ms=0, error_code=int(code),
                 members=[R.Members(member_id=m, group_instance_id=i, error_code=int(e)) for m, i, e in results])


def register(dispatcher: Dispatcher, handler: LeaveGroupHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
