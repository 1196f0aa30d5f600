"""ListGroups (key 16): the groups this broker coordinates.

Versions 0-5: v4 filters by state (KIP-518) and returns each state; v5
(KIP-848) filters by group type and returns each group's type. Every group
here is a classic group (the protocol of JoinGroup/SyncGroup), so a types
filter without ``classic`` (case-insensitive, as Kafka's GroupType.parse)
lists none, as Kafka's group coordinator without KIP-848 groups answers.
COORDINATOR_LOAD_IN_PROGRESS while any offsets partition is loading.
With DESCRIBE on the cluster every group is listed, otherwise only those
the session may DESCRIBE (Kafka's rule).
"""

from __future__ import annotations

from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import ListGroupsRequest, ListGroupsResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 16
MIN_VERSION = 0
MAX_VERSION = 5
CLASSIC = "classic"


class ListGroupsHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
        states = set(request.states_filter) if ctx.api_version >= 4 else None
        types = {t.lower() for t in request.types_filter} if ctx.api_version >= 5 else set()
        code, groups = self.coordinator.list_groups(states)
        if types and CLASSIC not in types:
            groups = []
        if not self.auth.authorize_cluster(ctx, AclOperation.DESCRIBE, log_if_denied=False):
            visible = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP,
                                                     (g.group_id for g in groups), log_if_denied=False)
            groups = [g for g in groups if g.group_id in visible]
        R = ListGroupsResponse
        return R(throttle_time_ms=0, error_code=int(code), groups=[
            R.Groups(group_id=g.group_id, protocol_type=g.protocol_type or "", group_state=g.state.value,
                     group_type=CLASSIC)
            for g in groups])


def register(dispatcher: Dispatcher, handler: ListGroupsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
