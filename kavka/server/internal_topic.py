"""The compacted internal topics the group coordinator and the transaction
coordinator keep their state in (``__consumer_offsets``, seed 002 §6.5;
``__transaction_state``, KIP-98), seen from the broker: how records reach
the log, where a key's coordinator is, and how leadership moves the
coordinators' partitions.

- ``InternalTopicSettings``: how the topic is created — partitions,
  replication factor, topic configs — from the broker config
  (``consumer_offsets``: ``offsets.topic.*``, ``cleanup.policy=compact``;
  ``transaction_state``: ``transaction.state.log.*``, ``min.insync.replicas``
  = ``transaction.state.log.min.isr``, ``cleanup.policy=compact``).
- ``InternalTopicLog``: a coordinator's log seam (``GroupLog``,
  ``TransactionLog``) — appends with acks=-1 and internal topics allowed,
  bounded by the coordinator's timeout (``offsets.commit.timeout.ms`` for
  groups, ``TRANSACTION_APPEND_TIMEOUT_MS`` for transactions); reads a
  partition's whole local log in ``load_buffer_size`` chunks for a load,
  and waits, before the coordinator serves what it loaded, until all of it
  is committed (``wait_committed``): the log's tail above the high
  watermark may still be lost with this leader.
- ``InternalTopic``: where the coordinator of a key is (the leader of the
  key's partition). The topic is created the first time a client asks;
  like Kafka, with fewer live brokers than the replication factor the answer
  is COORDINATOR_NOT_AVAILABLE and nothing is created.
- ``CoordinatorLeadership``: after LeaderAndIsr (seed 002 §6.8 step 6,
  onLeadershipChange: the leader epoch is the coordinator epoch) each
  coordinator loads the partitions of its topic this broker now leads and
  unloads those it follows; after StopReplica it unloads them.

Runs on the broker's event loop; ``read_all`` runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.group.coordinator import GROUP_METADATA_TOPIC
from kavka.protocol.records import iter_batches
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.state import PartitionState
from kavka.server.admin_manager import AdminManager, NewTopic
from kavka.server.metadata_cache import BrokerEndpoint, MetadataCache
from kavka.transaction.coordinator import TRANSACTION_STATE_TOPIC

log = logging.getLogger("kavka.server")

# Kafka bounds transaction log appends by request.timeout.ms's default.
TRANSACTION_APPEND_TIMEOUT_MS = 30_000


@dataclass(frozen=True, slots=True)
class InternalTopicSettings:
    """How an internal topic is created. ``rf_key`` names the config the
    replication factor came from, for the warning when too few brokers are
    alive."""

    topic: str
    num_partitions: int
    replication_factor: int
    rf_key: str
    configs: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def consumer_offsets(cls, config: Any) -> InternalTopicSettings:
        return cls(GROUP_METADATA_TOPIC, config["offsets.topic.num.partitions"],
                   config["offsets.topic.replication.factor"], "offsets.topic.replication.factor",
                   # compression.type producer: the coordinator's batches keep
                   # offsets.topic.compression.codec, as Kafka creates the topic
                   {"cleanup.policy": "compact", "segment.bytes": str(config["offsets.topic.segment.bytes"]),
                    "compression.type": "producer"})

    @classmethod
    def transaction_state(cls, config: Any) -> InternalTopicSettings:
        return cls(TRANSACTION_STATE_TOPIC, config["transaction.state.log.num.partitions"],
                   config["transaction.state.log.replication.factor"], "transaction.state.log.replication.factor",
                   {"cleanup.policy": "compact",
                    "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
                    "segment.bytes": str(config["transaction.state.log.segment.bytes"])})


# How often a load waiting for its log to be committed looks at the high
# watermark: followers move it at most once per fetch round.
COMMITTED_POLL_S = 0.02


class PartitionOwner(Protocol):
    """A coordinator that loads a partition of its topic when this broker
    leads it and unloads it otherwise."""

    def on_elected(self, partition: int, epoch: int) -> None: ...

    def on_resigned(self, partition: int) -> None: ...


class InternalTopicLog:
    """See the module docstring."""

    def __init__(self, replica_manager: ReplicaManager, topic: str, append_timeout_ms: int,
                 load_buffer_size: int) -> None:
        self.replica_manager = replica_manager
        self.topic = topic
        self.append_timeout_ms = append_timeout_ms
        self.load_buffer_size = load_buffer_size

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        tp = TopicPartition(self.topic, partition)
        results = await self.replica_manager.append_records(self.append_timeout_ms, -1, {tp: batch},
                                                            internal_topics_allowed=True)
        return results[tp].error

    async def wait_committed(self, partition: int, still_wanted: Callable[[], bool]) -> bool:
        """Wait until the partition's high watermark reaches its log end as
        it is now (a load read up to there); True then, False once
        ``still_wanted`` says the load was given up (this broker resigned or
        was elected again) or the partition is gone. While it waits, its
        coordinator answers COORDINATOR_LOAD_IN_PROGRESS: a record above the
        high watermark is lost if leadership moves to a replica without it,
        and state served from it (a transaction's partitions, a pending
        offset) would be lost with it after the client was answered."""
        tp = TopicPartition(self.topic, partition)
        p = self.replica_manager.get_partition(tp)
        if p is None:
            return False
        end = p.log.log_end_offset
        while p.log.high_watermark < end:
            await asyncio.sleep(COMMITTED_POLL_S)
            if not still_wanted() or self.replica_manager.get_partition(tp) is not p:
                return False
        return still_wanted()

    def read_all(self, partition: int) -> Iterator[bytes]:
        p = self.replica_manager.get_partition(TopicPartition(self.topic, partition))
        if p is None:
            return
        offset, end = p.log.log_start_offset, p.log.log_end_offset
        while offset < end:  # every step moves past at least one whole batch, so this ends
            chunk = p.log.read(offset, self.load_buffer_size, min_one_message=True).records
            last = None
            for _pos, header in iter_batches(chunk):
                last = header
            if last is None:
                return
            yield bytes(chunk)  # read without ReadBuffers: already a bytes, so not copied
            offset = last.next_offset


class InternalTopic:
    """See the module docstring. ``partition_of`` maps a key (group id,
    transactional id) to its partition, as its coordinator does."""

    def __init__(self, settings: InternalTopicSettings, partition_of: Callable[[str], int], cache: MetadataCache,
                 admin: AdminManager) -> None:
        self.settings = settings
        self.topic = settings.topic
        self.partition_of = partition_of
        self.cache = cache
        self.admin = admin
        self._creating: asyncio.Task | None = None

    async def coordinator_for(self, key: str, listener: str) -> tuple[ErrorCode, int, BrokerEndpoint | None]:
        if not self.cache.contains_topic(self.topic):
            return await self._create(), -1, None
        p = self.partition_of(key)
        meta = self.cache.partition(self.topic, p)
        endpoint = self.cache.leader_endpoint(self.topic, p, listener)
        if meta is None or endpoint is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, None
        return ErrorCode.NONE, meta.leader, endpoint

    async def _create(self) -> ErrorCode:
        s = self.settings
        live = len(self.cache.alive_brokers())
        if live < s.replication_factor:
            log.warning("not creating %s: %d live brokers, %s is %d", s.topic, live, s.rf_key, s.replication_factor)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self._creating is None or self._creating.done():
            self._creating = asyncio.get_running_loop().create_task(self.admin.create_topics([NewTopic(
                s.topic, s.num_partitions, s.replication_factor, configs=dict(s.configs))]))
        return ErrorCode.COORDINATOR_NOT_AVAILABLE


class CoordinatorLeadership:
    """Routes leadership changes of the internal topics to their
    coordinators: ``owners`` maps a topic to the coordinator of its
    partitions."""

    def __init__(self, broker_id: int, owners: Mapping[str, PartitionOwner]) -> None:
        self.broker_id = broker_id
        self.owners = dict(owners)

    def leadership_changed(self, states: list[PartitionState], errors: Mapping[TopicPartition, int]) -> None:
        """After LeaderAndIsr: load the partitions this broker now leads,
        unload those it follows; a refused entry changes nothing."""
        for s in states:
            tp = s.topic_partition
            owner = self.owners.get(tp.topic)
            if owner is None or errors.get(tp, 0) != 0:
                continue
            if s.leader == self.broker_id:
                owner.on_elected(tp.partition, s.leader_epoch)
            else:
                owner.on_resigned(tp.partition)

    def stopped_leading(self, partitions: list[TopicPartition]) -> None:
        """This broker stopped leading these partitions on its own (its
        ZooKeeper session may be gone: ``kavka.server.zk_session_fence``; an
        ISR write found the state znode moved on: seed 001 #3): their
        coordinators unload them."""
        for tp in partitions:
            owner = self.owners.get(tp.topic)
            if owner is not None:
                owner.on_resigned(tp.partition)

    def leading_again(self, partitions: list[tuple[TopicPartition, int]]) -> None:
        """The fenced partitions lead again at these leader epochs: their
        coordinators load them from the log."""
        for tp, leader_epoch in partitions:
            owner = self.owners.get(tp.topic)
            if owner is not None:
                owner.on_elected(tp.partition, leader_epoch)

    def replicas_stopped(self, stopped: list[TopicPartition]) -> None:
        """After StopReplica: this broker holds no replica of these partitions
        any more (reassigned away, deleted, or shutting down)."""
        for tp in stopped:
            owner = self.owners.get(tp.topic)
            if owner is not None:
                owner.on_resigned(tp.partition)
