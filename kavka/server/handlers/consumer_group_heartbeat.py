"""ConsumerGroupHeartbeat (key 68, KIP-848): a consumer-protocol member
joins (epoch 0), stays (its epoch), leaves (-1) or leaves as a static
member (-2); the answer carries its member id and epoch, the heartbeat
interval (``group.consumer.heartbeat.interval.ms``) and, when it changed,
the partitions it may own (``kavka.group.consumer_group``).

Versions 0-1: v0 may join with an empty member id (the coordinator makes
one); v1 consumers name themselves (KIP-1082: an empty member id is
INVALID_REQUEST) and may subscribe with a regular expression evaluated on
the broker (full match, internal topics excluded; one that does not
compile is INVALID_REGULAR_EXPRESSION). RE2 reads it, as Kafka's RE2/J
does: matching is linear in the topic name, whatever the pattern.

Authorization (Kafka's): READ on the group, else
GROUP_AUTHORIZATION_FAILED; DESCRIBE on every subscribed topic name, else
TOPIC_AUTHORIZATION_FAILED; a regex resolves only to topics the session may
DESCRIBE (KAFKA-18813), the others are left out silently. Topics of the
owned partitions are named by id (KIP-516).
"""

from __future__ import annotations

import uuid

from kavka.common.errors import ErrorCode
from kavka.group.consumer_group import HeartbeatRequest
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 68
MIN_VERSION = 0
MAX_VERSION = 1


class ConsumerGroupHeartbeatHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
                       ) -> ConsumerGroupHeartbeatResponse:
        R = ConsumerGroupHeartbeatResponse
        interval = self.coordinator.consumer.config.heartbeat_interval_ms

        def error(code: ErrorCode, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
            return R(throttle_time_ms=0, error_code=int(code), error_message=message or code.message,
                     member_epoch=0, heartbeat_interval_ms=0)

        if not self.auth.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            return error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if ctx.api_version >= 1 and not request.member_id:
            return error(ErrorCode.INVALID_REQUEST, "member id can't be empty (ConsumerGroupHeartbeat v1+)")
        names = request.subscribed_topic_names
        regex = request.subscribed_topic_regex if ctx.api_version >= 1 else None
        if names:
            allowed = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
            denied = sorted(set(names) - allowed)
            if denied:
                return error(ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"not authorized to describe topics {denied}")
        def describable(topics: set[str]) -> set[str]:
            return self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topics,
                                                  log_if_denied=False)

        owned: dict[uuid.UUID, frozenset[int]] | None = None
        if request.topic_partitions is not None:
            owned = {}
            for t in request.topic_partitions:
                owned[t.topic_id] = owned.get(t.topic_id, frozenset()) | frozenset(t.partitions)
        out = await self.coordinator.consumer_group_heartbeat(request.group_id, HeartbeatRequest(
            request.member_id, request.member_epoch, request.instance_id, request.rack_id,
            request.rebalance_timeout_ms, tuple(names) if names is not None else None, regex, request.server_assignor,
            owned, ctx.header.client_id or "", ctx.client_host), describable)
        if out.error is not ErrorCode.NONE:
            return error(out.error, out.message)
        assignment = None
        if out.assignment is not None:
            assignment = R.Assignment(topic_partitions=[
                R.Assignment.TopicPartitions(topic_id=t, partitions=sorted(ps))
                for t, ps in sorted(out.assignment.items(), key=lambda kv: kv[0].bytes)])
        return R(throttle_time_ms=0, error_code=0, error_message=None, member_id=out.member_id,
                 member_epoch=out.member_epoch, heartbeat_interval_ms=interval, assignment=assignment)


def register(dispatcher: Dispatcher, handler: ConsumerGroupHeartbeatHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)

