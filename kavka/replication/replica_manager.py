"""The replica manager: every partition replica this broker hosts (seed 002 §6).

It owns the table of ``Partition``s, applies the controller's LeaderAndIsr
(``become_leader_or_follower``, seed 000 §LeaderAndIsrRequest 响应过程 steps
1-7) and StopReplica (``stop_replicas``, seed 002 §6.9), runs the leader's
background tasks (``start``): "isr-expiration" and "isr-change-propagation"
(seed 002 §6.3), and serves the data path: produce, fetch, ListOffsets,
OffsetsForLeaderEpoch, DeleteRecords (seed 002 §6.5, §6.6).

Produce (``append_records``): acks must be -1, 0 or 1 (else every
partition gets INVALID_REQUIRED_ACKS); each partition is appended on its
leader (internal topics only when allowed; control batches only from the
transaction coordinator's markers); acks 0 and 1 answer at once, acks -1
waits in the produce purgatory (``DelayedProduce``) when at least one
append succeeded. Every append tries to complete waiting fetches and
produces of its partition.

Fetch (``fetch_messages``): the request's ``max_bytes`` and ``min_bytes``
are capped by ``fetch.max.bytes``; read every partition
(``read_from_local_log``: each within its ``partition_max_bytes`` and what
the request has left, the log read no further; for a consumer's Fetch
v11+ on a partition led here, ``replica.selector.class`` may answer a
``preferred_read_replica`` instead, KIP-392, and a follower serves such a
consumer below its own HW); for a follower, record its fetch offset as its LEO, propose adding it to
the ISR when it caught up, and move the HW; answer at once when the request
does not wait, named no partition, found ``min_bytes``, hit an error or a
diverging epoch or named a preferred read replica; otherwise wait in the fetch purgatory (``DelayedFetch``).
A follower's fetch goes through the leader replication quota
(``quota.LeaderReplicationQuota``, seed 002 §8): throttled partitions of an out-of-sync
follower get no records while it is exceeded, and the throttled bytes sent
are recorded once the answer is known.

Seams: ``IsrWriter`` and ``IsrChangeListener`` (``isr``: ZooKeeper
implementations there), ``FetcherManager`` (``fetcher.assignments``: the
follower side; ``FetcherAssignments`` by default, the broker passes a
``fetcher.manager.ReplicaFetcherManager``), the ``Clock`` (``kavka.common``), and
``known_partition`` (the broker's metadata cache: does the cluster have
this partition? decides UNKNOWN_TOPIC_OR_PARTITION vs NOT_LEADER_OR_FOLLOWER
for a partition not hosted here), the ``ReplicaSelector`` of
``replica.selector.class`` and ``replica_rack`` (the metadata cache again:
is a broker alive on a listener, and its rack).

Log directory failure (KIP-112, Kafka's ReplicaManager.handleLogDirFailure):
the "LogDirFailureHandler" task takes each newly failed directory from the
log manager's ``LogDirFailureChannel`` and ``handle_log_dir_failure``
stops the fetchers of its partitions and takes them offline (produce,
fetch, ListOffsets and LeaderAndIsr for them answer KAFKA_STORAGE_ERROR
until the broker restarts), has the log manager drop the directory (which
halts the broker when it was the last one), and tells the controller
through the ``LogDirEventNotifier`` seam (``log_dir_events``).

Who calls: the broker's request handlers and controller-request handlers,
all on the broker's one asyncio event loop; nothing here blocks on the
network. Log appends and reads run on the loop (page cache); the log manager
does fsyncs and checkpoints on its own threads. The handlers await the
coroutines ``append_records`` and ``fetch_messages``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kavka.common.broker_config_keys import TRUNCATION_MODES
from kavka.common.clock import Clock, SystemClock
from kavka.common.errors import ErrorCode, KafkaError, error_for
from kavka.common.ids import BrokerId
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.batch import InvalidRecordBatch, iter_batches
from kavka.replication.delayed_fetch import DelayedFetch, PreferredReadReplica, read_from_local_log
from kavka.replication.delayed_produce import DelayedProduce, ProducePartitionStatus
from kavka.replication.fetcher.assignments import FetcherAssignments, FetcherManager, InitialFetchState
from kavka.replication.isr import IsrChangeListener, IsrChangePropagation, IsrPropagationConfig, IsrWriter
from kavka.replication.isr_updates import IsrUpdates
from kavka.replication.leader_and_isr_entries import sort_entries
from kavka.replication.log_dir_events import LogDirEventNotifier
from kavka.replication.partition import Partition
from kavka.replication.purgatory import DelayedOperationPurgatory
from kavka.replication.quiet_partitions import QuietPartitions
from kavka.replication.quota import LeaderReplicationQuota
from kavka.replication.replica_selector import PartitionView, ReplicaSelector, ReplicaView
from kavka.replication.requests import (
    DeleteRecordsResult,
    EpochEndOffset,
    FetchIsolation,
    FetchParams,
    FetchPartition,
    FetchPartitionData,
    LogReadResult,
    ProducePartitionResult,
    error_code_of,
    error_message_of,
)
from kavka.replication.state import BrokerEndPoint, LeaderAndIsrResult, PartitionState, StopReplicaResult
from kavka.replication.topic_stats import BrokerTopicStats
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.errors import InvalidRecordError, InvalidTimestampError, KafkaStorageError, StorageError
from kavka.storage.fetch_data_info import TimestampAndOffset
from kavka.storage.log_append import LogAppendInfo
from kavka.storage.log_manager import LogManager
from kavka.storage.producer_state.entry import ActiveProducer
from kavka.storage.read_buffers import ReadBuffers

logger = logging.getLogger(__name__)
state_change_logger = logging.getLogger("kavka.state.change")

# The controller must learn of a failed log directory (KIP-112): the event
# znode is written again while ZooKeeper refuses it, for up to 5 minutes.
_LOG_DIR_EVENT_ATTEMPTS = 300
_LOG_DIR_EVENT_RETRY_S = 1.0

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


# The errors a client meets in normal operation, which Kafka's
# failedProduceRequestRate and failedFetchRequestRate leave out (ReplicaManager's
# appendToLocalLog and readFromLocalLog); any other error counts as failed.
EXPECTED_PRODUCE_ERRORS = frozenset({
    ErrorCode.NONE, ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.INVALID_TIMESTAMP,
})
EXPECTED_FETCH_ERRORS = frozenset({
    ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.OFFSET_OUT_OF_RANGE, ErrorCode.UNKNOWN_TOPIC_ID,
})


def _failure(exc: BaseException, tp: TopicPartition) -> ProducePartitionResult:
    if not isinstance(exc, (KafkaError, StorageError)):
        logger.exception("unexpected error appending to %s", tp, exc_info=exc)
    record_errors = exc.record_errors if isinstance(exc, (InvalidRecordError, InvalidTimestampError)) else ()
    return ProducePartitionResult(error_code_of(exc), error_message=error_message_of(exc),
                                  record_errors=record_errors)


def _has_control_batch(records: bytes | memoryview) -> bool:
    """Whether any batch header marks a control batch; a malformed buffer
    is left to the log's validation (which names the problem)."""
    try:
        return any(h.is_control for _pos, h in iter_batches(records, check_crc=False))
    except InvalidRecordBatch:
        return False


