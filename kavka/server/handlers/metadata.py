"""Metadata (key 3): brokers, controller, topics, partition leaders.

Answered from the metadata cache (fed by UpdateMetadata). A requested topic
that does not exist is created when ``auto.create.topics.enable`` is true
and the client allows it (v4+ ``allow_auto_topic_creation``; always before
v4), and reported with LEADER_NOT_AVAILABLE until its leaders are elected,
as Kafka does — also when ZooKeeper fails or hangs during the creation (the
wait is bounded: a retriable per-topic error, never a closed connection). Per partition, as Kafka's ZooKeeper-mode cache:
LEADER_NOT_AVAILABLE when the leader is not alive; at v0 only, replicas and
ISR are filtered to live brokers and REPLICA_NOT_AVAILABLE flags the
difference (later versions list every replica, v5+ with offline_replicas:
replicas on dead brokers or in a failed log directory, KIP-112).
A broker that has not yet received its first UpdateMetadata (it has just
registered and the controller's update is on its way) holds the answer for
up to ``FIRST_UPDATE_WAIT_S``: answered at once it would name no controller
and no brokers, and librdkafka's admin client then waits out its whole
timeout for a controller instead of asking again. If the update still has
not come (the broker restarted while cut off from the controller), it knows
neither the cluster's brokers nor its topics, and answers with none of
either (no creation is attempted). Every client discards such an answer
and asks again: the Java client and kafka-python ignore an answer without
brokers, librdkafka one without brokers and topics. Any part of it would
be taken as the truth: librdkafka drops every broker an answer does not
list (its connections, and the requests in flight on them, go; an
idempotent producer's partitions then wait for those requests on its
internal broker, and can stay there), and takes
UNKNOWN_TOPIC_OR_PARTITION for the topic's deletion (its consumers'
assignments empty, and can stay so).
Authorization (Kafka's handleTopicMetadataRequest): a listing of every
topic holds only the topics the session may DESCRIBE; a topic asked for by
name that the session may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED
whether it exists or not (its existence is never looked up, so a hidden
topic and a missing one answer alike, and no creation is attempted); by id,
TOPIC_AUTHORIZATION_FAILED with the id and no name (ids are not secret,
names are). Auto-creation needs CREATE on the cluster or on the topic, else
TOPIC_AUTHORIZATION_FAILED. ``*_authorized_operations`` are INT32_MIN
unless asked for (kafka-python crashes on -1); asked for, KIP-430's bit
fields: the operations the session may do on each listed topic, and on the
cluster (v8-10; 0 without DESCRIBE on it). v13 (KIP-1102) adds a top-level
error code, which a broker sets only to make a client rebootstrap
(REBOOTSTRAP_REQUIRED); Kavka never needs that, and answers NONE.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Awaitable, Callable

from kavka.common.errors import ErrorCode
from kavka.common.topic_names import validate_topic_name
from kavka.protocol.messages import ZERO_UUID, MetadataRequest, MetadataResponse, SharedStruct
from kavka.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kavka.server.authorization import AUTHORIZED_OPERATIONS_OMITTED, AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 3
MIN_VERSION = 0
MAX_VERSION = 13
INT32_MIN = AUTHORIZED_OPERATIONS_OMITTED
FIRST_UPDATE_WAIT_S = 5.0
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

# (topic names) -> the error to answer per name (LEADER_NOT_AVAILABLE while
# the creation is under way). Bounded in time, never raises for ZooKeeper
# trouble (AdminManager.auto_create); errors are logged by it.
AutoCreate = Callable[[list[str]], Awaitable[dict[str, ErrorCode]]]


class MetadataHandler:
    def __init__(self, cache: MetadataCache, cluster_id: Callable[[], str | None],
                 auto_create: AutoCreate | None, auth: AuthHelper) -> None:
        self.cache = cache
        self.cluster_id = cluster_id
        self.auto_create = auto_create
        self.auth = auth
        # (topic, version) -> its entry as built from the cache at
        # ``_entries_generation``, with its encoding once made; at most one
        # per topic and version.
        self._entries: dict[tuple[str, int], SharedStruct] = {}
        self._entries_generation = -1

    async def __call__(self, ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
        version = ctx.api_version
        cache = self.cache
        R = MetadataResponse
        if cache.controller_id < 0:
            await cache.wait_until(lambda c: c.controller_id >= 0, FIRST_UPDATE_WAIT_S)
            if cache.controller_id < 0:  # still uninformed: an answer every client discards (above)
                return R(throttle_time_ms=0, brokers=[], cluster_id=self.cluster_id(), controller_id=-1, topics=[],
                         cluster_authorized_operations=INT32_MIN)
        requested = request.topics
        all_topics = requested is None or (version == 0 and not requested)
        if all_topics or requested is None:
            wanted: list[tuple[str | None, uuid.UUID | None]] = [(t, None) for t in cache.topics()]
        else:
            wanted = [(t.name, t.topic_id if version >= 10 else None) for t in requested]

        # Names first (ids resolved), then one DESCRIBE check for all of them.
        named: list[tuple[str, uuid.UUID | None]] = []
        topics: list = []
        for name, topic_id in wanted:
            if name is None and topic_id is not None:
                name = cache.topic_by_id(topic_id)
                if name is None:
                    topics.append(R.Topics(error_code=int(ErrorCode.UNKNOWN_TOPIC_ID), name=None,
                                           topic_id=topic_id, topic_authorized_operations=INT32_MIN))
                    continue
                named.append((name, topic_id))
            elif name is None:
                topics.append(R.Topics(error_code=int(ErrorCode.INVALID_REQUEST), name=None,
                                       topic_authorized_operations=INT32_MIN))
            else:
                named.append((name, None))
        described = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                   (n for n, _ in named), log_if_denied=not all_topics)
        include_ops = version >= 8 and request.include_topic_authorized_operations

        def listed(entry):
            if include_ops and entry.name is not None:
                if isinstance(entry, SharedStruct):
                    entry = entry.struct
                entry = copy.copy(entry)  # the shared entry of _topic stays as built
                entry.topic_authorized_operations = self.auth.authorized_operations(
                    ctx, ResourceType.TOPIC, entry.name)
            topics.append(entry)

        missing: list[str] = []
        for name, by_id in named:
            if name not in described:
                if not all_topics:  # a listing leaves them out; named ones fail alike, existing or not
                    topics.append(R.Topics(error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                           name=None if by_id is not None else name,
                                           topic_id=by_id if by_id is not None else ZERO_UUID,
                                           topic_authorized_operations=INT32_MIN))
                continue
            if not cache.contains_topic(name):
                missing.append(name)
                continue
            listed(self._topic(name, version))

        if missing:
            allow = request.allow_auto_topic_creation if version >= 4 else True
            auto_create = self.auto_create if allow and not all_topics else None
            may_create: set[str] = set(missing)
            if auto_create is not None and not self.auth.authorize_cluster(ctx, AclOperation.CREATE,
                                                                           log_if_denied=False):
                may_create = self.auth.filter_by_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, missing)
            creatable = []
            for name in missing:
                problem = validate_topic_name(name)
                if problem is not None:
                    listed(R.Topics(error_code=int(ErrorCode.INVALID_TOPIC_EXCEPTION), name=name,
                                    topic_authorized_operations=INT32_MIN))
                elif auto_create is not None and name not in INTERNAL_TOPICS:
                    if name in may_create:
                        creatable.append(name)
                    else:
                        topics.append(R.Topics(error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), name=name,
                                               topic_authorized_operations=INT32_MIN))
                else:
                    listed(R.Topics(error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), name=name,
                                    topic_authorized_operations=INT32_MIN))
            answers = await auto_create(creatable) if creatable and auto_create is not None else {}
            for name in creatable:
                code = answers.get(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                listed(R.Topics(error_code=int(code), name=name, topic_authorized_operations=INT32_MIN))

        brokers = []
        for b in cache.alive_brokers():
            ep = b.endpoint(ctx.listener)
            if ep is not None:
                brokers.append(R.Brokers(node_id=b.id, host=ep.host, port=ep.port, rack=b.rack))
        cluster_ops = INT32_MIN
        if version in range(8, 11) and request.include_cluster_authorized_operations:
            cluster_ops = (self.auth.authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                           if self.auth.authorize_cluster(ctx, AclOperation.DESCRIBE) else 0)
        return R(
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id=self.cluster_id(),
            controller_id=cache.controller_id,
            topics=topics,
            cluster_authorized_operations=cluster_ops,
        )

    def _topic(self, name: str, version: int) -> SharedStruct:
        """The topic's entry at ``version``, built once per cache update and
        shared by the answers until the next, as a ``SharedStruct``: encoded
        by the first answer and appended as bytes by the others. A client's
        refresh and every listing would otherwise build and encode an object
        per partition each time (at 10,000 partitions a failover's metadata
        polls cost the broker more than its election work). Answers only
        read it; one that must change it (KIP-430's authorized operations)
        copies its struct."""
        cache = self.cache
        if self._entries_generation != cache.generation:
            self._entries.clear()
            self._entries_generation = cache.generation
        key = (name, version)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = SharedStruct(self._build_topic(name, version))
        return entry

    def _build_topic(self, name: str, version: int) -> MetadataResponse.Topics:
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
            # dead brokers, and replicas in a failed log directory (KIP-112, from UpdateMetadata)
            offline = ([r for r in p.replicas if cache.alive_broker(r) is None or r in p.offline_replicas]
                       if version >= 5 else [])
            partitions.append(R.Topics.Partitions(
                error_code=int(error), partition_index=index,
                leader_id=p.leader if error != ErrorCode.LEADER_NOT_AVAILABLE else -1,
                leader_epoch=p.leader_epoch if version >= 7 else -1,
                replica_nodes=replicas, isr_nodes=isr, offline_replicas=offline))
        return R.Topics(
            error_code=int(ErrorCode.NONE), name=name,
            topic_id=cache.topic_id(name) if version >= 10 else uuid.UUID(int=0),
            is_internal=name in INTERNAL_TOPICS, partitions=partitions,
            topic_authorized_operations=INT32_MIN)


def register(dispatcher: Dispatcher, handler: MetadataHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
