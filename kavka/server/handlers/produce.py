"""Produce (key 0): append record batches to the partitions this broker
leads, with acks 0, 1 or -1 (seed 003; seed 002 §6.5).

Versions 3-11: every version that carries record batch v2 (v0-2 carry the
old message sets, which Kafka 4 dropped too). The batches go to the replica
manager as the bytes the client sent; the leader's log walks their records
in C without decoding them into objects. acks=0 gets no response at all, as in Kafka; acks=-1 answers
when the high watermark passes every batch or ``timeout_ms`` runs out
(DelayedProduce). A partition error carries NOT_LEADER_OR_FOLLOWER with the
current leader (v10+, KIP-951) so the client can redirect without a
Metadata round trip. Idempotent batches are checked against the
partition's producer state (``kavka.storage.producer_state.manager``): a retried
duplicate answers NONE with its original base offset; sequence gaps and
fenced epochs get OUT_OF_ORDER_SEQUENCE_NUMBER / INVALID_PRODUCER_EPOCH.

As Kafka's ProduceRequest.validateRecords, each partition carries exactly
one batch of magic 2 (INVALID_RECORD otherwise) and no zstd before v7
(UNSUPPORTED_COMPRESSION_TYPE). The leader walks every record (Kafka's
LogValidator, ``kavka.storage.log_validator``); a refused batch answers
INVALID_RECORD or INVALID_TIMESTAMP with, from v8, the refused records in
``record_errors`` (KIP-467), and nothing of it is appended.

``producer_byte_rate`` (KIP-13): once the batches are appended, the
request's size is charged to the client's quota; over it, the response
carries the throttle time and the connection is muted for it
(``kavka.server.throttling``) — acks=0 included, which has no response.

Authorization (Kafka 3.9's): a request whose batches are transactional
(the first batch of any partition says so) needs WRITE on its
``transactional_id``, else every partition is
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; each topic needs WRITE, else its
partitions are TOPIC_AUTHORIZATION_FAILED (asked before the topic's
existence). An idempotent producer's right to write is checked when it gets
its producer id (InitProducerId: IDEMPOTENT_WRITE on the cluster or WRITE
on some topic, KIP-679), not per Produce. With acks=0 an unauthorized
partition is dropped, unanswered like the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import ProduceRequest, ProduceResponse
from kavka.protocol.records import ATTR_COMPRESSION_MASK, HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, Compression, peek_size
from kavka.protocol.records.batch import InvalidRecordBatch, iter_batches
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.requests import ProducePartitionResult
from kavka.security.acl import AclOperation, ResourceType
from kavka.security.quota.manager import ClientQuotaManager
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.throttling import quota_client_id, quota_user

API_KEY = 0
MIN_VERSION = 3
MAX_VERSION = 11
MAGIC_OFFSET = 16  # in the batch header (kavka.protocol.records.batch)
ATTRIBUTES_OFFSET = 21  # int16; the codec is in the low byte


def _first_batch_transactional(records: bytes | memoryview | None) -> bool:
    """Kafka's ``RequestUtils.hasTransactionalRecords`` test of one
    partition: its first batch; a damaged one is left to the log's validation."""
    if not records:
        return False
    try:
        for _pos, header in iter_batches(records, check_crc=False):
            return header.is_transactional
    except InvalidRecordBatch:
        return False
    return False


