"""Fetch (key 1): records for consumers (below the high watermark, or the
last stable offset for read_committed) and for followers (to the log end,
replica id >= 0), waiting in the DelayedFetch purgatory until ``min_bytes``
are available or ``max_wait_ms`` passes (seed 000 §Follower 从 Leader Fetch
数据 steps 1-5).

Versions 4-17: v4 is the first that carries record batch v2 and the
isolation level. v13+ names topics by id (KIP-516); an unknown id gets
UNKNOWN_TOPIC_ID. v17's replica directory id (KIP-853) is KRaft's: only
fetches of its metadata quorum read it, as in Kafka, so a partition's
fetch is answered as at v16. The records are the log's bytes, never
decoded here.

Incremental fetch sessions (KIP-227, v7+): the request's session id and
epoch go to the ``FetchManager`` (``kavka.replication.fetch_session``),
whose context says which partitions to read — the request's, or every
partition of the session, of which the request carries only the changes
and ``forgotten_topics_data`` the removals — and which go in the answer:
all of them, or in an incremental answer those with something to say
(a follower's session does not even read a partition it read quietly and
that has not changed since: ``kavka.replication.quiet_partitions``).
A session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
FETCH_SESSION_TOPIC_ID_ERROR) is the response's top-level error, with no
partitions. A session belongs to the replica id and principal that opened
it. Every check below (authorization, the replica's proof, the ISR of a
follower read by a consumer) applies to every partition read, each time.

``consumer_byte_rate`` (KIP-13, KIP-219) for consumers (not followers):
``max_bytes`` is capped to what the quota's window holds; the bytes
returned are charged to the quota, and a fetch that takes the client over
it returns no data — no partitions, as Kafka's throttled response — with
the throttle time, its bytes taken back off the measurement, and the
connection muted for that long (``kavka.server.throttling``); so is a
fetch the client's request_percentage throttles (``without_data``).

Authorization (Kafka's): a consumer needs READ on each topic, else
TOPIC_AUTHORIZATION_FAILED for its partitions (asked before the topic's
existence, so a hidden topic and a missing one answer alike); a follower
(replica id >= 0) needs CLUSTER_ACTION on the cluster, else every
partition is TOPIC_AUTHORIZATION_FAILED. Whether or not an authorizer is
configured, a follower's replica id must be proven (``InterBrokerFence.
verified_replica``: a connection authenticated as a broker, or the
replica's current broker epoch in v15+'s ``replica_state``); an unproven
one is answered NOT_LEADER_OR_FOLLOWER for every partition, as Kafka
answers a replica it does not recognise, and reads nothing, moves no
follower's log end offset, high watermark or ISR. v13+ topic ids resolve
through the metadata cache, or the ids of the partitions hosted here
(LeaderAndIsr v5+), which a follower of a brand-new topic may use before
this broker's UpdateMetadata names it.

Fetch from follower (KIP-392): a consumer's v11+ request carries its
``rack_id`` (``client.rack``). On the leader, ``replica.selector.class``
may answer a partition with ``preferred_read_replica`` and no records; the
consumer then fetches from that follower, which serves it below its own
high watermark (and last stable offset), waiting in its purgatory for its
high watermark to move. A follower that the controller's last
UpdateMetadata does not list in the ISR answers NOT_LEADER_OR_FOLLOWER,
and one that no longer hosts the partition does as well, so the consumer
goes back to the leader. ListOffsets and OffsetsForLeaderEpoch stay with
the leader, as in Kafka (a consumer sends them to the leader). A consumer
keeps one session per broker it fetches from, as Kafka's.
"""

from __future__ import annotations

