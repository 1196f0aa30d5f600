"""Ties the transaction coordinator (``kavka.transaction``) to this broker
through the shared internal-topic wiring (``internal_topic``), as
``group_wiring`` does for groups: its records go through the replica
manager, its partitions follow LeaderAndIsr / StopReplica, and
``__transaction_state`` is created on first use.

- ``ReplicaTransactionLog``: appends bounded by a ``request.timeout.ms``-like
  30 s; loads read ``transaction.state.log.load.buffer.size`` chunks.
- ``TransactionStateTopic``: ``transaction.state.log.num.partitions``
  partitions, RF ``transaction.state.log.replication.factor``,
  ``min.insync.replicas`` = ``transaction.state.log.min.isr``,
  ``cleanup.policy=compact``, ``segment.bytes`` =
  ``transaction.state.log.segment.bytes``.
- ``txn_leadership_changed`` / ``txn_replicas_stopped``: load and unload
  (the leader epoch is the coordinator epoch).
"""

from __future__ import annotations

from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.state import PartitionState
from kavka.server import internal_topic
from kavka.server.admin_manager import AdminManager
from kavka.server.internal_topic import InternalTopic, InternalTopicLog
from kavka.server.metadata_cache import MetadataCache
from kavka.common.topic_partition import TopicPartition
from kavka.transaction.coordinator import TRANSACTION_STATE_TOPIC, TransactionCoordinator

APPEND_TIMEOUT_MS = 30_000


class ReplicaTransactionLog(InternalTopicLog):
    def __init__(self, replica_manager: ReplicaManager, load_buffer_size: int) -> None:
        super().__init__(replica_manager, TRANSACTION_STATE_TOPIC, APPEND_TIMEOUT_MS, load_buffer_size)


class TransactionStateTopic(InternalTopic):
    def __init__(self, coordinator: TransactionCoordinator, cache: MetadataCache, admin: AdminManager,
                 config) -> None:
        self.coordinator = coordinator
        super().__init__(TRANSACTION_STATE_TOPIC, coordinator.partition_of, cache, admin,
                         config["transaction.state.log.num.partitions"],
                         config["transaction.state.log.replication.factor"],
                         "transaction.state.log.replication.factor",
                         {"cleanup.policy": "compact",
                          "min.insync.replicas": str(config["transaction.state.log.min.isr"]),
                          "segment.bytes": str(config["transaction.state.log.segment.bytes"])})


def txn_leadership_changed(coordinator: TransactionCoordinator, broker_id: int, states: list[PartitionState],
                           errors: dict[TopicPartition, int]) -> None:
    internal_topic.leadership_changed(TRANSACTION_STATE_TOPIC, coordinator, broker_id, states, errors)


def txn_replicas_stopped(coordinator: TransactionCoordinator, stopped: list[TopicPartition]) -> None:
    internal_topic.replicas_stopped(TRANSACTION_STATE_TOPIC, coordinator, stopped)
