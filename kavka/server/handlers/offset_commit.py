"""OffsetCommit (key 8): store a group's consumed positions in
``__consumer_offsets`` (``kavka.group.offsets``).

Versions 0-9: v1 generation and member id; v2-4 a retention time (the
broker's ``offsets.retention.minutes`` governs, as in Kafka since KIP-211);
v6 the committed leader epoch; v7 group.instance.id. v10's topic ids are
not served.

A partition the broker's metadata does not know is answered
UNKNOWN_TOPIC_OR_PARTITION and not stored, as Kafka's
``KafkaApis.handleOffsetCommitRequest`` does: a client committing to a
partition that does not exist (librdkafka's suite, 0030/0112) must learn so
rather than be told its offset is safe.

Authorization (Kafka's, asked first): READ on the group (else every
partition is GROUP_AUTHORIZATION_FAILED) and READ on each topic (else its
partitions are TOPIC_AUTHORIZATION_FAILED, whether it exists or not).
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import OffsetCommitRequest, OffsetCommitResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 8
MIN_VERSION = 0
MAX_VERSION = 9


class OffsetCommitHandler:
    def __init__(self, coordinator: GroupCoordinator, metadata: MetadataCache, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.metadata = metadata
        self.auth = auth

    def _denied(self, ctx: RequestContext, group_id: str,
                order: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        if not self.auth.authorize(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
            return dict.fromkeys(order, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        readable = self.auth.filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, (t for t, _ in order))
        return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in order if tp[0] not in readable}

    async def __call__(self, ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
        version = ctx.api_version
        commits = {}
        order = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
        denied = self._denied(ctx, request.group_id, order)
        unknown = set()
        for t in request.topics:
            for p in t.partitions:
                if (t.name, p.partition_index) in denied:
                    continue
                if self.metadata.partition(t.name, p.partition_index) is None:
                    unknown.add((t.name, p.partition_index))
                    continue
                commits[(t.name, p.partition_index)] = (
                    p.committed_offset, p.committed_leader_epoch if version >= 6 else -1, p.committed_metadata)
        code: ErrorCode = ErrorCode.NONE
        results: dict[tuple[str, int], ErrorCode] = {}
        if commits:  # Kafka does not reach the coordinator when no partition is known
            code, results = await self.coordinator.commit_offsets(
                request.group_id, request.generation_id_or_member_epoch if version >= 1 else -1,
                request.member_id if version >= 1 else "", request.group_instance_id if version >= 7 else None,
                commits)
        R = OffsetCommitResponse
        by_topic: dict[str, list] = {}
        for tp in dict.fromkeys(order):
            if tp in denied:
                e = denied[tp]
            elif tp in unknown:
                e = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                e = results.get(tp, code) if code is ErrorCode.NONE else code
            by_topic.setdefault(tp[0], []).append(R.Topics.Partitions(partition_index=tp[1], error_code=int(e)))
        return R(throttle_time_ms=0, topics=[R.Topics(name=n, partitions=ps) for n, ps in by_topic.items()])


def register(dispatcher: Dispatcher, handler: OffsetCommitHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