import logging
import uuid

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import FetchRequest, FetchResponse
from kavka.replication.fetch_session import (
    FetchContext,
    FetchManager,
    FullFetchContext,
    PartitionKey,
    RequestedPartition,
    SessionlessFetchContext,
)
from kavka.replication.quiet_partitions import QuietPartitions
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.replica_selector import ClientMetadata
from kavka.replication.requests import (
    CONSUMER_REPLICA_ID,
    FetchIsolation,
    FetchParams,
    FetchPartition,
    FetchPartitionData,
)
from kavka.security.acl import AclOperation, ResourceType
from kavka.security.quota.manager import ClientQuotaManager
from kavka.server.authorization import AuthHelper
from kavka.server.inter_broker_fence import InterBrokerFence
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.throttling import quota_client_id, quota_user

API_KEY = 1
MIN_VERSION = 4
MAX_VERSION = 17
ZERO_UUID = uuid.UUID(int=0)

log = logging.getLogger("kavka.server.fetch")
# A partition of a topic id this broker does not know (KIP-516): empty
# records, not null, which librdkafka refuses ('invalid MessageSetSize -1').
UNKNOWN_ID = FetchPartitionData(ErrorCode.UNKNOWN_TOPIC_ID, records=b"")
LOGGED_REFUSALS_MAX = 1024  # (peer host, replica id) pairs warned about; later ones are logged at DEBUG


