"""TxnOffsetCommit (key 28): a transactional producer commits a group's
offsets inside its transaction (consume-transform-produce, KIP-98; group
fencing fields KIP-447 from v3). The group coordinator writes them to the
group's ``__consumer_offsets`` partition as a transactional batch and holds
them pending until the transaction's marker arrives (see
``kavka.group.txn_offsets``).

Versions 0-3 (v3 flexible; v4+, KIP-890, not advertised).

A partition the broker's metadata does not know is answered
UNKNOWN_TOPIC_OR_PARTITION and not committed, as Kafka's
``KafkaApis.handleTxnOffsetCommitRequest``. Authorization (Kafka's, asked
first): WRITE on the transactional id (else every partition is
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (else
GROUP_AUTHORIZATION_FAILED), READ on each topic (else its partitions are
TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 28
MIN_VERSION = 0
MAX_VERSION = 3


class TxnOffsetCommitHandler:
    def __init__(self, coordinator: GroupCoordinator, metadata: MetadataCache, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.metadata = metadata
        self.auth = auth

    def _denied(self, ctx: RequestContext, request: TxnOffsetCommitRequest,
                order: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        if not self.auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return dict.fromkeys(order, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not self.auth.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            return dict.fromkeys(order, ErrorCode.GROUP_AUTHORIZATION_FAILED)
        readable = self.auth.filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, (t for t, _ in order))
        return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in order if tp[0] not in readable}

    async def __call__(self, ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
        version = ctx.api_version
        commits = {}
        order = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
        results: dict[tuple[str, int], ErrorCode] = self._denied(ctx, request, order)
        for t in request.topics:
            for p in t.partitions:
                if (t.name, p.partition_index) in results:
                    continue
                if self.metadata.partition(t.name, p.partition_index) is None:
                    results[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                commits[(t.name, p.partition_index)] = (
                    p.committed_offset, p.committed_leader_epoch if version >= 2 else -1, p.committed_metadata)
        if commits:  # Kafka does not reach the coordinator when no partition is known
            results.update(await self.coordinator.commit_txn_offsets(
                request.group_id, request.producer_id, request.producer_epoch,
                request.generation_id if version >= 3 else -1, request.member_id if version >= 3 else "",
                request.group_instance_id if version >= 3 else None, commits))
        R = TxnOffsetCommitResponse
        by_topic: dict[str, list] = {}
        for tp in dict.fromkeys(order):
            by_topic.setdefault(tp[0], []).append(
                R.Topics.Partitions(partition_index=tp[1], error_code=int(results[tp])))
        return R(throttle_time_ms=0, topics=[R.Topics(name=n, partitions=ps) for n, ps in by_topic.items()])


def register(dispatcher: Dispatcher, handler: TxnOffsetCommitHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
