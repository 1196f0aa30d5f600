"""Ties the transaction coordinator (``kavka.transaction``) to this broker,
as ``group_wiring`` does for groups: its records go through the replica
manager, its partitions follow LeaderAndIsr / StopReplica, and
``__transaction_state`` is created on first use.

- ``ReplicaTransactionLog``: the coordinator's ``TransactionLog`` — appends
  with acks=-1, internal topics allowed, bounded by
  ``request.timeout.ms``-like 30 s; reads a partition's whole local log in
  ``transaction.state.log.load.buffer.size`` chunks for a load.
- ``TransactionStateTopic``: where a transactional id's coordinator is.
  The topic is created the first time a client asks
  (``transaction.state.log.num.partitions``, RF
  ``transaction.state.log.replication.factor``, ``min.insync.replicas`` =
  ``transaction.state.log.min.isr``, ``cleanup.policy=compact``,
  ``segment.bytes`` = ``transaction.state.log.segment.bytes``); with fewer
  live brokers than the RF the answer is COORDINATOR_NOT_AVAILABLE.
- ``txn_leadership_changed`` / ``txn_replicas_stopped``: load and unload.

Runs on the broker's event loop; ``read_all`` runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Iterator

from kavka.common.errors import ErrorCode
from kavka.protocol.records import iter_batches
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.state import PartitionState
from kavka.server.admin_manager import AdminManager, NewTopic
from kavka.server.metadata_cache import BrokerEndpoint, MetadataCache
from kavka.storage.topic_partition import TopicPartition
from kavka.transaction.coordinator import TRANSACTION_STATE_TOPIC, TransactionCoordinator

log = logging.getLogger("kavka.transaction")
APPEND_TIMEOUT_MS = 30_000


class ReplicaTransactionLog:
    def __init__(self, replica_manager: ReplicaManager, load_buffer_size: int) -> None:
        self.replica_manager = replica_manager
        self.load_buffer_size = load_buffer_size

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition)
        results = await self.replica_manager.append_records(APPEND_TIMEOUT_MS, -1, {tp: batch},
                                                            internal_topics_allowed=True)
        return ErrorCode(results[tp].error)

    def read_all(self, partition: int) -> Iterator[bytes]:
        p = self.replica_manager.get_partition(TopicPartition(TRANSACTION_STATE_TOPIC, partition))
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


class TransactionStateTopic:
    def __init__(self, coordinator: TransactionCoordinator, cache: MetadataCache, admin: AdminManager,
                 config) -> None:
        self.coordinator = coordinator
        self.cache = cache
        self.admin = admin
        self.config = config
        self._creating: asyncio.Task | None = None

    async def coordinator_for(self, transactional_id: str, listener: str
                              ) -> tuple[ErrorCode, int, BrokerEndpoint | None]:
        if not self.cache.contains_topic(TRANSACTION_STATE_TOPIC):
            return await self._create(), -1, None
        p = self.coordinator.partition_of(transactional_id)
        meta = self.cache.partition(TRANSACTION_STATE_TOPIC, p)
        endpoint = self.cache.leader_endpoint(TRANSACTION_STATE_TOPIC, p, listener)
        if meta is None or endpoint is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, None
        return ErrorCode.NONE, meta.leader, endpoint

    async def _create(self) -> ErrorCode:
        rf = self.config["transaction.state.log.replication.factor"]
        live = len(self.cache.alive_brokers())
        if live < rf:
            log.warning("not creating %s: %d live brokers, transaction.state.log.replication.factor is %d",
                        TRANSACTION_STATE_TOPIC, live, rf)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self._creating is None or self._creating.done():
            self._creating = asyncio.get_running_loop().create_task(self.admin.create_topics([NewTopic(
                TRANSACTION_STATE_TOPIC, self.config["transaction.state.log.num.partitions"], rf,
                configs={"cleanup.policy": "compact",
                         "min.insync.replicas": str(self.config["transaction.state.log.min.isr"]),
                         "segment.bytes": str(self.config["transaction.state.log.segment.bytes"])})]))
        return ErrorCode.COORDINATOR_NOT_AVAILABLE


def txn_leadership_changed(coordinator: TransactionCoordinator, broker_id: int, states: list[PartitionState],
                           errors: dict[TopicPartition, int]) -> None:
    """After LeaderAndIsr: load the transactional ids of the
    ``__transaction_state`` partitions this broker now leads (the leader
    epoch is the coordinator epoch), unload those it follows."""
    for s in states:
        tp = s.topic_partition
        if tp.topic != TRANSACTION_STATE_TOPIC or errors.get(tp, 0) != 0:
            continue
        if s.leader == broker_id:
            coordinator.on_elected(tp.partition, s.leader_epoch)
        else:
            coordinator.on_resigned(tp.partition)


def txn_replicas_stopped(coordinator: TransactionCoordinator, stopped: list[TopicPartition]) -> None:
    for tp in stopped:
        if tp.topic == TRANSACTION_STATE_TOPIC:
            coordinator.on_resigned(tp.partition)