@dataclass(frozen=True, slots=True)
class ReplicaManagerConfig:
    """Broker settings the replica manager uses (Kafka's names in
    ``from_broker``). ``truncation_mode``: "leader-epoch" (KIP-101, the
    default: the follower side truncates by the leader's epochs) or "hw"
    (the seeds' design: truncate to the HW on becoming a follower)."""

    replica_lag_time_max_ms: int = 30_000
    truncation_mode: str = "leader-epoch"
    # fetch.max.bytes: the most a Fetch answer holds, whatever the request
    # asks (Kafka's default 55 MiB); the first batch still goes whole (KIP-74)
    fetch_max_bytes: int = 57_671_680
    num_replica_fetchers: int = 1
    isr_propagation: IsrPropagationConfig = field(default_factory=IsrPropagationConfig)
    isr_write_timeout_ms: int = 18_000  # zookeeper.session.timeout.ms (see isr_updates)

    def __post_init__(self) -> None:
        if self.truncation_mode not in TRUNCATION_MODES:
            raise ValueError(
                f"replica.truncation.mode {self.truncation_mode!r} is not one of {', '.join(TRUNCATION_MODES)}"
            )
        if self.replica_lag_time_max_ms < 1 or self.num_replica_fetchers < 1:
            raise ValueError("replica.lag.time.max.ms and num.replica.fetchers must be >= 1")
        if self.fetch_max_bytes < 1024:
            raise ValueError(f"fetch.max.bytes {self.fetch_max_bytes} is below its minimum of 1024")
        if self.isr_write_timeout_ms < 1:
            raise ValueError("the isr write timeout (zookeeper.session.timeout.ms) must be >= 1 ms")

    @classmethod
    def from_broker(cls, config: Any) -> ReplicaManagerConfig:
        """From a ``KafkaConfig`` (or any mapping with the keys)."""
        return cls(
            replica_lag_time_max_ms=int(config["replica.lag.time.max.ms"]),
            truncation_mode=str(config["replica.truncation.mode"]),
            num_replica_fetchers=int(config["num.replica.fetchers"]),
            isr_write_timeout_ms=int(config["zookeeper.session.timeout.ms"]),
            fetch_max_bytes=int(config["fetch.max.bytes"]),
        )


