"""DescribeGroups (key 15): state, protocol and members of groups.

Versions 0-5: v3 authorized operations (INT32_MIN: not computed, KIP-430);
v4 group.instance.id. Member metadata and assignments are filled only when
the group is Stable, as in Kafka; an unknown group is described as Dead.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.group.state import GroupState
from kavka.protocol.messages import DescribeGroupsRequest, DescribeGroupsResponse
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 15
MIN_VERSION = 0
MAX_VERSION = 5


class DescribeGroupsHandler:
    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator

    async def __call__(self, ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
        R = DescribeGroupsResponse
        out = []
        for group_id in request.groups:
            code, g = self.coordinator.describe_group(group_id)
            if code is not ErrorCode.NONE or g is None:
                out.append(R.Groups(error_code=int(code), group_id=group_id,
                                    group_state=GroupState.DEAD.value, protocol_type="", protocol_data=""))
                continue
            stable = g.state is GroupState.STABLE
            members = [R.Groups.Members(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                        client_id=m.client_id, client_host=m.client_host,
                                        member_metadata=m.metadata_for(g.protocol or "") if stable else b"",
                                        member_assignment=m.assignment if stable else b"")
                       for m in g.members.values()]
            out.append(R.Groups(error_code=0, group_id=group_id, group_state=g.state.value,
                                protocol_type=g.protocol_type or "", protocol_data=g.protocol or "",
                                members=members))
        return R(throttle_time_ms=0, groups=out)


def register(dispatcher: Dispatcher, handler: DescribeGroupsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
