"""DeleteGroups (key 42, KIP-229): delete Empty groups and their offsets
(tombstones in ``__consumer_offsets``). NON_EMPTY_GROUP while members
remain, GROUP_ID_NOT_FOUND for an unknown group. Versions 0-2. Each group needs
DELETE (Kafka's rule), else GROUP_AUTHORIZATION_FAILED."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 42
MIN_VERSION = 0
MAX_VERSION = 2


class DeleteGroupsHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
        groups = list(dict.fromkeys(request.groups_names))
        deletable = self.auth.filter_by_authorized(ctx, AclOperation.DELETE, ResourceType.GROUP, groups)
        done = await self.coordinator.delete_groups([g for g in groups if g in deletable])
        results = {g: done[g] if g in deletable else ErrorCode.GROUP_AUTHORIZATION_FAILED for g in groups}
        R = DeleteGroupsResponse
        return R(throttle_time_ms=0, results=[R.Results(group_id=g, error_code=int(e)) for g, e in results.items()])


def register(dispatcher: Dispatcher, handler: DeleteGroupsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
