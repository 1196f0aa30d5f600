"""What the group coordinator and the transaction coordinator share about
the compacted internal topic each keeps its state in (``__consumer_offsets``,
seed 002 §6.5; ``__transaction_state``, KIP-98): how its records reach the
log, where a key's coordinator is, and how leadership moves it.

- ``InternalTopicLog``: the coordinator's log seam — appends with acks=-1
  and internal topics allowed, bounded by the coordinator's timeout; reads a
  partition's whole local log in ``load_buffer_size`` chunks for a load.
- ``InternalTopic``: where the coordinator of a key is (the leader of the
  key's partition). The topic is created the first time a client asks;
  like Kafka, with fewer live brokers than the replication factor the answer
  is COORDINATOR_NOT_AVAILABLE and nothing is created.
- ``leadership_changed`` (seed 002 §6.8 step 6, onLeadershipChange: the
  leader epoch is the coordinator epoch) and ``replicas_stopped``
  (StopReplica unloads).

Runs on the broker's event loop; ``read_all`` runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Iterator, Mapping, Protocol

from kavka.common.errors import ErrorCode
from kavka.protocol.records import iter_batches
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.state import PartitionState
from kavka.server.admin_manager import AdminManager, NewTopic
from kavka.server.metadata_cache import BrokerEndpoint, MetadataCache
from kavka.common.topic_partition import TopicPartition

log = logging.getLogger("kavka.server")


class PartitionOwner(Protocol):
    """A coordinator that loads a partition of its topic when this broker
    leads it and unloads it otherwise."""

    def on_elected(self, partition: int, epoch: int) -> None: ...

    def on_resigned(self, partition: int) -> None: ...


class InternalTopicLog:
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
        return ErrorCode(results[tp].error)

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
            yield chunk
            offset = last.next_offset


class InternalTopic:
    """``rf_key`` names the config the replication factor came from, for
    the warning when too few brokers are alive."""

    def __init__(self, topic: str, partition_of: Callable[[str], int], cache: MetadataCache,
                 admin: AdminManager, num_partitions: int, replication_factor: int, rf_key: str,
                 configs: Mapping[str, str]) -> None:
        self.topic = topic
        self.partition_of = partition_of
        self.cache = cache
        self.admin = admin
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.rf_key = rf_key
        self.configs = dict(configs)
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
        live = len(self.cache.alive_brokers())
        if live < self.replication_factor:
            log.warning("not creating %s: %d live brokers, %s is %d",
                        self.topic, live, self.rf_key, self.replication_factor)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self._creating is None or self._creating.done():
            self._creating = asyncio.get_running_loop().create_task(self.admin.create_topics([NewTopic(
                self.topic, self.num_partitions, self.replication_factor, configs=dict(self.configs))]))
        return ErrorCode.COORDINATOR_NOT_AVAILABLE


def leadership_changed(topic: str, owner: PartitionOwner, broker_id: int, states: list[PartitionState],
                       errors: dict[TopicPartition, int]) -> None:
    """After LeaderAndIsr: load the partitions of ``topic`` this broker now
    leads, unload those it follows."""
    for s in states:
        tp = s.topic_partition
        if tp.topic != topic or errors.get(tp, 0) != 0:
            continue
        if s.leader == broker_id:
            owner.on_elected(tp.partition, s.leader_epoch)
        else:
            owner.on_resigned(tp.partition)


def replicas_stopped(topic: str, owner: PartitionOwner, stopped: list[TopicPartition]) -> None:
    """After StopReplica: this broker holds no replica of these partitions
    any more (reassigned away, deleted, or shutting down)."""
    for tp in stopped:
        if tp.topic == topic:
            owner.on_resigned(tp.partition)
