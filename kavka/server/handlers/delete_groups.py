"""DeleteGroups (key 42, KIP-229): delete Empty groups and their offsets
(tombstones in ``__consumer_offsets``). NON_EMPTY_GROUP while members
remain, GROUP_ID_NOT_FOUND for an unknown group. Versions 0-2."""

from __future__ import annotations

from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import DeleteGroupsRequest, DeleteGroupsResponse
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 42
MIN_VERSION = 0
MAX_VERSION = 2


class DeleteGroupsHandler:
    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator

    async def __call__(self, ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
        results = await self.coordinator.delete_groups(list(dict.fromkeys(request.groups_names)))
        R = DeleteGroupsResponse
        return R(throttle_time_ms=0, results=[R.Results(group_id=g, error_code=int(e)) for g, e in results.items()])


def register(dispatcher: Dispatcher, handler: DeleteGroupsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