class ReplicaManager:
    """The broker's replicas (see the module docstring). The routes through
    the replication classes:

    Produce (``ProduceHandler``): ``append_records`` -> per partition
    ``_append_to_local_log`` (internal topic? control batch from a client?) ->
    ``Partition.append_records_to_leader`` (leader? acks=-1 and ISR below
    min.insync.replicas?) -> ``Log.append_as_leader`` (validate, assign offsets,
    stamp the leader epoch, producer state; ``LocalLog.append`` writes the
    active segment) -> ``Partition.maybe_increment_hw`` (an ISR of one
    commits at once) -> ``complete_delayed_requests``. acks 0/1 answer now;
    acks=-1 parks a ``DelayedProduce`` in ``produce_purgatory`` under its
    partitions.

    DelayedProduce completion on an HW advance: a follower's Fetch reaches
    ``fetch_messages`` -> ``_update_follower_fetch_states`` ->
    ``Partition.update_follower_fetch_state`` (the follower's ``Replica`` LEO)
    -> ``Partition.maybe_expand_isr`` (a proposal written by
    ``IsrUpdates.submit``) -> ``Partition.maybe_increment_hw`` ->
    ``complete_delayed_requests`` -> ``DelayedProduce.try_complete`` ->
    ``Partition.check_enough_replicas_reach_offset`` -> the handler's future.
    A completed ISR write (``IsrUpdates``) and a leadership change take the same
    last two steps.

    Fetch (``FetchHandler``, consumers and followers): ``fetch_messages`` ->
    ``read_from_local_log`` -> ``Partition.read_records`` (KIP-320 epoch
    checks, bounded by the LEO, HW or LSO) -> ``Log.read``; fewer than
    ``min_bytes`` parks a ``DelayedFetch`` in ``fetch_purgatory``, completed by
    an append or an HW move on its partitions, or its timeout.

    Follower fetch (this broker following): ``ReplicaFetcherManager``
    (``fetcher.manager``) -> ``ReplicaFetcher.run_once`` (``fetcher.task``):
    truncate by leader epoch (OffsetsForLeaderEpoch, ``truncation_offset``,
    ``LogManager.truncate_to``), then ``LeaderEndPoint.fetch`` (the leader's
    ``fetch_messages`` above) -> ``Partition.append_records_to_follower`` ->
    ``Log.append_as_follower`` -> ``Partition.update_follower_high_watermark``.
    """

    def __init__(
        self,
        broker_id: BrokerId,
        log_manager: LogManager,
        config: ReplicaManagerConfig,
        *,
        isr_writer: IsrWriter,
        isr_change_listener: IsrChangeListener,
        fetcher_manager: FetcherManager | None = None,
        clock: Clock | None = None,
        known_partition: Callable[[TopicPartition], bool] | None = None,
        leader_quota: LeaderReplicationQuota | None = None,
        replica_selector: ReplicaSelector | None = None,
        replica_rack: Callable[[int, str], tuple[bool, str | None]] | None = None,
        log_dir_event_notifier: LogDirEventNotifier | None = None,
        read_buffers: ReadBuffers | None = None,
        broker_alive: Callable[[int], bool] | None = None,
    ) -> None:
        self.broker_id = broker_id
        # Where the Fetch reads land (kavka.storage.read_buffers); None: a new bytes per read
        self.read_buffers = read_buffers
        self.log_manager = log_manager
        self.config = config
        self.clock = clock or log_manager.clock or SystemClock()
        self.controller_epoch = 0  # seed 002 §6.3 (1)
        self._partitions: dict[TopicPartition, Partition] = {}
        # KIP-112: partitions whose log directory failed (Kafka's HostedPartition.Offline)
        self._offline: set[TopicPartition] = set()
        self._failed_dirs: set[Path] = set()
        self._log_dir_event_notifier = log_dir_event_notifier
        # Topic ids of the partitions hosted here (LeaderAndIsr v5+): a leader
        # resolves a follower's Fetch v13+ by them even before the
        # controller's UpdateMetadata names a new topic.
        self._topic_names: dict[uuid.UUID, str] = {}
        self.fetcher_manager: FetcherManager = fetcher_manager or FetcherAssignments(config.num_replica_fetchers)
        self._known_partition = known_partition
        self.leader_quota = leader_quota  # seed 002 §8: None serves followers unthrottled
        # KIP-392: replica.selector.class (None: consumers read the leader),
        # and (broker, listener) -> (alive with an endpoint there, its rack)
        self.replica_selector = replica_selector
        self._replica_rack = replica_rack or (lambda broker_id, listener: (False, None))
        # Whether the metadata cache names a broker alive. Only followers on
        # live brokers join the ISR (Kafka's isReplicaIsrEligible, KIP-841):
        # the controller takes a dead broker's replica out of the ISR without
        # a new leader epoch, so a broker it declared dead (its ZooKeeper
        # session expired) that still fetches is not fenced by the epoch.
        self._broker_alive = broker_alive or (lambda broker_id: True)
        self.produce_purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Produce")
        self.fetch_purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Fetch")
        self.topic_stats = BrokerTopicStats()
        self.isr_updates = IsrUpdates(
            isr_writer,
            isr_change_listener,
            IsrChangePropagation(config.isr_propagation, self.clock.milliseconds()),
            self.clock,
            config.replica_lag_time_max_ms,
            on_change=self._isr_changed,
            write_timeout_ms=config.isr_write_timeout_ms,
        )
        self._tasks: list[asyncio.Task[None]] = []
        # Told the partitions that stop leading here on their own, with no
        # LeaderAndIsr to say so (``add_leadership_listener``).
        self._leadership_listeners: list[Callable[[list[TopicPartition]], None]] = []

    def add_leadership_listener(self, listener: Callable[[list[TopicPartition]], None]) -> None:
        """``listener(partitions)`` is called when partitions stop leading
        here on their own: an ISR write found the state znode moved on
        (seed 001 #3), so the controller has elected another leader this
        broker has not heard of yet. The coordinators of the internal topics
        unload them then, as they would on the LeaderAndIsr: a coordinator
        whose partition can no longer be written answers NOT_COORDINATOR and
        its clients look for the new one, instead of failing every write
        (a group rebalancing again at once after each failed SyncGroup,
        thousands of generations a minute)."""
        self._leadership_listeners.append(listener)

    def _isr_changed(self, partition: Partition) -> None:
        self.complete_delayed_requests(partition.topic_partition)
        if partition.fenced:
            for listener in self._leadership_listeners:
                listener([partition.topic_partition])

    # ---- the table ---------------------------------------------------------------------------
    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self._partitions.get(tp)

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self._partitions.values() if p.is_leader]

    def session_fence(self, generation: int) -> list[Partition]:
        """The broker's ZooKeeper session may be gone (``kavka.server.zk_session_fence``):
        stop leading every partition led here until the session comes back
        (``session_unfence``) or the controller's next LeaderAndIsr says who
        leads; the waiting produces and fetches are answered. Returns the
        partitions that stopped."""
        fenced = [p for p in self._partitions.values() if p.session_fence(generation)]
        for p in fenced:
            self.complete_delayed_requests(p.topic_partition)
        return fenced

    def session_unfence(self, generation: int) -> list[Partition]:
        """The session fence ``generation`` feared lost is back: lead again
        what it stopped. Returns the partitions that lead again."""
        return [p for p in self._partitions.values() if p.session_unfence(generation)]

    def under_replicated_partitions(self) -> list[TopicPartition]:
        """Partitions led here whose ISR is smaller than their replica set."""
        return [p.topic_partition for p in self._partitions.values() if p.is_under_replicated]

    def offline_partitions(self) -> list[TopicPartition]:
        """Partitions hosted here whose log directory failed (KIP-112)."""
        return sorted(self._offline)

    def missing_partition_error(self, tp: TopicPartition) -> ErrorCode:
        """Kafka's answer for a partition not hosted here: its log
        directory failed (KAFKA_STORAGE_ERROR, KIP-112), the cluster has it
        (another broker hosts it) or it does not exist."""
        if tp in self._offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if self._known_partition is not None and self._known_partition(tp):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def _delayed_produce_error(self, tp: TopicPartition) -> ErrorCode:
        """What a waiting acks=-1 produce answers once its partition left:
        KAFKA_STORAGE_ERROR if its log directory failed (Kafka's
        getPartitionOrError), else NOT_LEADER_OR_FOLLOWER (it was stopped or
        deleted: the client looks for the new leader)."""
        return ErrorCode.KAFKA_STORAGE_ERROR if tp in self._offline else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def partition_or_error(self, tp: TopicPartition) -> Partition:
        partition = self._partitions.get(tp)
        if partition is None:
            if tp in self._offline:
                raise error_for(ErrorCode.KAFKA_STORAGE_ERROR, f"the log directory of {tp} on broker {self.broker_id} is offline")
            raise error_for(self.missing_partition_error(tp), f"broker {self.broker_id} does not host {tp}")
        return partition

    def _get_or_create_partition(self, tp: TopicPartition, is_new: bool = True) -> Partition:
        partition = self._partitions.get(tp)
        if partition is None:
            try:
                log = self.log_manager.get_or_create_log(tp.topic, tp.partition, is_new=is_new)
            except KafkaStorageError:
                # KIP-112: an existing replica whose log may be on a failed
                # disk is offline here, not recreated empty
                self._offline.add(tp)
                raise
            partition = Partition(tp, self.broker_id, log, self.clock)
            self._partitions[tp] = partition
        return partition

    def complete_delayed_requests(self, tp: TopicPartition) -> None:
        """Something a delayed produce or fetch on ``tp`` waits for may have
        changed (append, HW, leadership): try to complete them."""
        self.fetch_purgatory.check_and_complete(tp)
        self.produce_purgatory.check_and_complete(tp)

    # ---- produce -------------------------------------------------------------------------------
    async def append_records(
        self,
        timeout_ms: int,
        required_acks: int,
        entries: Mapping[TopicPartition, bytes | memoryview],
        internal_topics_allowed: bool = False,
    ) -> dict[TopicPartition, ProducePartitionResult]:
        """Append each partition's batches to its leader; per-partition
        results, once the ISR has them for acks=-1."""
        results = self.append_records_nowait(timeout_ms, required_acks, entries, internal_topics_allowed)
        return await results if isinstance(results, asyncio.Future) else results

    def append_records_nowait(
        self,
        timeout_ms: int,
        required_acks: int,
        entries: Mapping[TopicPartition, bytes | memoryview],
        internal_topics_allowed: bool = False,
    ) -> dict[TopicPartition, ProducePartitionResult] | asyncio.Future[dict[TopicPartition, ProducePartitionResult]]:
        """Append each partition's batches to its leader now; the results,
        or for acks=-1 a future of them that the DelayedProduce completes.
        Nothing refers to ``entries`` once this returns (Kafka's produce
        handler releases the request's buffer once the append is done)."""
        if required_acks not in (-1, 0, 1):
            bad = ProducePartitionResult(
                ErrorCode.INVALID_REQUIRED_ACKS, error_message=f"acks={required_acks}; it must be -1, 0 or 1"
            )
            return {tp: bad for tp in entries}
        results: dict[TopicPartition, ProducePartitionResult] = {}
        appended: dict[TopicPartition, tuple[LogAppendInfo, int]] = {}
        stats = self.topic_stats
        for tp, records in entries.items():
            result = self._append_to_local_log(tp, records, required_acks, internal_topics_allowed, appended)
            results[tp] = result
            stats.record_produce(tp.topic, result.error not in EXPECTED_PRODUCE_ERRORS)
        if required_acks != -1 or not appended:
            return results
        statuses = {
            tp: ProducePartitionStatus(
                required_offset=appended[tp][0].last_offset + 1 if tp in appended else -1,
                leader_epoch=appended[tp][1] if tp in appended else -1,
                result=result,
                acks_pending=tp in appended,
            )
            for tp, result in results.items()
        }
        future: asyncio.Future[dict[TopicPartition, ProducePartitionResult]] = asyncio.get_running_loop().create_future()
        op = DelayedProduce(max(timeout_ms, 0), statuses, self.get_partition, future, self._delayed_produce_error)
        self.produce_purgatory.try_complete_else_watch(op, list(statuses))
        return future

    def _append_to_local_log(
        self,
        tp: TopicPartition,
        records: bytes | memoryview,
        required_acks: int,
        internal_topics_allowed: bool,
        appended: dict[TopicPartition, tuple[LogAppendInfo, int]],
    ) -> ProducePartitionResult:
        if tp.topic in INTERNAL_TOPICS and not internal_topics_allowed:
            return ProducePartitionResult(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                error_message=f"clients may not write to the internal topic {tp.topic}",
            )
        if not internal_topics_allowed and _has_control_batch(records):
            # Only a transaction coordinator writes markers (WriteTxnMarkers), never a client (KIP-98).
            return ProducePartitionResult(
                ErrorCode.INVALID_RECORD, error_message=f"a client may not produce control batches to {tp}"
            )
        partition = self.get_partition(tp)
        if partition is None:
            error = self.missing_partition_error(tp)
            why = "its log directory is offline" if error is ErrorCode.KAFKA_STORAGE_ERROR else "it is not the leader"
            return ProducePartitionResult(error, error_message=f"broker {self.broker_id} cannot append to {tp}: {why}")
        try:
            # Only the coordinators may write internal topics and markers:
            # their appends skip the client-only rules (Kafka's AppendOrigin).
            origin = AppendOrigin.COORDINATOR if internal_topics_allowed else AppendOrigin.CLIENT
            info = partition.append_records_to_leader(records, required_acks, origin=origin)
        except Exception as e:
            return _failure(e, tp)
        appended[tp] = (info, partition.leader_epoch)
        self.topic_stats.record_in(tp.topic, info.valid_bytes, info.record_count)
        self.complete_delayed_requests(tp)
        return ProducePartitionResult(ErrorCode.NONE, info.first_offset, info.log_append_time, info.log_start_offset)

    # ---- fetch ---------------------------------------------------------------------------------
    def _read(self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition]) -> dict[TopicPartition, LogReadResult]:
        return read_from_local_log(
            self.get_partition, self.missing_partition_error, params, partitions, self._leader_throttled(params),
            self._preferred_read_replica(params), self.read_buffers,
        )

    def _preferred_read_replica(self, params: FetchParams) -> PreferredReadReplica | None:
        """Kafka's ReplicaManager.findPreferredReadReplica (KIP-392): for a
        consumer's Fetch v11+ on a partition led here, the replica the
        selector picks among the leader and the in-sync followers that hold
        the fetch offset and are alive on the client's listener; a pick
        other than the leader is answered instead of reading."""
        selector, client = self.replica_selector, params.client_metadata
        if selector is None or client is None or not params.is_from_consumer:
            return None
        now = self.clock.milliseconds()

        def choose(partition: Partition, req: FetchPartition) -> LogReadResult | None:
            if not partition.is_leader:
                return None
            try:
                partition.check_leader_epoch(req.current_leader_epoch)
            except KafkaError:
                return None  # the read answers the epoch error
            log = partition.log
            in_sync = set(partition.isr)
            views = []
            for broker_id in partition.assigned_replicas:
                replica = partition.replica(broker_id)
                if replica is None or broker_id not in in_sync:
                    continue  # the leader itself, or out of sync (a lagging follower would hold the consumer back)
                if not (replica.log_start_offset <= req.fetch_offset <= replica.log_end_offset):
                    continue
                alive, rack = self._replica_rack(broker_id, client.listener)
                if alive:
                    views.append(ReplicaView(broker_id, rack, replica.log_end_offset,
                                             max(0, now - replica.last_caught_up_time_ms)))
            _, leader_rack = self._replica_rack(self.broker_id, client.listener)
            leader = ReplicaView(self.broker_id, leader_rack, log.log_end_offset, 0)
            selected = selector.select(client, PartitionView([*views, leader], leader))
            if selected is None or selected.broker_id == self.broker_id:
                return None
            logger.debug("%s: replica selector sent client %r (rack %r) to broker %d",
                         partition.topic_partition, client.client_id, client.rack_id, selected.broker_id)
            return LogReadResult(
                ErrorCode.NONE, fetch_offset=req.fetch_offset, high_watermark=log.high_watermark,
                last_stable_offset=partition.last_stable_offset(), log_start_offset=log.log_start_offset,
                leader_end_offset=log.log_end_offset, preferred_read_replica=selected.broker_id)

        return choose

    def _leader_throttled(self, params: FetchParams) -> Callable[[Partition], bool] | None:
        quota = self.leader_quota
        if not params.is_from_follower or quota is None or not quota.active:
            return None
        return lambda partition: quota.should_throttle(partition, params.replica_id)

    def _record_leader_quota(
        self, params: FetchParams, answer: dict[TopicPartition, FetchPartitionData]
    ) -> dict[TopicPartition, FetchPartitionData]:
        stats = self.topic_stats
        for tp, data in answer.items():
            stats.record_fetch(tp.topic, data.error not in EXPECTED_FETCH_ERRORS)
        if params.is_from_follower:
            if self.leader_quota is not None:
                self.leader_quota.record(answer, self.get_partition)
        else:
            for tp, data in answer.items():
                if data.records:
                    stats.record_out(tp.topic, len(data.records))
        return answer

    async def fetch_messages(
        self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition],
        quiet: QuietPartitions | None = None,
    ) -> dict[TopicPartition, FetchPartitionData]:
        """Serve a Fetch from a consumer (replica_id -1) or a follower.
        The answer holds at most ``fetch.max.bytes`` whatever the request
        asks, and the fetch waits for no more than that (Kafka's
        fetchMaxBytes and fetchMinBytes, followers included).

        ``quiet``: a follower's session's partitions that need not be read
        again (``kavka.replication.quiet_partitions``); the answer leaves
        out those skipped, and ``quiet.found`` gets the marks of this
        answer's quiet partitions."""
        max_bytes = min(params.max_bytes, self.config.fetch_max_bytes)
        if max_bytes != params.max_bytes or params.min_bytes > max_bytes:
            params = dataclasses.replace(params, max_bytes=max_bytes, min_bytes=min(params.min_bytes, max_bytes))
        if not params.is_from_follower:
            quiet = None
        to_read, skipped = quiet.split(partitions, self.get_partition) if quiet is not None else (partitions, {})
        # The marks are taken with the read, before this fetch moves the
        # HW: the follower hears of that move by the next fetch's read. A
        # parked fetch's answer re-reads after recording nothing: it notes
        # no mark (kavka.replication.quiet_partitions).
        results = self._read_noting_quiet(params, to_read, quiet)
        if params.is_from_follower:
            self._update_follower_fetch_states(params.replica_id, to_read, results)
            self._record_skipped_fetches(params.replica_id, skipped)
        readable = sum(len(r.records) for r in results.values())
        answer_now = (
            params.max_wait_ms <= 0
            or not partitions
            or readable >= params.min_bytes
            or any(r.error is not ErrorCode.NONE or r.diverging_epoch is not None or r.preferred_read_replica >= 0
                   for r in results.values())
        )
        if answer_now:
            return self._record_leader_quota(params, {tp: r.to_partition_data() for tp, r in results.items()})
        epochs = {}
        for tp in partitions:
            partition = self.get_partition(tp)
            if partition is not None:
                epochs[tp] = partition.leader_epoch
        future: asyncio.Future[dict[TopicPartition, FetchPartitionData]] = asyncio.get_running_loop().create_future()
        op = DelayedFetch(
            params, partitions, epochs, self.get_partition, lambda some: self._read_forgetting_quiet(params, some, quiet),
            future, self._leader_throttled(params), {tp: r.fetch_offset_metadata for tp, r in results.items()},
            first=results, quiet=skipped.keys(),
        )
        self.fetch_purgatory.try_complete_else_watch(op, list(partitions))
        return self._record_leader_quota(params, await future)

    def _read_noting_quiet(
        self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition], quiet: QuietPartitions | None
    ) -> dict[TopicPartition, LogReadResult]:
        results = self._read(params, partitions)
        if quiet is not None:
            quiet.note(results, self.get_partition)
        return results

    def _read_forgetting_quiet(
        self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition], quiet: QuietPartitions | None
    ) -> dict[TopicPartition, LogReadResult]:
        results = self._read(params, partitions)
        if quiet is not None:
            quiet.forget(results)
        return results

    def _record_skipped_fetches(self, replica_id: int, skipped: Mapping[TopicPartition, FetchPartition]) -> None:
        """What a read of each skipped partition would have recorded: the
        follower fetched at the log end now (its LEO, the ISR and the HW
        cannot have moved: the mark holds them), and the topic's fetch count."""
        if not skipped:
            return
        now = self.clock.milliseconds()
        stats = self.topic_stats
        for tp, req in skipped.items():
            partition = self.get_partition(tp)
            if partition is not None and partition.update_follower_fetch_state(
                    replica_id, req.fetch_offset, req.log_start_offset, now, req.fetch_offset):
                # A read would propose a caught-up follower for the ISR;
                # one refused as not alive, skipped since, is proposed here
                # once the metadata cache names its broker alive again.
                self._maybe_expand_isr(partition, replica_id)
            stats.record_fetch(tp.topic, False)

    def _maybe_expand_isr(self, partition: Partition, replica_id: int) -> None:
        """Propose a follower that caught up for the ISR if its broker is
        alive (Kafka's isReplicaIsrEligible, KIP-841; see ``__init__``)."""
        if replica_id in partition.isr or not self._broker_alive(replica_id):
            return
        proposal = partition.maybe_expand_isr(BrokerId(replica_id))
        if proposal is not None:
            _ = self.isr_updates.submit(partition, proposal)  # held by isr_updates until written

    def _update_follower_fetch_states(
        self, replica_id: int, partitions: Mapping[TopicPartition, FetchPartition], results: Mapping[TopicPartition, LogReadResult]
    ) -> None:
        """Seed 002 §6.6 (1)-(2): a follower's fetch offset is its LEO.
        Delayed requests are re-checked only where the high watermark moved
        (Kafka's Partition.updateFollowerFetchState): nothing else a fetch
        records can complete one, and a re-check walks every partition of
        each fetch parked on the partition, so re-checking all of them on
        every follower fetch costs partitions x partitions per fetch."""
        now = self.clock.milliseconds()
        for tp, result in results.items():
            if result.error is not ErrorCode.NONE or result.diverging_epoch is not None:
                continue
            partition = self.get_partition(tp)
            req = partitions[tp]
            if partition is None or not partition.update_follower_fetch_state(
                replica_id, req.fetch_offset, req.log_start_offset, now, result.leader_end_offset
            ):
                continue
            self._maybe_expand_isr(partition, replica_id)
            if partition.maybe_increment_hw():
                self.complete_delayed_requests(tp)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The topic a partition hosted here has ``topic_id`` (KIP-516), or None."""
        return self._topic_names.get(topic_id)

    def marker_closes_nothing(self, tp: TopicPartition, producer_id: int, producer_epoch: int,
                              coordinator_epoch: int) -> bool:
        """Whether a transaction marker for ``producer_id`` would be appended
        to ``tp`` without closing anything: a retry of a marker that already
        landed. That is: this broker leads the partition, the producer is
        known there at the marker's producer epoch with no transaction open,
        and the marker is not one the append would refuse (an older
        coordinator epoch than the partition's last marker for the producer:
        TRANSACTION_COORDINATOR_FENCED).

        Everything else is appended, as Kafka's WriteTxnMarkers always does:
        on a broker that does not lead the partition the append answers
        NOT_LEADER_OR_FOLLOWER, so the coordinator writes the marker where it
        counts (a follower answering "nothing to close" from its lagging
        producer state would complete the transaction without it); and a
        marker of a newer producer epoch (the coordinator bumps the epoch
        when it aborts a transaction that timed out, KIP-588), or of a
        producer unknown here, is written even with nothing open, so that a
        write of the aborted transaction that arrives late, a retried
        Produce or TxnOffsetCommit at the old epoch, is fenced instead of
        opening a transaction no marker will ever close (the hanging
        transaction of KIP-890)."""
        partition = self.get_partition(tp)
        if partition is None or not partition.is_leader:
            return False
        entry = partition.log.producer_state.last_entry(producer_id)
        if entry is None or entry.current_txn_first_offset >= 0:
            return False
        return producer_epoch == entry.producer_epoch and coordinator_epoch >= entry.coordinator_epoch

    def active_producers(self, tp: TopicPartition) -> list[ActiveProducer]:
        """DescribeProducers for one partition hosted here, leader or
        follower (KIP-664 lets an operator ask any replica); raises
        ``KafkaError`` (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION)
        for one not hosted here, as Kafka's getPartitionOrError."""
        return self.partition_or_error(tp).log.active_producers()

    # ---- offsets -------------------------------------------------------------------------------
    def fetch_offset_for_timestamp(
        self, tp: TopicPartition, timestamp: int, isolation: FetchIsolation | None, current_leader_epoch: int = -1
    ) -> TimestampAndOffset | None:
        """ListOffsets for one partition; raises ``KafkaError``/``StorageError``."""
        return self.partition_or_error(tp).fetch_offset_for_timestamp(timestamp, isolation, current_leader_epoch)

    def last_offset_for_leader_epoch(
        self, tp: TopicPartition, current_leader_epoch: int, leader_epoch: int
    ) -> EpochEndOffset:
        """OffsetsForLeaderEpoch for one partition; raises ``KafkaError``."""
        return self.partition_or_error(tp).last_offset_for_leader_epoch(current_leader_epoch, leader_epoch)

    def delete_records(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, DeleteRecordsResult]:
        """DeleteRecords on the leaders: each log start moves to the offset
        (-1: the HW). The answer is the leader's new log start; followers
        follow it through the log start offset in their fetch responses."""
        out: dict[TopicPartition, DeleteRecordsResult] = {}
        for tp, offset in offsets.items():
            try:
                low = self.partition_or_error(tp).delete_records_on_leader(offset)
                out[tp] = DeleteRecordsResult(ErrorCode.NONE, low)
            except (KafkaError, StorageError) as e:
                out[tp] = DeleteRecordsResult(error_code_of(e), error_message=error_message_of(e))
        return out


    # ---- LeaderAndIsr (seed 000 §LeaderAndIsrRequest 响应过程) ----------------------------------
    def become_leader_or_follower(
        self,
        controller_id: int,
        controller_epoch: int,
        partition_states: Iterable[PartitionState],
        live_leaders: Mapping[int, BrokerEndPoint],
    ) -> LeaderAndIsrResult:
        """Apply a LeaderAndIsr request; per-partition error codes."""
        states = list(partition_states)
        # Step 1: a request from an older controller changes nothing.
        if controller_epoch < self.controller_epoch:
            state_change_logger.warning(
                "broker %d ignored LeaderAndIsr from controller %d with epoch %d: the current controller epoch is %d",
                self.broker_id, controller_id, controller_epoch, self.controller_epoch,
            )
            stale = int(ErrorCode.STALE_CONTROLLER_EPOCH)
            return LeaderAndIsrResult(stale, {s.topic_partition: stale for s in states})
        self.controller_epoch = controller_epoch
        # Step 2: keep entries with a newer leader epoch (or the same leadership
        # on a newer znode version) that name this broker.
        entries = sort_entries(self.broker_id, controller_id, controller_epoch, states, self._partitions, self._offline)
        errors, accepted = entries.errors, entries.accepted
        for tp, state in accepted.items():
            if state.topic_id is not None:
                self._topic_names[state.topic_id] = tp.topic
        # Step 3: split by role.
        to_lead = {tp: s for tp, s in accepted.items() if s.leader == self.broker_id}
        to_follow = {tp: s for tp, s in accepted.items() if s.leader != self.broker_id}
        # Steps 4 and 5.
        if to_lead:
            errors.update(self._make_leaders(to_lead))
        if to_follow:
            errors.update(self._make_followers(to_follow, live_leaders))
        # Step 6 (start the HW checkpoint thread): the log manager's periodic
        # job writes replication-offset-checkpoint from each Log's high
        # watermark, which partitions keep current; a second writer would race
        # it on the same temporary file, so there is nothing to start here.
        # Step 7.
        self.fetcher_manager.shutdown_idle_fetchers()
        return LeaderAndIsrResult(int(ErrorCode.NONE), errors)

    def _make_leaders(self, states: dict[TopicPartition, PartitionState]) -> dict[TopicPartition, int]:
        """Seed 002 §6.8 makeLeaders: stop fetching, then lead."""
        self.fetcher_manager.remove_fetcher_for_partitions(states.keys())
        errors: dict[TopicPartition, int] = {}
        for tp, state in states.items():
            try:
                self._get_or_create_partition(tp, state.is_new).make_leader(state)
                errors[tp] = int(ErrorCode.NONE)
            except Exception as e:
                errors[tp] = self._role_change_failed("leader", tp, e)
            self.complete_delayed_requests(tp)
        return errors

    def _role_change_failed(self, role: str, tp: TopicPartition, exc: Exception) -> int:
        """One partition's failure must not stop the others (its log dir may
        be offline): log it and answer its code."""
        if isinstance(exc, (StorageError, OSError)):
            logger.error("broker %d could not become %s of %s: %s", self.broker_id, role, tp, exc)
            return int(error_code_of(exc) if isinstance(exc, StorageError) else ErrorCode.KAFKA_STORAGE_ERROR)
        logger.exception("broker %d could not become %s of %s", self.broker_id, role, tp)
        return int(error_code_of(exc))

    def _make_followers(
        self, states: dict[TopicPartition, PartitionState], live_leaders: Mapping[int, BrokerEndPoint]
    ) -> dict[TopicPartition, int]:
        """Seed 002 §6.8 makeFollowers: follow, stop the old fetchers,
        truncate (to the HW in "hw" mode; by leader epoch in the fetcher
        otherwise), answer waiting requests, fetch from the live new leader."""
        errors: dict[TopicPartition, int] = {}
        changed: list[Partition] = []
        for tp, state in states.items():
            try:
                partition = self._get_or_create_partition(tp, state.is_new)
                if partition.make_follower(state):
                    changed.append(partition)
                errors[tp] = int(ErrorCode.NONE)
            except Exception as e:
                errors[tp] = self._role_change_failed("follower", tp, e)
        self.fetcher_manager.remove_fetcher_for_partitions([p.topic_partition for p in changed])
        by_hw = self.config.truncation_mode == "hw"
        fetch_states: dict[TopicPartition, InitialFetchState] = {}
        for partition in changed:
            tp = partition.topic_partition
            try:
                if by_hw:
                    self.log_manager.truncate_to(tp, partition.log.high_watermark)
            except StorageError as e:
                logger.error("broker %d could not truncate %s: %s", self.broker_id, tp, e)
                errors[tp] = int(error_code_of(e))
                continue
            finally:
                self.complete_delayed_requests(tp)
            leader = live_leaders.get(partition.leader_id)
            if leader is None:
                state_change_logger.warning(
                    "broker %d follows %s but its leader %d is not alive; no fetcher started",
                    self.broker_id, tp, partition.leader_id,
                )
                continue
            fetch_states[tp] = InitialFetchState(
                leader, partition.leader_epoch, partition.log.log_end_offset, truncate_first=not by_hw
            )
        if fetch_states:
            self.fetcher_manager.add_fetcher_for_partitions(fetch_states)
        return errors

    # ---- StopReplica (seed 002 §6.9) ------------------------------------------------------------
    def stop_replicas(
        self, controller_id: int, controller_epoch: int, partitions: Iterable[TopicPartition], delete: bool
    ) -> StopReplicaResult:
        """Stop hosting ``partitions`` (and delete their logs when ``delete``)."""
        tps = list(partitions)
        if controller_epoch < self.controller_epoch:
            state_change_logger.warning(
                "broker %d ignored StopReplica from controller %d with epoch %d: the current controller epoch is %d",
                self.broker_id, controller_id, controller_epoch, self.controller_epoch,
            )
            stale = int(ErrorCode.STALE_CONTROLLER_EPOCH)
            return StopReplicaResult(stale, {tp: stale for tp in tps})
        self.controller_epoch = controller_epoch
        self.fetcher_manager.remove_fetcher_for_partitions(tps)
        errors = {tp: int(self._stop_replica(tp, delete)) for tp in tps}
        self.fetcher_manager.shutdown_idle_fetchers()
        return StopReplicaResult(int(ErrorCode.NONE), errors)

    def _stop_replica(self, tp: TopicPartition, delete: bool) -> ErrorCode:
        if tp in self._offline:
            state_change_logger.warning("broker %d ignored StopReplica for %s: its log directory is offline",
                                        self.broker_id, tp)
            return ErrorCode.KAFKA_STORAGE_ERROR
        partition = self._partitions.pop(tp, None)
        if delete and partition is not None and partition.topic_id is not None:
            self._topic_names.pop(partition.topic_id, None)
        self.complete_delayed_requests(tp)  # they now answer NOT_LEADER / unknown
        state_change_logger.info("broker %d stopped replica %s (delete=%s)", self.broker_id, tp, delete)
        if delete:
            try:
                self.log_manager.delete_log(tp.topic, tp.partition)
            except StorageError as e:
                logger.error("broker %d could not delete the log of %s: %s", self.broker_id, tp, e)
                return error_code_of(e)
        return ErrorCode.NONE

    # ---- log directory failure (KIP-112) ---------------------------------------------------------
    async def handle_log_dir_failure(self, log_dir: Path | str) -> list[TopicPartition]:
        """Stop serving every replica in the failed ``log_dir`` (Kafka's
        ReplicaManager.handleLogDirFailure): stop their fetchers, take them
        offline (waiting requests answer now), have the log manager drop the
        directory (it halts the broker if no directory is left), then tell
        the controller. Returns the partitions taken offline."""
        path = Path(log_dir)  # as the log manager names it: absolute
        if path in self._failed_dirs:
            return []
        self._failed_dirs.add(path)
        logger.warning("Stopping serving replicas in dir %s", path)
        in_dir = sorted(tp for tp, p in self._partitions.items() if p.log.dir.parent == path)
        self.fetcher_manager.remove_fetcher_for_partitions(in_dir)
        for tp in in_dir:
            del self._partitions[tp]
            self._offline.add(tp)
            self.complete_delayed_requests(tp)
        logger.warning("Broker %d stopped fetcher for partitions %s because they are in the failed log directory %s",
                       self.broker_id, ",".join(str(tp) for tp in in_dir), path)
        # Logs of the directory no LeaderAndIsr has named yet are offline too.
        dropped = await asyncio.to_thread(self.log_manager.handle_log_dir_failure, path)
        self._offline.update(dropped)
        self.fetcher_manager.shutdown_idle_fetchers()
        if self._log_dir_event_notifier is not None:
            await self._notify_controller(path)
        logger.warning("Stopped serving replicas in dir %s", path)
        return sorted(set(in_dir) | set(dropped))

    async def _notify_controller(self, path: Path) -> None:
        notifier = self._log_dir_event_notifier
        assert notifier is not None
        for attempt in range(1, _LOG_DIR_EVENT_ATTEMPTS + 1):
            try:
                await notifier.log_dir_failed(self.broker_id)
                return
            except Exception as e:  # ZooKeeper unreachable for now: retried, the controller must learn it
                logger.error("broker %d could not write the log dir event for %s (attempt %d of %d): %s",
                             self.broker_id, path, attempt, _LOG_DIR_EVENT_ATTEMPTS, e)
                await asyncio.sleep(_LOG_DIR_EVENT_RETRY_S)

    async def _run_log_dir_failure_handler(self) -> None:
        """Kafka's LogDirFailureHandler thread, as a task: wakes when the
        channel queues a directory (from any thread)."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()

        def on_offline() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the broker is stopping
                loop.call_soon_threadsafe(wake.set)

        channel = self.log_manager.failure_channel
        channel.set_listener(on_offline)
        while True:
            await wake.wait()
            wake.clear()
            while (log_dir := channel.poll()) is not None:
                try:
                    await self.handle_log_dir_failure(log_dir)
                except Exception:
                    logger.exception("broker %d failed to handle the failure of log directory %s", self.broker_id, log_dir)

    # ---- background tasks and lifecycle ---------------------------------------------------------
    def maybe_shrink_isrs(self) -> int:
        """One ISR-expiry pass over the partitions this broker leads."""
        return self.isr_updates.maybe_shrink_isrs(self.leader_partitions())

    def checkpoint_high_watermarks(self) -> None:
        """Write every log's HW to replication-offset-checkpoint now (the
        log manager's periodic job does this too; call from a thread)."""
        self.log_manager.checkpoint_high_watermarks()

    def start(self) -> None:
        """Start "isr-expiration", "isr-change-propagation" and
        "LogDirFailureHandler" (on the loop)."""
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self.isr_updates.run_isr_expiration(self.leader_partitions), name="isr-expiration"),
            loop.create_task(self.isr_updates.run_isr_change_propagation(), name="isr-change-propagation"),
            loop.create_task(self._run_log_dir_failure_handler(), name="LogDirFailureHandler"),
        ]

    async def shutdown(self) -> None:
        """Stop the tasks, wait for ISR writes in flight, answer every delayed
        request with what it has."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.isr_updates.drain()
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()
