"""Ties the group coordinator (``kavka.group``) to this broker: its records
go through the replica manager, its partitions follow LeaderAndIsr, and
``__consumer_offsets`` is created on first use.

- ``ReplicaGroupLog``: the coordinator's ``GroupLog`` — appends with
  acks=-1 and internal topics allowed (seed 002 §6.5), bounded by
  ``offsets.commit.timeout.ms``; reads a partition's whole local log in
  ``offsets.load.buffer.size`` chunks for a load.
- ``OffsetsTopic``: where a group's coordinator is. The topic is created
  the first time a client asks (``offsets.topic.num.partitions``, RF
  ``offsets.topic.replication.factor``, ``cleanup.policy=compact``,
  ``segment.bytes`` = ``offsets.topic.segment.bytes``). Like Kafka, with
  fewer live brokers than the replication factor the answer is
  COORDINATOR_NOT_AVAILABLE and nothing is created.
- ``leadership_changed``: seed 002 §6.8 step 6 (onLeadershipChange);
  ``replicas_stopped``: StopReplica of an offsets partition unloads it.

Runs on the broker's event loop; ``read_all`` runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Iterator

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GROUP_METADATA_TOPIC, GroupCoordinator
from kavka.protocol.records import iter_batches
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.state import PartitionState
from kavka.server.admin_manager import AdminManager, NewTopic
from kavka.server.metadata_cache import BrokerEndpoint, MetadataCache
from kavka.storage.topic_partition import TopicPartition

log = logging.getLogger("kavka.group")


class ReplicaGroupLog:
    def __init__(self, replica_manager: ReplicaManager, commit_timeout_ms: int, load_buffer_size: int) -> None:
        self.replica_manager = replica_manager
        self.commit_timeout_ms = commit_timeout_ms
        self.load_buffer_size = load_buffer_size

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        tp = TopicPartition(GROUP_METADATA_TOPIC, partition)
        results = await self.replica_manager.append_records(self.commit_timeout_ms, -1, {tp: batch},
                                                            internal_topics_allowed=True)
        return ErrorCode(results[tp].error)

    def read_all(self, partition: int) -> Iterator[bytes]:
        p = self.replica_manager.get_partition(TopicPartition(GROUP_METADATA_TOPIC, partition))
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


class OffsetsTopic:
    def __init__(self, coordinator: GroupCoordinator, cache: MetadataCache, admin: AdminManager, config) -> None:
        self.coordinator = coordinator
        self.cache = cache
        self.admin = admin
        self.config = config
        self._creating: asyncio.Task | None = None

    async def coordinator_for(self, group_id: str, listener: str) -> tuple[ErrorCode, int, BrokerEndpoint | None]:
        if not self.cache.contains_topic(GROUP_METADATA_TOPIC):
            return await self._create(), -1, None
        p = self.coordinator.partition_of(group_id)
        meta = self.cache.partition(GROUP_METADATA_TOPIC, p)
        endpoint = self.cache.leader_endpoint(GROUP_METADATA_TOPIC, p, listener)
        if meta is None or endpoint is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, None
        return ErrorCode.NONE, meta.leader, endpoint

    async def _create(self) -> ErrorCode:
        rf = self.config["offsets.topic.replication.factor"]
        live = len(self.cache.alive_brokers())
        if live < rf:
            log.warning("not creating %s: %d live brokers, offsets.topic.replication.factor is %d",
                        GROUP_METADATA_TOPIC, live, rf)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self._creating is None or self._creating.done():
            self._creating = asyncio.get_running_loop().create_task(self.admin.create_topics([NewTopic(
                GROUP_METADATA_TOPIC, self.config["offsets.topic.num.partitions"], rf,
                configs={"cleanup.policy": "compact",
                         "segment.bytes": str(self.config["offsets.topic.segment.bytes"])})]))
        return ErrorCode.COORDINATOR_NOT_AVAILABLE


def leadership_changed(coordinator: GroupCoordinator, broker_id: int, states: list[PartitionState],
                       errors: dict[TopicPartition, int]) -> None:
    """After LeaderAndIsr: load the groups of offsets partitions this broker
    now leads, unload those it follows."""
    for s in states:
        tp = s.topic_partition
        if tp.topic != GROUP_METADATA_TOPIC or errors.get(tp, 0) != 0:
            continue
        if s.leader == broker_id:
            coordinator.on_elected(tp.partition, s.leader_epoch)
        else:
            coordinator.on_resigned(tp.partition)


def replicas_stopped(coordinator: GroupCoordinator, stopped: list[TopicPartition]) -> None:
    """After StopReplica: this broker holds no replica of these partitions
    any more (reassigned away, deleted, or shutting down)."""
    for tp in stopped:
        if tp.topic == GROUP_METADATA_TOPIC:
            coordinator.on_resigned(tp.partition)
