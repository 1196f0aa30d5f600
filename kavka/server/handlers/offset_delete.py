"""OffsetDelete (key 47, KIP-496): delete a group's committed offsets of
some partitions; GROUP_SUBSCRIBED_TO_TOPIC for a topic the live group still
consumes. Version 0. Needs DELETE on the group (else
GROUP_AUTHORIZATION_FAILED for the request) and READ on each topic (else
its partitions are TOPIC_AUTHORIZATION_FAILED), as Kafka."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import OffsetDeleteRequest, OffsetDeleteResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 47
MIN_VERSION = 0
MAX_VERSION = 0


class OffsetDeleteHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        R = OffsetDeleteResponse
        if not self.auth.authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
            return R(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED), throttle_time_ms=0, topics=[])
        readable = self.auth.filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                  (t.name for t in request.topics for _ in t.partitions))
        wanted = [(t.name, p.partition_index) for t in request.topics if t.name in readable for p in t.partitions]
        code, results = await self.coordinator.delete_offsets(request.group_id, wanted)
        results = {**results, **{(t.name, p.partition_index): ErrorCode.TOPIC_AUTHORIZATION_FAILED
                                 for t in request.topics if t.name not in readable for p in t.partitions}}
        by_topic: dict[str, list] = {}
        if code is ErrorCode.NONE:
            for (topic, partition), e in results.items():
                by_topic.setdefault(topic, []).append(R.Topics.Partitions(partition_index=partition,
                                                                          error_code=int(e)))
        return R(error_code=int(code), throttle_time_ms=0,
                 topics=[R.Topics(name=t, partitions=ps) for t, ps in by_topic.items()])


def register(dispatcher: Dispatcher, handler: OffsetDeleteHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
