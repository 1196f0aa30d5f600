"""One partition hosted by this broker: its role, ISR, high watermark and log.

State (seed 002 §6.1/§6.2): the assigned replicas (AR), the ISR, the
leader's broker id and leader epoch, the version of the partition's state
znode (``zk_version``) and the controller epoch that set them, the local
``Log``, and — while this broker leads — one ``Replica`` per follower.

Roles (seed 002 §6.8): ``make_leader`` / ``make_follower`` apply a
LeaderAndIsr entry unless its leader epoch is older than the one held. A new
leader epoch records (epoch, LEO) in the log's leader-epoch cache (KIP-101:
the start of the epoch, which followers truncate against) and resets every
follower's fetch state. A follower keeps no ISR (the leader maintains it).

High watermark (seed 002 §6.4 ``maybeIncrementLeaderHW``): the smallest LEO
over the ISR, the leader's own included; it only moves forward while this
broker leads. While an ISR change is being written to ZooKeeper the HW is
computed over the union of the old and proposed ISR, so neither a pending
shrink nor a pending expansion can commit a record some final ISR member
lacks.

ISR changes are proposed here (``maybe_expand_isr``, ``maybe_shrink_isr``
return the proposed ``LeaderIsrAndControllerEpoch`` to write, made against
the znode version held, at most one in flight) and written by
the caller through ``IsrWriter``; the caller reports back with
``complete_isr_update`` or ``fail_isr_update``. A version conflict means
the controller moved the znode on: this broker is no longer the leader and
stops acting as one until the controller's next LeaderAndIsr (seed 001 #3).

Reads (Fetch, ListOffsets, OffsetsForLeaderEpoch). Every read is first
checked against the caller's view of leadership (KIP-320): a
``current_leader_epoch`` older than ours is FENCED_LEADER_EPOCH, a newer one
UNKNOWN_LEADER_EPOCH (we have not heard of it yet), -1 skips the check; then
only the leader serves (NOT_LEADER_OR_FOLLOWER) — except a debugging
consumer (replica id -2), which reads any replica below its own HW.

Fetch (``read_records``): consumers read below the high watermark
(read_committed ones below the last stable offset, with the aborted
transactions of the range), followers to the log end. A fetch offset outside [log start, LEO] is
OFFSET_OUT_OF_RANGE; one between the HW and the LEO returns no records, not
an error — after a leadership change a consumer may ask the new leader, whose
HW lags, for an offset the old leader had already exposed (seed 001 #7).
A follower's ``last_fetched_epoch`` (Fetch v12) is checked against our
leader-epoch cache: when its log diverged from ours the answer is the
diverging epoch and its end offset, with no records, so it truncates first.

Owned by the ``ReplicaManager``; every method runs on the broker's event
loop (the ``Log`` has its own lock for the log manager's threads).
"""

from __future__ import annotations

import logging
import uuid
from typing import TypedDict

from kavka.common.clock import Clock
from kavka.common.errors import (
    ErrorCode,
    FencedLeaderEpochError,
    InvalidRequestError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    UnknownLeaderEpochError,
)
from kavka.common.ids import NO_EPOCH, NO_LEADER, BrokerId, ControllerEpoch, LeaderEpoch
from kavka.common.leader_and_isr import LeaderIsrAndControllerEpoch
from kavka.common.topic_partition import TopicPartition
from kavka.replication.replica import Replica
from kavka.replication.requests import (
    DEBUGGING_CONSUMER_ID,
    AbortedTransaction,
    EpochEndOffset,
    FetchIsolation,
    LogReadResult,
    error_code_of,
    error_message_of,
)
from kavka.replication.state import PartitionState, isr_proposal
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.errors import StorageError
from kavka.storage.fetch_data_info import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, TimestampAndOffset
from kavka.storage.log import Log
from kavka.storage.log_append import LogAppendInfo
from kavka.storage.read_buffers import ReadBuffers

logger = logging.getLogger(__name__)
state_change_logger = logging.getLogger("kavka.state.change")

EARLIEST_LOCAL_TIMESTAMP = -4  # ListOffsets v8+ (KIP-405)