class FetchHandler:
    def __init__(self, replica_manager: ReplicaManager, cache: MetadataCache, quota: ClientQuotaManager,
                 auth: AuthHelper, fence: InterBrokerFence, sessions: FetchManager) -> None:
        self.replica_manager = replica_manager
        self.sessions = sessions
        self.cache = cache
        self.quota = quota
        self.auth = auth
        self.fence = fence
        self._warned: set[tuple[str, int]] = set()

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.cache.topic_by_id(topic_id) or self.replica_manager.topic_name(topic_id)

    async def __call__(self, ctx: RequestContext, request: FetchRequest) -> FetchResponse:
        version = ctx.api_version
        R = FetchResponse
        if version >= 15:
            replica_id, replica_epoch = request.replica_state.replica_id, request.replica_state.replica_epoch
        else:
            replica_id, replica_epoch = request.replica_id, -1
        by_id = version >= 13
        fetch_data: dict[PartitionKey, RequestedPartition] = {}
        for t in request.topics:
            topic_key: uuid.UUID | str = t.topic_id if by_id else t.topic
            name = self._topic_name(t.topic_id) if by_id else t.topic
            for p in t.partitions:
                tp = TopicPartition(name, p.partition) if name is not None else None
                fetch_data[(topic_key, p.partition)] = RequestedPartition(tp, FetchPartition(
                    fetch_offset=p.fetch_offset,
                    max_bytes=p.partition_max_bytes,
                    current_leader_epoch=p.current_leader_epoch if version >= 9 else -1,
                    last_fetched_epoch=p.last_fetched_epoch if version >= 12 else -1,
                    log_start_offset=p.log_start_offset if version >= 5 else -1,
                ))
        context: FetchContext
        if version >= 7:
            forgotten = [(f.topic_id if by_id else f.topic, i) for f in request.forgotten_topics_data
                         for i in f.partitions]
            context = self.sessions.new_context(request.session_id, request.session_epoch,
                                                (replica_id, quota_user(ctx)), by_id, fetch_data, forgotten,
                                                self._topic_name)
        else:
            context = SessionlessFetchContext(fetch_data)
        if context.error is not ErrorCode.NONE:
            return R(throttle_time_ms=0, error_code=int(context.error), session_id=0, responses=[])
        partitions: dict[TopicPartition, FetchPartition] = {}
        to_read = context.partitions()
        for _, known, fp in to_read:
            if known is not None:
                partitions[known] = fp
        max_bytes, min_bytes = request.max_bytes, request.min_bytes
        user, client_id = quota_user(ctx), quota_client_id(ctx)
        quota_applies = replica_id < 0 and self.quota.enabled
        if quota_applies:
            window_bytes = self.quota.max_value_in_quota_window(user, client_id)
            if window_bytes is not None:
                max_bytes = min(max_bytes, int(window_bytes))
                min_bytes = min(min_bytes, max_bytes)
        # KIP-392: a consumer's Fetch v11+ may read a follower and be sent to
        # a preferred read replica (Kafka's DefaultClientMetadata).
        client = ClientMetadata(request.rack_id or "", ctx.client_id or "", ctx.client_host, ctx.listener) \
            if version >= 11 and replica_id == CONSUMER_REPLICA_ID else None
        params = FetchParams(
            replica_id=replica_id, max_wait_ms=request.max_wait_ms, min_bytes=min_bytes,
            max_bytes=max_bytes, isolation=FetchIsolation.of(replica_id, request.isolation_level),
            client_metadata=client)
        refused = await self._refused(ctx, replica_id, replica_epoch, partitions)
        if replica_id >= 0 and refused and isinstance(context, FullFetchContext):
            # A follower refused (not proven, or no CLUSTER_ACTION) reads
            # nothing and gets no session, whose privilege could evict others'.
            context = SessionlessFetchContext(context.fetch_data)
        if client is not None:
            refused.update(self._out_of_sync_follower(partitions, refused))
        wanted = {tp: p for tp, p in partitions.items() if tp not in refused} if refused else partitions
        data: dict[TopicPartition, FetchPartitionData] = dict(refused)
        # A follower's session skips the partitions it read quietly and
        # that did not change since (kavka.replication.quiet_partitions).
        quiet = QuietPartitions(context.quiet_marks()) if replica_id >= 0 else None
        if wanted:
            data.update(await self.replica_manager.fetch_messages(params, wanted, quiet))
        if quota_applies:
            size = sum(len(d.records) for d in data.values() if d.records)
            throttle = self.quota.record_and_get_throttle_ms(user, client_id, size)
            if throttle > 0:
                self.quota.unrecord(user, client_id, size)
                ctx.throttle_time_ms = max(ctx.throttle_time_ms, throttle)
                withheld = context.throttled()
                return R(throttle_time_ms=throttle, error_code=int(withheld.error), session_id=withheld.session_id,
                         responses=[])
        answer = context.answer({key: data[known] if known is not None else UNKNOWN_ID
                                 for key, known, _ in to_read if known is None or known in data},
                                quiet.found if quiet is not None else None)
        if answer.error is not ErrorCode.NONE:
            return R(throttle_time_ms=0, error_code=int(answer.error), session_id=answer.session_id, responses=[])

        topics: dict[uuid.UUID | str, list] = {}
        leaders_wanted: set[int] = set()
        for key, known, d in answer.partitions:
            part = R.Responses.Partitions(
                partition_index=key[1], error_code=int(d.error), high_watermark=d.high_watermark,
                last_stable_offset=d.last_stable_offset, log_start_offset=d.log_start_offset,
                aborted_transactions=[
                    R.Responses.Partitions.AbortedTransactions(producer_id=t.producer_id, first_offset=t.first_offset)
                    for t in d.aborted_transactions
                ], records=d.records)
            if version >= 11:
                part.preferred_read_replica = d.preferred_read_replica
            if version >= 12 and d.diverging_epoch is not None:
                part.diverging_epoch = R.Responses.Partitions.DivergingEpoch(
                    epoch=d.diverging_epoch.epoch, end_offset=d.diverging_epoch.end_offset)
            if version >= 12 and known is not None and d.error in (ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                                                   ErrorCode.FENCED_LEADER_EPOCH):
                meta = self.cache.partition(known.topic, known.partition)
                if meta is not None and meta.leader >= 0:
                    part.current_leader = R.Responses.Partitions.CurrentLeader(
                        leader_id=meta.leader, leader_epoch=meta.leader_epoch)
                    leaders_wanted.add(meta.leader)
            topics.setdefault(key[0], []).append(part)
        responses = [R.Responses(topic="" if by_id else str(topic_key),
                                 topic_id=topic_key if isinstance(topic_key, uuid.UUID) else ZERO_UUID,
                                 partitions=parts)
                     for topic_key, parts in topics.items()]
        response = R(throttle_time_ms=0, error_code=int(ErrorCode.NONE), session_id=answer.session_id,
                     responses=responses)
        if version >= 16 and leaders_wanted:
            for broker_id in sorted(leaders_wanted):
                b = self.cache.alive_broker(broker_id)
                ep = b.endpoint(ctx.listener) if b is not None else None
                if b is not None and ep is not None:
                    response.node_endpoints.append(R.NodeEndpoints(node_id=broker_id, host=ep.host, port=ep.port,
                                                                   rack=b.rack))
        return response

    def _out_of_sync_follower(self, partitions: dict[TopicPartition, FetchPartition],
                              refused: dict[TopicPartition, FetchPartitionData]) -> dict[TopicPartition, FetchPartitionData]:
        """A consumer reading a follower (KIP-392) that the controller's
        last UpdateMetadata does not list in the ISR: NOT_LEADER_OR_FOLLOWER,
        so the client goes back to the leader (which picks again among the
        in-sync replicas) instead of reading a replica that fell behind."""
        out: dict[TopicPartition, FetchPartitionData] = {}
        for tp in partitions:
            partition = self.replica_manager.get_partition(tp)
            if tp in refused or partition is None or partition.is_leader:
                continue
            meta = self.cache.partition(tp.topic, tp.partition)
            if meta is not None and self.cache.broker_id not in meta.isr:
                out[tp] = FetchPartitionData(
                    ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    error_message=f"broker {self.cache.broker_id} is a follower of {tp} out of its ISR "
                                  f"{list(meta.isr)}; read from the leader {meta.leader}")
        return out

    async def _refused(self, ctx: RequestContext, replica_id: int, replica_epoch: int,
                       partitions: dict[TopicPartition, FetchPartition]) -> dict[TopicPartition, FetchPartitionData]:
        """The partitions this request may not read, with the error each gets."""
        if not partitions:
            return {}
        if replica_id < 0:
            readable = self.auth.filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                      (tp.topic for tp in partitions))
            denied = FetchPartitionData(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            return {tp: denied for tp in partitions if tp.topic not in readable}
        if not self.auth.authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
            denied = FetchPartitionData(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            return dict.fromkeys(partitions, denied)
        assigned = any(p is not None and replica_id in p.assigned_replicas
                       for p in map(self.replica_manager.get_partition, partitions))
        if await self.fence.verified_replica(ctx, replica_id, replica_epoch, assigned=assigned):
            return {}
        key = (ctx.client_host, replica_id)
        level = logging.DEBUG if key in self._warned else logging.WARNING
        if len(self._warned) < LOGGED_REFUSALS_MAX:
            self._warned.add(key)
        log.log(level, "refused a follower Fetch v%d claiming replica %d (replica epoch %d) from %s (client %r): the "
                "connection is not authenticated as a broker and the epoch is not that broker's registration's",
                ctx.api_version, replica_id, replica_epoch, ctx.client_host, ctx.client_id)
        return dict.fromkeys(partitions, FetchPartitionData(ErrorCode.NOT_LEADER_OR_FOLLOWER))

    def without_data(self, ctx: RequestContext, response: FetchResponse) -> FetchResponse:
        """The answer to a consumer's fetch its request quota throttles
        (``ThrottlingHandler``): no data, and the bytes it would have
        carried taken back off its consumer_byte_rate, as Kafka does."""
        if response.error_code != ErrorCode.NONE:
            return response
        size = sum(len(p.records) for t in response.responses for p in t.partitions if p.records)
        if size and self.quota.enabled:
            self.quota.unrecord(quota_user(ctx), quota_client_id(ctx), size)
        session_id = self.sessions.withdraw(response.session_id) if response.session_id else 0
        return FetchResponse(throttle_time_ms=0, error_code=int(ErrorCode.NONE), session_id=session_id, responses=[])


def register(dispatcher: Dispatcher, handler: FetchHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