class ProduceHandler:
    def __init__(self, replica_manager: ReplicaManager, cache: MetadataCache, quota: ClientQuotaManager,
                 auth: AuthHelper) -> None:
        self.replica_manager = replica_manager
        self.cache = cache
        self.quota = quota
        self.auth = auth

    def _denied(self, ctx: RequestContext, request: ProduceRequest) -> tuple[ErrorCode, set[str]]:
        """A request-wide refusal (NONE if none) and the topics the session
        may not WRITE to."""
        if any(_first_batch_transactional(p.records) for t in request.topic_data for p in t.partition_data):
            tid = request.transactional_id if ctx.api_version >= 3 else None
            if tid is None or not self.auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
                return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, set()
        names = [t.name for t in request.topic_data for _ in t.partition_data]
        writable = self.auth.filter_by_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, names)
        return ErrorCode.NONE, {n for n in names if n not in writable}

    async def __call__(self, ctx: RequestContext,
                       request: ProduceRequest) -> ProduceResponse | None | Awaitable[ProduceResponse]:
        version = ctx.api_version
        entries: dict[TopicPartition, bytes | memoryview] = {}
        early: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}
        order: list[TopicPartition] = []
        refusal, denied = self._denied(ctx, request)
        for topic in request.topic_data:
            for p in topic.partition_data:
                tp = TopicPartition(topic.name, p.index)
                order.append(tp)
                if refusal is not ErrorCode.NONE:
                    early[tp] = (refusal, None)
                elif topic.name in denied:
                    early[tp] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
                elif tp in entries or tp in early:
                    early[tp] = (ErrorCode.INVALID_REQUEST, f"{tp} appears twice in one request")
                    entries.pop(tp, None)
                elif p.records is None or len(p.records) == 0:
                    early[tp] = (ErrorCode.CORRUPT_MESSAGE, f"no record batches for {tp}")
                elif (refused := check_one_batch(version, p.records, tp)) is not None:
                    early[tp] = refused
                else:
                    entries[tp] = p.records
        acks = request.acks
        appended = self.replica_manager.append_records_nowait(request.timeout_ms, acks, entries) if entries else {}
        if self.quota.enabled:
            throttle = self.quota.record_and_get_throttle_ms(quota_user(ctx), quota_client_id(ctx), ctx.size)
            ctx.throttle_time_ms = max(ctx.throttle_time_ms, throttle)
        if acks == 0:
            return None
        if isinstance(appended, asyncio.Future):
            if not appended.done():
                # acks=-1 waits for the ISR as a delayed response: the
                # request and its records are let go now (the connection's
                # memory pool gets the frame back), and the connection
                # takes its next request; responses still leave in order.
                return self._respond_when_replicated(version, ctx.listener, order, early, appended)
            appended = appended.result()
        return self._response(version, ctx.listener, order, early, appended)

    async def _respond_when_replicated(
            self, version: int, listener: str, order: list[TopicPartition],
            early: dict[TopicPartition, tuple[ErrorCode, str | None]],
            pending: asyncio.Future[dict[TopicPartition, ProducePartitionResult]]) -> ProduceResponse:
        return self._response(version, listener, order, early, await pending)

    def _response(self, version: int, listener: str, order: list[TopicPartition],
                  early: dict[TopicPartition, tuple[ErrorCode, str | None]],
                  results: dict[TopicPartition, ProducePartitionResult]) -> ProduceResponse:
        R = ProduceResponse
        by_topic: dict[str, list] = {}
        leaders_wanted: set[int] = set()
        for tp in dict.fromkeys(order):
            if tp in early:
                code, message = early[tp]
                part = R.Responses.PartitionResponses(index=tp.partition, error_code=int(code),
                                                      base_offset=-1, error_message=message)
            else:
                r = results[tp]
                part = R.Responses.PartitionResponses(
                    index=tp.partition, error_code=int(r.error), base_offset=r.base_offset,
                    log_append_time_ms=r.log_append_time, log_start_offset=r.log_start_offset,
                    error_message=r.error_message if r.error != ErrorCode.NONE else None)
                if version >= 8 and r.record_errors:
                    part.record_errors = [
                        R.Responses.PartitionResponses.RecordErrors(batch_index=e.batch_index,
                                                                    batch_index_error_message=e.message)
                        for e in r.record_errors]
                if version >= 10 and r.error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
                    meta = self.cache.partition(tp.topic, tp.partition)
                    if meta is not None and meta.leader >= 0:
                        part.current_leader = R.Responses.PartitionResponses.CurrentLeader(
                            leader_id=meta.leader, leader_epoch=meta.leader_epoch)
                        leaders_wanted.add(meta.leader)
            by_topic.setdefault(tp.topic, []).append(part)
        response = R(responses=[R.Responses(name=name, partition_responses=parts) for name, parts in by_topic.items()],
                     throttle_time_ms=0)
        if leaders_wanted:
            for broker_id in sorted(leaders_wanted):
                b = self.cache.alive_broker(broker_id)
                ep = b.endpoint(listener) if b is not None else None
                if b is not None and ep is not None:
                    response.node_endpoints.append(R.NodeEndpoints(node_id=broker_id, host=ep.host, port=ep.port,
                                                                   rack=b.rack))
        return response


def check_one_batch(version: int, records: bytes | memoryview, tp: TopicPartition) -> tuple[ErrorCode, str] | None:
    """Kafka's ProduceRequest.validateRecords (v3+): exactly one batch per
    partition, of magic 2, and no zstd before v7 (KIP-110). A partial or
    damaged batch is left to the log, which names the problem."""
    n = len(records)
    size = peek_size(records)
    if size is None or n < HEADER_SIZE:
        return None
    if records[MAGIC_OFFSET] != MAGIC_V2:
        return (ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to contain "
                                          f"record batches with magic version 2 ({tp})")
    if version < 7 and records[ATTRIBUTES_OFFSET + 1] & ATTR_COMPRESSION_MASK == Compression.ZSTD:
        return (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Produce requests with version {version} are not allowed "
                                                        f"to use ZStandard compression ({tp})")
    if LOG_OVERHEAD <= size < n:
        return (ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to contain "
                                          f"exactly one record batch per partition ({tp})")
    return None


def register(dispatcher: Dispatcher, handler: ProduceHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