class _ReadOffsets(TypedDict):
    """The leader's offsets at read time, which every ``LogReadResult`` of
    a read carries (its keyword arguments)."""

    fetch_offset: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    leader_end_offset: int


class Partition:
    """See the module docstring."""

    def __init__(self, topic_partition: TopicPartition, local_broker_id: BrokerId, log: Log, clock: Clock) -> None:
        self.topic_partition = topic_partition
        self.local_broker_id = local_broker_id
        self.log = log
        self._clock = clock
        self.assigned_replicas: tuple[BrokerId, ...] = ()
        self.isr: tuple[BrokerId, ...] = ()
        self.leader_id: BrokerId = NO_LEADER
        self.leader_epoch = LeaderEpoch(NO_EPOCH)
        self.leader_epoch_start_offset = -1
        self.zk_version = -1
        self.controller_epoch = ControllerEpoch(NO_EPOCH)
        # KIP-516: from LeaderAndIsr; a follower names the topic by it in Fetch v13+.
        self.topic_id: uuid.UUID | None = None
        self._remote: dict[int, Replica] = {}
        self._pending_isr: LeaderIsrAndControllerEpoch | None = None
        self._fenced = False
        # The broker's ZooKeeper session may be gone (``session_fence``): the
        # fence's generation, not leading until that session is back or a
        # controller confirms; None when not fenced so.
        self._session_fence: int | None = None

    # ---- role ------------------------------------------------------------------------------
    @property
    def is_leader(self) -> bool:
        """This broker leads and has not been fenced by an ISR write conflict
        nor by the loss of its ZooKeeper session."""
        return self.leader_id == self.local_broker_id and not self._fenced and self._session_fence is None

    @property
    def fenced(self) -> bool:
        return self._fenced

    @property
    def session_fenced(self) -> bool:
        """Led here, but not served while the broker's ZooKeeper session may
        be gone (``kavka.server.zk_session_fence``)."""
        return self._session_fence is not None

    def session_fence(self, generation: int) -> bool:
        """Stop leading until ``session_unfence`` or the controller's next
        LeaderAndIsr: another broker may be elected meanwhile. Returns
        whether this broker was leading."""
        if not self.is_leader:
            return False
        self._session_fence = generation
        state_change_logger.warning(
            "%s: broker %d stops leading (epoch %d) while its ZooKeeper session may be gone",
            self.topic_partition, self.local_broker_id, self.leader_epoch,
        )
        return True

    def session_unfence(self, generation: int) -> bool:
        """The session that fence ``generation`` feared lost came back:
        nobody else can have been elected meanwhile, lead again. A fence of
        an earlier session (expired: the controller may have moved the
        partition) stays until a LeaderAndIsr. Returns whether it leads again."""
        if self._session_fence != generation:
            return False
        self._session_fence = None
        state_change_logger.info("%s: broker %d leads again (epoch %d): its ZooKeeper session survived",
                                 self.topic_partition, self.local_broker_id, self.leader_epoch)
        return self.is_leader

    @property
    def pending_isr(self) -> LeaderIsrAndControllerEpoch | None:
        return self._pending_isr

    @property
    def is_under_replicated(self) -> bool:
        """Led here with fewer in-sync replicas than assigned (Kafka's
        UnderReplicatedPartitions metric; seed 002 health check)."""
        return self.is_leader and len(self.isr) < len(self.assigned_replicas)

    def replica(self, broker_id: int) -> Replica | None:
        """A follower's state at this leader (None when not assigned)."""
        return self._remote.get(broker_id)

    def _stale(self, state: PartitionState, role: str) -> bool:
        if state.leader_epoch < self.leader_epoch:
            state_change_logger.warning(
                "broker %d ignored becoming %s of %s: leader epoch %d is older than the current %d",
                self.local_broker_id, role, self.topic_partition, state.leader_epoch, self.leader_epoch,
            )
            return True
        return False

    def _update_assignment(self, replicas: tuple[BrokerId, ...]) -> None:
        self.assigned_replicas = replicas
        self._remote = {
            r: self._remote.get(r) or Replica(r) for r in replicas if r != self.local_broker_id
        }

    def make_leader(self, state: PartitionState) -> bool:
        """Become (or stay) leader per ``state``. Returns whether this broker
        became leader (it was not before); False too when ``state`` is stale."""
        if self._stale(state, "leader"):
            return False
        now = self._clock.milliseconds()
        new_epoch = state.leader_epoch > self.leader_epoch
        was_leader = self.is_leader
        self.controller_epoch = state.controller_epoch
        if state.topic_id is not None:
            self.topic_id = state.topic_id
        self._update_assignment(state.replicas)
        self.isr = state.isr
        self.zk_version = state.zk_version
        self._pending_isr = None
        self._fenced = False
        self._session_fence = None
        if new_epoch:
            leo = self.log.log_end_offset
            # KIP-101: the epoch starts at our LEO; followers truncate to it.
            self.log.leader_epoch_cache.assign(state.leader_epoch, leo)
            self.leader_epoch_start_offset = leo
            for replica in self._remote.values():
                replica.reset(now, leo, replica.broker_id in state.isr)
        self.leader_epoch = state.leader_epoch
        self.leader_id = self.local_broker_id
        self.maybe_increment_hw()
        state_change_logger.info(
            "broker %d leads %s: epoch %d, isr %s, replicas %s, zk version %d, hw %d, leo %d",
            self.local_broker_id, self.topic_partition, self.leader_epoch, list(self.isr),
            list(self.assigned_replicas), self.zk_version, self.log.high_watermark, self.log.log_end_offset,
        )
        return not was_leader

    def make_follower(self, state: PartitionState) -> bool:
        """Follow ``state.leader``. Returns whether the leader or the leader
        epoch changed (the follower must then re-check its log against the
        leader, even when the leader id stayed: KAFKA-7164); False when
        ``state`` is stale or repeats what we hold."""
        if self._stale(state, "follower"):
            return False
        changed = (state.leader != self.leader_id or state.leader_epoch > self.leader_epoch or self._fenced
                   or self._session_fence is not None)
        self.controller_epoch = state.controller_epoch
        if state.topic_id is not None:
            self.topic_id = state.topic_id
        self.assigned_replicas = state.replicas
        self._remote = {}  # only a leader tracks replicas
        self.isr = ()  # seed 002 §6.8 makeFollower (3): the leader maintains the ISR
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.leader_epoch_start_offset = -1
        self.zk_version = state.zk_version
        self._pending_isr = None
        self._fenced = False
        self._session_fence = None
        state_change_logger.info(
            "broker %d follows %d for %s: epoch %d, replicas %s, hw %d, leo %d",
            self.local_broker_id, state.leader, self.topic_partition, state.leader_epoch,
            list(self.assigned_replicas), self.log.high_watermark, self.log.log_end_offset,
        )
        return changed

    # ---- high watermark --------------------------------------------------------------------
    def _hw_isr(self) -> set[BrokerId]:
        members = set(self.isr)
        if self._pending_isr is not None:
            members.update(self._pending_isr.leader_and_isr.isr)
        return members

    def maybe_increment_hw(self) -> bool:
        """Move the HW up to the smallest LEO of the ISR (seed 002 §6.4).
        Returns whether it moved; never moves it down."""
        if not self.is_leader:
            return False
        new_hw = self.log.log_end_offset
        for broker_id in self._hw_isr():
            if broker_id == self.local_broker_id:
                continue
            replica = self._remote.get(broker_id)
            if replica is None or replica.log_end_offset < 0:
                return False  # an ISR member we have no LEO for yet holds the HW
            new_hw = min(new_hw, replica.log_end_offset)
        if new_hw > self.log.high_watermark:
            self.log.update_high_watermark(new_hw)
            return True
        return False

    # ---- followers' fetch state and the ISR ---------------------------------------------------
    def update_follower_fetch_state(
        self, replica_id: int, fetch_offset: int, follower_start_offset: int, fetch_time_ms: int, leader_end_offset: int
    ) -> bool:
        """Record a follower's fetch (seed 002 §6.6 (1)). Returns False when
        ``replica_id`` is not an assigned follower or this broker does not lead."""
        replica = self._remote.get(replica_id)
        if replica is None or not self.is_leader:
            return False
        replica.update_fetch_state(fetch_offset, follower_start_offset, fetch_time_ms, leader_end_offset)
        return True

    def fetch_state_mark(self) -> tuple[object, ...]:
        """Everything a follower's read of this partition answers from,
        besides its request: the log (and whether it is offline), the
        leadership (epoch, role, fences), the assignment, the ISR and an
        ISR change in flight, and the log end, high watermark and log
        start. Two equal marks mean the same request reads the same answer
        (``kavka.replication.quiet_partitions``); the ISR is in it because
        a read of a follower outside the ISR proposes adding it. The last
        stable offset is not: it follows the open transactions, which only
        an append, a truncation or a load of the log changes (each moves
        the log end or replaces the log), and the high watermark and log
        start, all in the mark."""
        log = self.log
        return (log, log.offline, self.leader_epoch, self.is_leader, self.assigned_replicas, self.isr,
                self._pending_isr, log.log_end_offset, log.high_watermark, log.log_start_offset)

    def maybe_expand_isr(self, replica_id: BrokerId) -> LeaderIsrAndControllerEpoch | None:
        """Propose adding a follower that caught up: its LEO reached the HW
        and the start of the current leader epoch (Kafka's rule). None when
        nothing to do or another ISR write is in flight."""
        if not self.is_leader or self._pending_isr is not None or replica_id in self.isr:
            return None
        replica = self._remote.get(replica_id)
        if replica is None:
            return None
        leo = replica.log_end_offset
        if leo < self.log.high_watermark or leo < self.leader_epoch_start_offset or leo < 0:
            return None
        return self._propose(self.isr + (replica_id,))

    def out_of_sync_replicas(self, now_ms: int, max_lag_ms: int) -> list[BrokerId]:
        """ISR followers not caught up within ``max_lag_ms`` (seed 002 code 3-3)."""
        leo = self.log.log_end_offset
        out: list[BrokerId] = []
        for broker_id in self.isr:
            if broker_id == self.local_broker_id:
                continue
            replica = self._remote.get(broker_id)
            if replica is None or not replica.is_caught_up(leo, now_ms, max_lag_ms):
                out.append(broker_id)
        return out

    def maybe_shrink_isr(self, now_ms: int, max_lag_ms: int) -> LeaderIsrAndControllerEpoch | None:
        """Propose removing lagging followers (seed 002 code 3-2). The leader
        always stays. None when nothing to do or a write is in flight."""
        if not self.is_leader or self._pending_isr is not None:
            return None
        lagging = self.out_of_sync_replicas(now_ms, max_lag_ms)
        if not lagging:
            return None
        logger.info("%s: followers %s are out of sync; shrinking the isr %s", self.topic_partition, lagging, list(self.isr))
        return self._propose(tuple(r for r in self.isr if r not in lagging))

    def _propose(self, isr: tuple[BrokerId, ...]) -> LeaderIsrAndControllerEpoch:
        proposal = isr_proposal(self.local_broker_id, self.leader_epoch, isr, self.controller_epoch, self.zk_version)
        self._pending_isr = proposal
        return proposal

    def complete_isr_update(self, proposal: LeaderIsrAndControllerEpoch, new_zk_version: int) -> bool:
        """The proposal was written at ``new_zk_version``: adopt it. False if
        a LeaderAndIsr superseded it meanwhile (then the controller's state wins)."""
        if self._pending_isr is not proposal:
            return False
        self._pending_isr = None
        self.isr = proposal.leader_and_isr.isr
        self.zk_version = new_zk_version
        state_change_logger.info(
            "%s: isr is now %s (zk version %d)", self.topic_partition, list(self.isr), new_zk_version
        )
        return True

    def fail_isr_update(self, proposal: LeaderIsrAndControllerEpoch, conflict: bool) -> bool:
        """The write of ``proposal`` failed. On a version conflict the
        controller has moved the partition on: stop acting as leader (seed
        001 #3). Otherwise (e.g. ZooKeeper unreachable) it is retried by the
        next check. Returns whether the partition was fenced."""
        if self._pending_isr is not proposal:
            return False
        self._pending_isr = None
        if conflict:
            self._fenced = True
            state_change_logger.warning(
                "%s: the state znode moved past version %d; broker %d is no longer the leader (epoch %d)",
                self.topic_partition, self.zk_version, self.local_broker_id, self.leader_epoch,
            )
        return conflict

    # ---- appends ------------------------------------------------------------------------------
    def _require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.local_broker_id} is not the leader of {self.topic_partition} "
                f"(leader {self.leader_id}, epoch {self.leader_epoch}{', fenced' if self._fenced else ''}"
                f"{', its ZooKeeper session may be gone' if self._session_fence is not None else ''})"
            )

    def append_records_to_leader(
        self, records: bytes | memoryview, required_acks: int, min_insync_replicas: int | None = None,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> LogAppendInfo:
        """Append a producer's batches (seed 002 §6.5 appendMessagesToLeader):
        refuse when not leader, or for acks=-1 when the ISR is smaller than
        ``min.insync.replicas`` (the topic's unless given); stamp the leader
        epoch; then advance the HW (an ISR of one commits at once)."""
        self._require_leader()
        min_isr = self.log.config.min_insync_replicas if min_insync_replicas is None else min_insync_replicas
        if required_acks == -1 and len(self.isr) < min_isr:
            raise NotEnoughReplicasError(
                f"{self.topic_partition} has {len(self.isr)} in-sync replicas {list(self.isr)}, fewer than "
                f"min.insync.replicas={min_isr}; nothing was written"
            )
        info = self.log.append_as_leader(records, self.leader_epoch, origin)
        self.maybe_increment_hw()
        return info

    def check_enough_replicas_reach_offset(
        self, required_offset: int, leader_epoch: int | None = None, min_insync_replicas: int | None = None
    ) -> tuple[bool, ErrorCode]:
        """For acks=-1 (seed 002 §6.5): (done, error). Done with NONE once the
        HW reaches ``required_offset`` (last offset + 1) with at least
        min.insync.replicas in the ISR, with NOT_ENOUGH_REPLICAS_AFTER_APPEND
        when the ISR shrank below it; done with NOT_LEADER_OR_FOLLOWER when
        this broker stopped leading or the leader epoch of the append ended
        (its records may have been truncated)."""
        if not self.is_leader or (leader_epoch is not None and leader_epoch != self.leader_epoch):
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark < required_offset:
            return False, ErrorCode.NONE
        min_isr = self.log.config.min_insync_replicas if min_insync_replicas is None else min_insync_replicas
        if len(self.isr) < min_isr:
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return True, ErrorCode.NONE

    def delete_records_on_leader(self, offset: int) -> int:
        """DeleteRecords: move the log start to ``offset`` (-1: the HW).
        Returns the new log start offset."""
        self._require_leader()
        target = self.log.high_watermark if offset == -1 else offset
        return self.log.delete_records_before(target)

    # ---- the follower side (the replica fetcher calls these) ------------------------------------
    def append_records_to_follower(self, records: bytes | memoryview) -> LogAppendInfo:
        """Append the leader's batches unchanged (offsets and epochs kept)."""
        if self.leader_id == self.local_broker_id:
            raise NotLeaderOrFollowerError(f"broker {self.local_broker_id} leads {self.topic_partition}; it does not follow")
        return self.log.append_as_follower(records)

    def update_follower_high_watermark(self, leader_high_watermark: int) -> int:
        """A follower's HW is min(leader HW, own LEO) (seed 002 §6.7 (2))."""
        return self.log.update_high_watermark(min(leader_high_watermark, self.log.log_end_offset))

    # ---- reads (Fetch, ListOffsets, OffsetsForLeaderEpoch) --------------------------------------
    def check_leader_epoch(self, current_leader_epoch: int, require_leader: bool = True) -> None:
        """KIP-320 epoch check, then leadership. Raises the typed error."""
        if current_leader_epoch >= 0:
            if current_leader_epoch < self.leader_epoch:
                raise FencedLeaderEpochError(
                    f"leader epoch {current_leader_epoch} for {self.topic_partition} is older than the current "
                    f"{self.leader_epoch}; refresh metadata"
                )
            if current_leader_epoch > self.leader_epoch:
                raise UnknownLeaderEpochError(
                    f"leader epoch {current_leader_epoch} for {self.topic_partition} is newer than the "
                    f"{self.leader_epoch} broker {self.local_broker_id} knows"
                )
        if require_leader and not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker {self.local_broker_id} is not the leader of {self.topic_partition} (leader "
                f"{self.leader_id}, epoch {self.leader_epoch})"
            )

    def last_stable_offset(self) -> int:
        """min(HW, first offset of the earliest open transaction) (KIP-98)."""
        return self.log.last_stable_offset

    def read_records(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: FetchIsolation,
        replica_id: int = -1,
        current_leader_epoch: int = -1,
        last_fetched_epoch: int = -1,
        min_one_message: bool = True,
        fetch_only_from_leader: bool | None = None,
        buffers: ReadBuffers | None = None,
    ) -> LogReadResult:
        """One partition's Fetch read (see the module docstring). Errors come
        back in the result, never raised. ``fetch_only_from_leader`` (default:
        everyone but a debugging consumer) False lets a consumer read this
        replica as a follower, below its own high watermark (KIP-392).
        ``buffers``: where a large read lands (``kavka.storage.read_buffers``:
        the records are then a view of one of its buffers)."""
        if fetch_only_from_leader is None:
            fetch_only_from_leader = replica_id != DEBUGGING_CONSUMER_ID
        try:
            self.check_leader_epoch(current_leader_epoch, require_leader=fetch_only_from_leader)
            if replica_id >= 0 and replica_id not in self._remote:
                raise NotLeaderOrFollowerError(
                    f"broker {replica_id} is not an assigned follower of {self.topic_partition} "
                    f"(replicas {sorted(self._remote)} besides the leader {self.local_broker_id})"
                )
            log = self.log
            hw, leo, start = log.high_watermark, log.log_end_offset, log.log_start_offset
            lso = self.last_stable_offset()
            snapshot = _ReadOffsets(
                fetch_offset=fetch_offset,
                high_watermark=hw,
                last_stable_offset=lso,
                log_start_offset=start,
                leader_end_offset=leo,
            )
            if last_fetched_epoch >= 0:
                # Kafka's validateFetchOffsetAndEpoch: an epoch we do not know
                # (newer than ours: -1, -1) diverges too; the follower then
                # falls back to its high watermark, as after OffsetsForLeaderEpoch.
                epoch, end = log.end_offset_for_epoch(last_fetched_epoch)
                if epoch < last_fetched_epoch or end < fetch_offset:
                    return LogReadResult(ErrorCode.NONE, diverging_epoch=EpochEndOffset(epoch, end), **snapshot)
            if fetch_offset > leo and replica_id < 0 and current_leader_epoch < 0 and not self.is_leader:
                # A consumer of Fetch v11 without KIP-320's leader epoch may
                # have come here on stale metadata rather than sent by the
                # leader, ahead of what this follower has: an empty answer,
                # which it retries, not OFFSET_OUT_OF_RANGE, which would
                # reset its position (Kafka's answer to such a fetch). With
                # an epoch the consumer asks the leader on OFFSET_OUT_OF_RANGE.
                return LogReadResult(ErrorCode.NONE, **snapshot)
            if fetch_offset < start or fetch_offset > leo:
                return LogReadResult(
                    ErrorCode.OFFSET_OUT_OF_RANGE,
                    error_message=f"fetch offset {fetch_offset} of {self.topic_partition} is outside [{start}, {leo}]",
                    **snapshot,
                )
            if fetch_offset == leo:
                # Nothing to read under any isolation (each bound is at most
                # the LEO): a follower's idle fetch asks this of every
                # partition it follows, twice a second. The log end's
                # position is where a DelayedFetch counts new bytes from.
                return LogReadResult(ErrorCode.NONE, fetch_offset_metadata=log.log_end_offset_metadata(), **snapshot)
            limit = {
                FetchIsolation.LOG_END: None,
                FetchIsolation.HIGH_WATERMARK: hw,
                FetchIsolation.TXN_COMMITTED: lso,
            }[isolation]
            info = log.read(fetch_offset, max_bytes, limit, min_one_message, buffers)
            aborted: tuple[AbortedTransaction, ...] = ()
            if isolation is FetchIsolation.TXN_COMMITTED and info.records:
                # The consumer drops these producers' records (KIP-98); the
                # LSO bounds the range: nothing above it was read.
                aborted = tuple(
                    AbortedTransaction(t.producer_id, t.first_offset)
                    for t in log.collect_aborted_transactions(fetch_offset, lso)
                )
            return LogReadResult(ErrorCode.NONE, info.records, aborted_transactions=aborted,
                                 fetch_offset_metadata=info.fetch_offset_metadata, **snapshot)
        except (StorageError, NotLeaderOrFollowerError, FencedLeaderEpochError, UnknownLeaderEpochError) as e:
            return LogReadResult(error_code_of(e), fetch_offset=fetch_offset, error_message=error_message_of(e))

    def fetch_offset_for_timestamp(
        self, timestamp: int, isolation: FetchIsolation | None, current_leader_epoch: int = -1
    ) -> TimestampAndOffset | None:
        """ListOffsets. ``isolation`` None is a replica or a debug caller
        (offsets up to the LEO); a consumer sees only offsets below the HW
        (or the last stable offset). LATEST answers that bound with our leader
        epoch; EARLIEST the log start; a timestamp the first record at or
        after it, None when that is not yet visible. A new leader whose HW
        has not reached the start of its epoch answers OFFSET_NOT_AVAILABLE
        to consumers (KIP-207): its HW may still be below the old leader's."""
        self.check_leader_epoch(current_leader_epoch)
        if timestamp == EARLIEST_LOCAL_TIMESTAMP:
            timestamp = EARLIEST_TIMESTAMP  # no tiered storage: the local log start is the log start
        elif timestamp < 0 and timestamp not in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP):
            raise InvalidRequestError(
                f"ListOffsets timestamp {timestamp} for {self.topic_partition} is not supported; use a time in ms "
                f"or -1 (latest), -2 (earliest), -3 (max timestamp), -4 (earliest local)"
            )
        log = self.log
        if isolation is None or isolation is FetchIsolation.LOG_END:
            last_fetchable = log.log_end_offset
        elif isolation is FetchIsolation.TXN_COMMITTED:
            last_fetchable = self.last_stable_offset()
        else:
            last_fetchable = log.high_watermark
        not_available = isolation not in (None, FetchIsolation.LOG_END) and self.leader_epoch_start_offset > log.high_watermark
        if timestamp == LATEST_TIMESTAMP:
            if not_available:
                raise OffsetNotAvailableError(
                    f"the high watermark {log.high_watermark} of {self.topic_partition} has not reached the start "
                    f"{self.leader_epoch_start_offset} of leader epoch {self.leader_epoch}; retry"
                )
            return TimestampAndOffset(-1, last_fetchable, self.leader_epoch)
        found = log.fetch_offset_by_timestamp(timestamp)
        if found is not None and (timestamp == EARLIEST_TIMESTAMP or found.offset < last_fetchable):
            return found
        if not_available:
            raise OffsetNotAvailableError(
                f"the high watermark of {self.topic_partition} has not caught up with leader epoch "
                f"{self.leader_epoch}; retry"
            )
        return None

    def last_offset_for_leader_epoch(
        self, current_leader_epoch: int, leader_epoch: int, fetch_only_from_leader: bool = True
    ) -> EpochEndOffset:
        """OffsetsForLeaderEpoch (KIP-101/279): the largest epoch <= the
        requested one that this log knows and the offset where it ends."""
        self.check_leader_epoch(current_leader_epoch, require_leader=fetch_only_from_leader)
        epoch, end = self.log.end_offset_for_epoch(leader_epoch)
        return EpochEndOffset(epoch, end)

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic_partition}, leader={self.leader_id}, epoch={self.leader_epoch}, "
            f"isr={list(self.isr)}, replicas={list(self.assigned_replicas)}, hw={self.log.high_watermark}, "
            f"leo={self.log.log_end_offset})"
        )
