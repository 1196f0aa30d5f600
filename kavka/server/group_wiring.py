"""Ties the group coordinator (``kavka.group``) to this broker through the
shared internal-topic wiring (``internal_topic``): its records go through
the replica manager, its partitions follow LeaderAndIsr, and
``__consumer_offsets`` is created on first use.

- ``ReplicaGroupLog``: appends bounded by ``offsets.commit.timeout.ms``;
  loads read ``offsets.load.buffer.size`` chunks.
- ``OffsetsTopic``: ``offsets.topic.num.partitions`` partitions, RF
  ``offsets.topic.replication.factor``, ``cleanup.policy=compact``,
  ``segment.bytes`` = ``offsets.topic.segment.bytes``.
- ``leadership_changed`` / ``replicas_stopped``: load and unload groups.
"""

from __future__ import annotations

from kavka.group.coordinator import GROUP_METADATA_TOPIC, GroupCoordinator
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.state import PartitionState
from kavka.server import internal_topic
from kavka.server.admin_manager import AdminManager
from kavka.server.internal_topic import InternalTopic, InternalTopicLog
from kavka.server.metadata_cache import MetadataCache
from kavka.common.topic_partition import TopicPartition


class ReplicaGroupLog(InternalTopicLog):
    def __init__(self, replica_manager: ReplicaManager, commit_timeout_ms: int, load_buffer_size: int) -> None:
        super().__init__(replica_manager, GROUP_METADATA_TOPIC, commit_timeout_ms, load_buffer_size)


class OffsetsTopic(InternalTopic):
    def __init__(self, coordinator: GroupCoordinator, cache: MetadataCache, admin: AdminManager, config) -> None:
        self.coordinator = coordinator
        super().__init__(GROUP_METADATA_TOPIC, coordinator.partition_of, cache, admin,
                         config["offsets.topic.num.partitions"], config["offsets.topic.replication.factor"],
                         "offsets.topic.replication.factor",
                         {"cleanup.policy": "compact", "segment.bytes": str(config["offsets.topic.segment.bytes"])})


def leadership_changed(coordinator: GroupCoordinator, broker_id: int, states: list[PartitionState],
                       errors: dict[TopicPartition, int]) -> None:
    internal_topic.leadership_changed(GROUP_METADATA_TOPIC, coordinator, broker_id, states, errors)


def replicas_stopped(coordinator: GroupCoordinator, stopped: list[TopicPartition]) -> None:
    internal_topic.replicas_stopped(GROUP_METADATA_TOPIC, coordinator, stopped)
