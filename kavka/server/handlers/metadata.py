"""Metadata (key 3): brokers, controller, topics, partition leaders.

Answered from the metadata cache (fed by UpdateMetadata). A requested topic
that does not exist is created when ``auto.create.topics.enable`` is true
and the client allows it (v4+ ``allow_auto_topic_creation``; always before
v4), and reported with LEADER_NOT_AVAILABLE until its leaders are elected,
as Kafka does — also when ZooKeeper fails or hangs during the creation (the
wait is bounded: a retriable per-topic error, never a closed connection). Per partition, as Kafka's ZooKeeper-mode cache:
LEADER_NOT_AVAILABLE when the leader is not alive; at v0 only, replicas and
ISR are filtered to live brokers and REPLICA_NOT_AVAILABLE flags the
difference (later versions list every replica, v5+ with offline_replicas).
A broker that has not yet received its first UpdateMetadata (it has just
registered and the controller's update is on its way) holds the answer for
up to ``FIRST_UPDATE_WAIT_S``: answered at once it would name no controller
and no brokers, and librdkafka's admin client then waits out its whole
timeout for a controller instead of asking again.
``*_authorized_operations`` are INT32_MIN unless asked for (kafka-python
crashes on -1); Kavka has no authorizer, so when asked every operation the
resource type supports is allowed.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from kavka.common.errors import ErrorCode
from kavka.common.topic_names import validate_topic_name
from kavka.protocol.messages import MetadataRequest, MetadataResponse
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 3
MIN_VERSION = 0
MAX_VERSION = 12
INT32_MIN = -(1 << 31)
FIRST_UPDATE_WAIT_S = 5.0
# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
# DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))  # + CLUSTER_ACTION 9, IDEMPOTENT_WRITE 12
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

# (topic names) -> the error to answer per name (LEADER_NOT_AVAILABLE while
# the creation is under way). Bounded in time, never raises for ZooKeeper
# trouble (AdminManager.auto_create); errors are logged by it.
AutoCreate = Callable[[list[str]], Awaitable[dict[str, ErrorCode]]]


class MetadataHandler:
    def __init__(self, cache: MetadataCache, cluster_id: Callable[[], str | None],
                 auto_create: AutoCreate | None) -> None:
        self.cache = cache
        self.cluster_id = cluster_id
        self.auto_create = auto_create

    async def __call__(self, ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
        version = ctx.api_version
        cache = self.cache
        if cache.controller_id < 0:
            await cache.wait_until(lambda c: c.controller_id >= 0, FIRST_UPDATE_WAIT_S)
        R = MetadataResponse
        requested = request.topics
        all_topics = requested is None or (version == 0 and not requested)
        if requested is None or all_topics:
            wanted: list[tuple[str | None, uuid.UUID | None]] = [(t, None) for t in cache.topics()]
        else:
            wanted = [(t.name, t.topic_id if version >= 10 else None) for t in requested]

        missing: list[str] = []
        topics: list = []
        for name, topic_id in wanted:
            if name is None and topic_id is not None:
                name = cache.topic_by_id(topic_id)
                if name is None:
                    topics.append(R.Topics(error_code=int(ErrorCode.UNKNOWN_TOPIC_ID), name=None,
                                           topic_id=topic_id, topic_authorized_operations=INT32_MIN))
                    continue
            if name is None:
                topics.append(R.Topics(error_code=int(ErrorCode.INVALID_REQUEST), name=None,
                                       topic_authorized_operations=INT32_MIN))
                continue
            if not cache.contains_topic(name):
                missing.append(name)
                continue
            topics.append(self._topic(name, version, request))

        if missing:
            allow = request.allow_auto_topic_creation if version >= 4 else True
            creatable = []
            for name in missing:
                problem = validate_topic_name(name)
                if problem is not None:
                    topics.append(R.Topics(error_code=int(ErrorCode.INVALID_TOPIC_EXCEPTION), name=name,
                                           topic_authorized_operations=INT32_MIN))
                elif allow and self.auto_create is not None and name not in INTERNAL_TOPICS:
                    creatable.append(name)
                else:
                    topics.append(R.Topics(error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name=name,
                                           topic_authorized_operations=INT32_MIN))
            answers = await self.auto_create(creatable) if creatable and self.auto_create is not None else {}
            for name in creatable:
                code = answers.get(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                topics.append(R.Topics(error_code=int(code), name=name, topic_authorized_operations=INT32_MIN))

        brokers = []
        for b in cache.alive_brokers():
            ep = b.endpoint(ctx.listener)
            if ep is not None:
                brokers.append(R.Brokers(node_id=b.id, host=ep.host, port=ep.port, rack=b.rack))
        include_cluster_ops = version in range(8, 11) and request.include_cluster_authorized_operations
        return R(
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id=self.cluster_id(),
            controller_id=cache.controller_id,
            topics=topics,
            cluster_authorized_operations=CLUSTER_OPERATIONS if include_cluster_ops else INT32_MIN,
        )

    def _topic(self, name: str, version: int, request):
        R = MetadataResponse
        cache = self.cache
        partitions = []
        for index, p in sorted(cache.topic_partitions(name).items()):
            error = ErrorCode.NONE
            replicas, isr = list(p.replicas), list(p.isr)
            if p.leader < 0 or cache.alive_broker(p.leader) is None:
                error = ErrorCode.LEADER_NOT_AVAILABLE
            if version == 0:
                live_replicas = [r for r in replicas if cache.alive_broker(r) is not None]
                live_isr = [r for r in isr if cache.alive_broker(r) is not None]
                if error == ErrorCode.NONE and (len(live_replicas) < len(replicas) or len(live_isr) < len(isr)):
                    error = ErrorCode.REPLICA_NOT_AVAILABLE
                replicas, isr = live_replicas, live_isr
            offline = [r for r in p.replicas if cache.alive_broker(r) is None] if version >= 5 else []
            partitions.append(R.Topics.Partitions(
                error_code=int(error), partition_index=index,
                leader_id=p.leader if error != ErrorCode.LEADER_NOT_AVAILABLE else -1,
                leader_epoch=p.leader_epoch if version >= 7 else -1,
                replica_nodes=replicas, isr_nodes=isr, offline_replicas=offline))
        include_ops = version >= 8 and request.include_topic_authorized_operations
        return R.Topics(
            error_code=int(ErrorCode.NONE), name=name,
            topic_id=cache.topic_id(name) if version >= 10 else uuid.UUID(int=0),
            is_internal=name in INTERNAL_TOPICS, partitions=partitions,
            topic_authorized_operations=TOPIC_OPERATIONS if include_ops else INT32_MIN)


def register(dispatcher: Dispatcher, handler: MetadataHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
