"""The read side of a ``Partition``: Fetch, ListOffsets, OffsetsForLeaderEpoch.

A mixin of ``Partition`` (kept apart to keep modules small). Every read is
first checked against the caller's view of leadership (KIP-320): a
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

Event loop only, like ``Partition``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kavka.common.errors import (
    ErrorCode,
    FencedLeaderEpochError,
    InvalidRequestError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    UnknownLeaderEpochError,
)
from kavka.replication.requests import (
    DEBUGGING_CONSUMER_ID,
    AbortedTransaction,
    EpochEndOffset,
    FetchIsolation,
    LogReadResult,
    error_code_of,
    error_message_of,
)
from kavka.storage.errors import StorageError
from kavka.storage.fetch_data_info import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, TimestampAndOffset

EARLIEST_LOCAL_TIMESTAMP = -4  # ListOffsets v8+ (KIP-405)

if TYPE_CHECKING:
    from kavka.replication.replica import Replica
    from kavka.storage.log import Log
    from kavka.common.topic_partition import TopicPartition


class PartitionReads:
    """Reads of a ``Partition``. Uses this state of the partition:"""

    topic_partition: "TopicPartition"
    local_broker_id: int
    log: "Log"
    leader_id: int
    leader_epoch: int
    leader_epoch_start_offset: int
    _remote: "dict[int, Replica]"
    is_leader: bool  # a property of Partition

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
    ) -> LogReadResult:
        """One partition's Fetch read (see the module docstring). Errors come
        back in the result, never raised."""
        try:
            self.check_leader_epoch(current_leader_epoch, require_leader=replica_id != DEBUGGING_CONSUMER_ID)
            if replica_id >= 0 and replica_id not in self._remote:
                raise NotLeaderOrFollowerError(
                    f"broker {replica_id} is not an assigned follower of {self.topic_partition} "
                    f"(replicas {sorted(self._remote)} besides the leader {self.local_broker_id})"
                )
            log = self.log
            hw, leo, start = log.high_watermark, log.log_end_offset, log.log_start_offset
            lso = self.last_stable_offset()
            snapshot = dict(
                fetch_offset=fetch_offset,
                high_watermark=hw,
                last_stable_offset=lso,
                log_start_offset=start,
                leader_end_offset=leo,
            )
            if last_fetched_epoch >= 0:
                epoch, end = log.end_offset_for_epoch(last_fetched_epoch)
                if epoch >= 0 and (epoch < last_fetched_epoch or end < fetch_offset):
                    return LogReadResult(ErrorCode.NONE, diverging_epoch=EpochEndOffset(epoch, end), **snapshot)
            if fetch_offset < start or fetch_offset > leo:
                return LogReadResult(
                    ErrorCode.OFFSET_OUT_OF_RANGE,
                    error_message=f"fetch offset {fetch_offset} of {self.topic_partition} is outside [{start}, {leo}]",
                    **snapshot,
                )
            limit = {
                FetchIsolation.LOG_END: None,
                FetchIsolation.HIGH_WATERMARK: hw,
                FetchIsolation.TXN_COMMITTED: lso,
            }[isolation]
            info = log.read(fetch_offset, max_bytes, limit, min_one_message)
            aborted: tuple[AbortedTransaction, ...] = ()
            if isolation is FetchIsolation.TXN_COMMITTED and info.records:
                # The consumer drops these producers' records (KIP-98); the
                # LSO bounds the range: nothing above it was read.
                aborted = tuple(
                    AbortedTransaction(t.producer_id, t.first_offset)
                    for t in log.collect_aborted_transactions(fetch_offset, lso)
                )
            return LogReadResult(ErrorCode.NONE, bytes(info.records), aborted_transactions=aborted, **snapshot)
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
