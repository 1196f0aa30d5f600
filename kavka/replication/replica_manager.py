"""The replica manager: every partition replica this broker hosts (seed 002 §6).

It owns the table of ``Partition``s, applies the controller's LeaderAndIsr
(``become_leader_or_follower``, seed 000 §LeaderAndIsrRequest 响应过程 steps
1-7) and StopReplica (``stop_replicas``, seed 002 §6.9), and runs the
leader's background tasks (``start``): "isr-expiration" and
"isr-change-propagation" (seed 002 §6.3). The data path — produce, fetch,
ListOffsets, OffsetsForLeaderEpoch, DeleteRecords — is the mixin
``ReplicaDataPath`` (``data_path``).

Seams: ``IsrWriter`` and ``IsrChangeListener`` (``isr``: ZooKeeper
implementations there), ``FetcherManager`` (``fetcher_manager``: the
follower side; ``FetcherAssignments`` by default), the storage ``Clock``,
and ``known_partition`` (the broker's metadata cache: does the cluster have
this partition? decides UNKNOWN_TOPIC_OR_PARTITION vs NOT_LEADER_OR_FOLLOWER
for a partition not hosted here).

Who calls: the broker's request handlers and controller-request handlers,
all on the broker's one asyncio event loop; nothing here blocks on the
network. Log appends and reads run on the loop (page cache); the log manager
does fsyncs and checkpoints on its own threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kavka.common.errors import ErrorCode, error_for
from kavka.replication.data_path import ReplicaDataPath
from kavka.replication.fetcher_manager import FetcherAssignments, FetcherManager, InitialFetchState
from kavka.replication.isr import IsrChangeListener, IsrChangePropagation, IsrPropagationConfig, IsrWriter
from kavka.replication.isr_updates import IsrUpdates
from kavka.replication.leader_quota import LeaderReplicationQuota
from kavka.replication.partition import Partition
from kavka.replication.purgatory import DelayedOperationPurgatory
from kavka.replication.requests import error_code_of
from kavka.replication.state import BrokerEndPoint, LeaderAndIsrResult, PartitionState, StopReplicaResult
from kavka.common.clock import Clock, SystemClock
from kavka.storage.errors import StorageError
from kavka.storage.log_manager import LogManager
from kavka.common.topic_partition import TopicPartition

logger = logging.getLogger(__name__)
state_change_logger = logging.getLogger("kavka.state.change")

TRUNCATION_MODES = ("leader-epoch", "hw")


@dataclass(frozen=True, slots=True)
class ReplicaManagerConfig:
    """Broker settings the replica manager uses (Kafka's names in
    ``from_broker``). ``truncation_mode``: "leader-epoch" (KIP-101, the
    default: the follower side truncates by the leader's epochs) or "hw"
    (the seeds' design: truncate to the HW on becoming a follower)."""

    replica_lag_time_max_ms: int = 30_000
    truncation_mode: str = "leader-epoch"
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
        if self.isr_write_timeout_ms < 1:
            raise ValueError("the isr write timeout (zookeeper.session.timeout.ms) must be >= 1 ms")

    @classmethod
    def from_broker(cls, config: Any) -> "ReplicaManagerConfig":
        """From a ``KafkaConfig`` (or any mapping with the keys)."""
        return cls(
            replica_lag_time_max_ms=int(config["replica.lag.time.max.ms"]),
            truncation_mode=str(config["replica.truncation.mode"]),
            num_replica_fetchers=int(config["num.replica.fetchers"]),
            isr_write_timeout_ms=int(config["zookeeper.session.timeout.ms"]),
        )


class ReplicaManager(ReplicaDataPath):
    """See the module docstring."""

    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        config: ReplicaManagerConfig,
        *,
        isr_writer: IsrWriter,
        isr_change_listener: IsrChangeListener,
        fetcher_manager: FetcherManager | None = None,
        clock: Clock | None = None,
        known_partition: Callable[[TopicPartition], bool] | None = None,
        leader_quota: LeaderReplicationQuota | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.config = config
        self.clock = clock or log_manager.clock or SystemClock()
        self.controller_epoch = 0  # seed 002 §6.3 (1)
        self._partitions: dict[TopicPartition, Partition] = {}
        self.fetcher_manager: FetcherManager = fetcher_manager or FetcherAssignments(config.num_replica_fetchers)
        self._known_partition = known_partition
        self.leader_quota = leader_quota  # seed 002 §8: None serves followers unthrottled
        self.produce_purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Produce")
        self.fetch_purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Fetch")
        self.isr_updates = IsrUpdates(
            isr_writer,
            isr_change_listener,
            IsrChangePropagation(config.isr_propagation, self.clock.milliseconds()),
            self.clock,
            config.replica_lag_time_max_ms,
            on_change=lambda p: self.complete_delayed_requests(p.topic_partition),
            write_timeout_ms=config.isr_write_timeout_ms,
        )
        self._tasks: list[asyncio.Task[None]] = []

    # ---- the table ---------------------------------------------------------------------------
    def get_partition(self, tp: TopicPartition) -> Partition | None:
        return self._partitions.get(tp)

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

    def leader_partitions(self) -> list[Partition]:
        return [p for p in self._partitions.values() if p.is_leader]

    def under_replicated_partitions(self) -> list[TopicPartition]:
        """Partitions led here whose ISR is smaller than their replica set."""
        return [p.topic_partition for p in self._partitions.values() if p.is_under_replicated]

    def missing_partition_error(self, tp: TopicPartition) -> ErrorCode:
        """Kafka's answer for a partition not hosted here: the cluster has
        it (another broker hosts it) or it does not exist."""
        if self._known_partition is not None and self._known_partition(tp):
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def partition_or_error(self, tp: TopicPartition) -> Partition:
        partition = self._partitions.get(tp)
        if partition is None:
            raise error_for(self.missing_partition_error(tp), f"broker {self.broker_id} does not host {tp}")
        return partition

    def _get_or_create_partition(self, tp: TopicPartition) -> Partition:
        partition = self._partitions.get(tp)
        if partition is None:
            log = self.log_manager.get_or_create_log(tp.topic, tp.partition)
            partition = Partition(tp, self.broker_id, log, self.clock)
            self._partitions[tp] = partition
        return partition

    def complete_delayed_requests(self, tp: TopicPartition) -> None:
        """Something a delayed produce or fetch on ``tp`` waits for may have
        changed (append, HW, leadership): try to complete them."""
        self.fetch_purgatory.check_and_complete(tp)
        self.produce_purgatory.check_and_complete(tp)

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
        errors: dict[TopicPartition, int] = {}
        accepted: dict[TopicPartition, PartitionState] = {}
        # Step 2: keep entries with a newer leader epoch that name this broker.
        for state in states:
            tp = state.topic_partition
            current = self._partitions.get(tp)
            local_epoch = current.leader_epoch if current is not None else -1
            if state.leader_epoch > local_epoch:
                if self.broker_id in state.replicas:
                    accepted[tp] = state
                else:
                    state_change_logger.warning(
                        "broker %d ignored LeaderAndIsr for %s from controller %d epoch %d: it is not among the "
                        "assigned replicas %s", self.broker_id, tp, controller_id, controller_epoch, list(state.replicas),
                    )
                    errors[tp] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            else:
                # Seed 000 2.2 names StaleLeaderEpochCode, which later protocol
                # versions fold into STALE_CONTROLLER_EPOCH (seed 002 §6.8 (1)).
                state_change_logger.warning(
                    "broker %d ignored LeaderAndIsr for %s from controller %d epoch %d: leader epoch %d is not newer "
                    "than the current %d", self.broker_id, tp, controller_id, controller_epoch,
                    state.leader_epoch, local_epoch,
                )
                errors[tp] = int(ErrorCode.STALE_CONTROLLER_EPOCH)
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
                self._get_or_create_partition(tp).make_leader(state)
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
                partition = self._get_or_create_partition(tp)
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
        self._partitions.pop(tp, None)
        self.complete_delayed_requests(tp)  # they now answer NOT_LEADER / unknown
        state_change_logger.info("broker %d stopped replica %s (delete=%s)", self.broker_id, tp, delete)
        if delete:
            try:
                self.log_manager.delete_log(tp.topic, tp.partition)
            except StorageError as e:
                logger.error("broker %d could not delete the log of %s: %s", self.broker_id, tp, e)
                return error_code_of(e)
        return ErrorCode.NONE

    # ---- background tasks and lifecycle ---------------------------------------------------------
    def maybe_shrink_isrs(self) -> int:
        """One ISR-expiry pass over the partitions this broker leads."""
        return self.isr_updates.maybe_shrink_isrs(self.leader_partitions())

    def checkpoint_high_watermarks(self) -> None:
        """Write every log's HW to replication-offset-checkpoint now (the
        log manager's periodic job does this too; call from a thread)."""
        self.log_manager.checkpoint_high_watermarks()

    def start(self) -> None:
        """Start "isr-expiration" and "isr-change-propagation" (on the loop)."""
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self.isr_updates.run_isr_expiration(self.leader_partitions), name="isr-expiration"),
            loop.create_task(self.isr_updates.run_isr_change_propagation(), name="isr-change-propagation"),
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
