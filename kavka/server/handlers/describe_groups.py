"""DescribeGroups (key 15): state, protocol and members of groups.

Versions 0-5: v3 authorized operations (KIP-430: INT32_MIN unless asked
for; asked for, the operations the session may do on the group); v4
group.instance.id. Member metadata and assignments are filled only when
the group is Stable, as in Kafka; an unknown group is described as Dead;
a consumer-protocol group (KIP-848) is GROUP_ID_NOT_FOUND, "not a classic
group", as Kafka answers (ConsumerGroupDescribe describes it).
Each group needs DESCRIBE (Kafka's rule), else it is answered
GROUP_AUTHORIZATION_FAILED with nothing about it.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.group.state import GroupState
from kavka.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 15
MIN_VERSION = 0
MAX_VERSION = 5


class DescribeGroupsHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
        R = DescribeGroupsResponse
        out = []
        described = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, request.groups)
        include_ops = ctx.api_version >= 3 and request.include_authorized_operations
        for group_id in request.groups:
            if group_id not in described:
                out.append(R.Groups(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED), group_id=group_id,
                                    group_state="", protocol_type="", protocol_data="", members=[]))
                continue
            if self.coordinator.consumer.knows(group_id):
                # Kafka: DescribeGroups describes classic groups; a consumer
                # group is described by ConsumerGroupDescribe
                out.append(R.Groups(error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                                    error_message=f"group {group_id!r} is not a classic group", group_id=group_id,
                                    group_state=GroupState.DEAD.value, protocol_type="", protocol_data=""))
                continue
            code, g = self.coordinator.describe_group(group_id)
            if code is not ErrorCode.NONE:
                out.append(R.Groups(error_code=int(code), group_id=group_id,
                                    group_state=GroupState.DEAD.value, protocol_type="", protocol_data=""))
                continue
            if g is None:  # unknown: described as Dead, without error (Kafka's DeadGroup summary)
                entry = R.Groups(error_code=0, group_id=group_id, group_state=GroupState.DEAD.value,
                                 protocol_type="", protocol_data="", members=[])
            else:
                stable = g.state is GroupState.STABLE
                members = [R.Groups.Members(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                            client_id=m.client_id, client_host=m.client_host,
                                            member_metadata=m.metadata_for(g.protocol or "") if stable else b"",
                                            member_assignment=m.assignment if stable else b"")
                           for m in g.members.values()]
                entry = R.Groups(error_code=0, group_id=group_id, group_state=g.state.value,
                                 protocol_type=g.protocol_type or "", protocol_data=g.protocol or "",
                                 members=members)
            if include_ops:
                entry.authorized_operations = self.auth.authorized_operations(ctx, ResourceType.GROUP, group_id)
            out.append(entry)
        return R(throttle_time_ms=0, groups=out)


def register(dispatcher: Dispatcher, handler: DescribeGroupsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
