"""ListGroups (key 16): the groups this broker coordinates.

Versions 0-5: v4 filters by state (KIP-518) and returns each state; v5
(KIP-848) filters by group type and returns each group's type: ``classic``
(JoinGroup/SyncGroup) or ``consumer`` (ConsumerGroupHeartbeat, protocol
type ``consumer``, states Empty/Assigning/Reconciling/Stable); type names
are case-insensitive, as Kafka's GroupType.parse. The offsets kept for a
consumer group are part of it, not a classic group of their own.
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
CONSUMER = "consumer"


class ListGroupsHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
        states = set(request.states_filter) if ctx.api_version >= 4 else None
        types = {t.lower() for t in request.types_filter} if ctx.api_version >= 5 else set()
        code, classic = self.coordinator.list_groups(states)
        consumer = self.coordinator.list_consumer_groups()
        # (group id, protocol type, state, type)
        groups = [(g.group_id, g.protocol_type or "", g.state.value, CLASSIC) for g in classic
                  if not self.coordinator.consumer.knows(g.group_id)]
        groups += [(g.group_id, CONSUMER, g.state.value, CONSUMER) for g in consumer
                   if states is None or not states or g.state.value in states]
        if types:
            groups = [g for g in groups if g[3] in types]
        if not self.auth.authorize_cluster(ctx, AclOperation.DESCRIBE, log_if_denied=False):
            visible = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP,
                                                     (g[0] for g in groups), log_if_denied=False)
            groups = [g for g in groups if g[0] in visible]
        R = ListGroupsResponse
        return R(throttle_time_ms=0, error_code=int(code), groups=[
            R.Groups(group_id=gid, protocol_type=protocol_type, group_state=state, group_type=kind)
            for gid, protocol_type, state, kind in groups])


def register(dispatcher: Dispatcher, handler: ListGroupsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
