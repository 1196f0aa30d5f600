"""AddPartitionsToTxn (key 24): a transactional producer names the
partitions it is about to write in its open transaction; the coordinator
records them (state Ongoing) so that EndTxn sends each its marker (KIP-98).

Versions 0-3 (the single-transaction client form; v3 flexible). The v4+
batched broker-to-broker form (KIP-890 verification) is not advertised.
Every partition gets the coordinator's answer; before v2, PRODUCER_FENCED
is answered as INVALID_PRODUCER_EPOCH (KIP-588: older clients know only it).
A partition this broker's metadata does not know fails the whole request,
as in Kafka: UNKNOWN_TOPIC_OR_PARTITION for it, OPERATION_NOT_ATTEMPTED for
the others, nothing added — so every partition of a transaction is one the
marker writer can find a leader for (one that later vanishes from the
metadata was deleted, and needs no marker).

Authorization (Kafka's): WRITE on the transactional id, else every
partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic
(never granted for an internal topic), else TOPIC_AUTHORIZATION_FAILED for
its partitions — which, like an unknown partition, fails the whole request
(OPERATION_NOT_ATTEMPTED for the rest).
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from kavka.replication.replica_manager import INTERNAL_TOPICS
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext
from kavka.transaction.coordinator import TransactionCoordinator

API_KEY = 24
MIN_VERSION = 0
MAX_VERSION = 3


def fenced_as(code: ErrorCode, version: int, first_version_with_fenced: int) -> ErrorCode:
    """PRODUCER_FENCED for clients that know it, INVALID_PRODUCER_EPOCH before (KIP-588)."""
    if code is ErrorCode.PRODUCER_FENCED and version < first_version_with_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


class AddPartitionsToTxnHandler:
    def __init__(self, coordinator: TransactionCoordinator, cache: MetadataCache, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.cache = cache
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
        R = AddPartitionsToTxnResponse
        topics = request.v3_and_below_topics
        partitions = frozenset(TopicPartition(t.name, p) for t in topics for p in t.partitions)
        tid = request.v3_and_below_transactional_id
        failed: dict[TopicPartition, ErrorCode] = {}
        tid_allowed = self.auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid)
        if tid_allowed:
            writable = self.auth.filter_by_authorized(
                ctx, AclOperation.WRITE, ResourceType.TOPIC,
                (t.name for t in topics if t.name not in INTERNAL_TOPICS for _ in t.partitions))
            for tp in partitions:
                if tp.topic not in writable:
                    failed[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif self.cache.partition(tp.topic, tp.partition) is None:
                    failed[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not tid_allowed:
            def code_of(tp: TopicPartition) -> ErrorCode:
                return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif failed:
            def code_of(tp: TopicPartition) -> ErrorCode:
                return failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED)
        else:
            code = await self.coordinator.add_partitions(tid,
                                                         request.v3_and_below_producer_id,
                                                         request.v3_and_below_producer_epoch, partitions)
            code = fenced_as(code, ctx.api_version, 2)

            def code_of(tp: TopicPartition) -> ErrorCode:
                return code
        return R(throttle_time_ms=0, results_by_topic_v3_and_below=[
            R.ResultsByTopicV3AndBelow(name=t.name, results_by_partition=[
                R.ResultsByTopicV3AndBelow.ResultsByPartition(
                    partition_index=p, partition_error_code=int(code_of(TopicPartition(t.name, p))))
                for p in t.partitions])
            for t in topics])


def register(dispatcher: Dispatcher, handler: AddPartitionsToTxnHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
