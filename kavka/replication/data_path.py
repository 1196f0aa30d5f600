"""The replica manager's data path: produce, fetch, ListOffsets,
OffsetsForLeaderEpoch, DeleteRecords (seed 002 §6.5, §6.6).

A mixin of ``ReplicaManager`` (kept apart to keep modules small).

Produce (``append_records``): acks must be -1, 0 or 1 (else every
partition gets INVALID_REQUIRED_ACKS); each partition is appended on its
leader (internal topics only when allowed); acks 0 and 1 answer at once,
acks -1 waits in the produce purgatory (``DelayedProduce``) when at least
one append succeeded. Every append tries to complete waiting fetches and
produces of its partition.

Fetch (``fetch_messages``): read every partition (``read_from_local_log``);
for a follower, record its fetch offset as its LEO, propose adding it to
the ISR when it caught up, and move the HW; answer at once when the request
does not wait, named no partition, found ``min_bytes``, hit an error or a
diverging epoch; otherwise wait in the fetch purgatory (``DelayedFetch``).
A follower's fetch goes through the leader replication quota
(``leader_quota``, seed 002 §8): throttled partitions of an out-of-sync
follower get no records while it is exceeded, and the throttled bytes sent
are recorded once the answer is known.

Event loop only. The handlers await the returned coroutines.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode, KafkaError
from kavka.protocol.records.batch import InvalidRecordBatch, iter_batches
from kavka.replication.delayed_fetch import DelayedFetch, read_from_local_log
from kavka.replication.delayed_produce import DelayedProduce, ProducePartitionStatus
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
from kavka.storage.errors import StorageError
from kavka.storage.fetch_data_info import TimestampAndOffset
from kavka.storage.log_append import LogAppendInfo
from kavka.common.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kavka.replication.isr_updates import IsrUpdates
    from kavka.replication.leader_quota import LeaderReplicationQuota
    from kavka.replication.partition import Partition
    from kavka.replication.purgatory import DelayedOperationPurgatory
    from kavka.common.clock import Clock

logger = logging.getLogger(__name__)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def _failure(exc: BaseException, tp: TopicPartition) -> ProducePartitionResult:
    if not isinstance(exc, (KafkaError, StorageError)):
        logger.exception("unexpected error appending to %s", tp, exc_info=exc)
    return ProducePartitionResult(error_code_of(exc), error_message=error_message_of(exc))


class ReplicaDataPath:
    """The data path of ``ReplicaManager``. Uses this state of it:"""

    broker_id: int
    clock: "Clock"
    isr_updates: "IsrUpdates"
    leader_quota: "LeaderReplicationQuota | None"
    produce_purgatory: "DelayedOperationPurgatory[TopicPartition]"
    fetch_purgatory: "DelayedOperationPurgatory[TopicPartition]"
    get_partition: Callable[[TopicPartition], "Partition | None"]
    missing_partition_error: Callable[[TopicPartition], ErrorCode]
    partition_or_error: Callable[[TopicPartition], "Partition"]
    complete_delayed_requests: Callable[[TopicPartition], None]

    # ---- produce -------------------------------------------------------------------------------
    async def append_records(
        self,
        timeout_ms: int,
        required_acks: int,
        entries: Mapping[TopicPartition, bytes | memoryview],
        internal_topics_allowed: bool = False,
    ) -> dict[TopicPartition, ProducePartitionResult]:
        """Append each partition's batches to its leader; per-partition results."""
        if required_acks not in (-1, 0, 1):
            bad = ProducePartitionResult(
                ErrorCode.INVALID_REQUIRED_ACKS, error_message=f"acks={required_acks}; it must be -1, 0 or 1"
            )
            return {tp: bad for tp in entries}
        results: dict[TopicPartition, ProducePartitionResult] = {}
        appended: dict[TopicPartition, tuple[LogAppendInfo, int]] = {}
        for tp, records in entries.items():
            results[tp] = self._append_to_local_log(tp, records, required_acks, internal_topics_allowed, appended)
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
        op = DelayedProduce(max(timeout_ms, 0), statuses, self.get_partition, future)
        self.produce_purgatory.try_complete_else_watch(op, list(statuses))
        return await future

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
            return ProducePartitionResult(error, error_message=f"broker {self.broker_id} does not lead {tp}")
        try:
            info = partition.append_records_to_leader(records, required_acks)
        except Exception as e:
            return _failure(e, tp)
        appended[tp] = (info, partition.leader_epoch)
        self.complete_delayed_requests(tp)
        return ProducePartitionResult(ErrorCode.NONE, info.first_offset, info.log_append_time, info.log_start_offset)

    # ---- fetch ---------------------------------------------------------------------------------
    def _read(self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition]) -> dict[TopicPartition, LogReadResult]:
        return read_from_local_log(
            self.get_partition, self.missing_partition_error, params, partitions, self._leader_throttled(params)
        )

    def _leader_throttled(self, params: FetchParams) -> "Callable[[Partition], bool] | None":
        quota = self.leader_quota
        if not params.is_from_follower or quota is None or not quota.active:
            return None
        return lambda partition: quota.should_throttle(partition, params.replica_id)

    def _record_leader_quota(
        self, params: FetchParams, answer: dict[TopicPartition, FetchPartitionData]
    ) -> dict[TopicPartition, FetchPartitionData]:
        if params.is_from_follower and self.leader_quota is not None:
            self.leader_quota.record(answer, self.get_partition)
        return answer

    async def fetch_messages(
        self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition]
    ) -> dict[TopicPartition, FetchPartitionData]:
        """Serve a Fetch from a consumer (replica_id -1) or a follower."""
        results = self._read(params, partitions)
        if params.is_from_follower:
            self._update_follower_fetch_states(params.replica_id, partitions, results)
        readable = sum(len(r.records) for r in results.values())
        answer_now = (
            params.max_wait_ms <= 0
            or not partitions
            or readable >= params.min_bytes
            or any(r.error is not ErrorCode.NONE or r.diverging_epoch is not None for r in results.values())
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
            params, partitions, epochs, self.get_partition, lambda: self._read(params, partitions), future,
            self._leader_throttled(params),
        )
        self.fetch_purgatory.try_complete_else_watch(op, list(partitions))
        return self._record_leader_quota(params, await future)

    def _update_follower_fetch_states(
        self, replica_id: int, partitions: Mapping[TopicPartition, FetchPartition], results: Mapping[TopicPartition, LogReadResult]
    ) -> None:
        """Seed 002 §6.6 (1)-(2): a follower's fetch offset is its LEO."""
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
            proposal = partition.maybe_expand_isr(replica_id)
            if proposal is not None:
                self.isr_updates.submit(partition, proposal)
            partition.maybe_increment_hw()
            self.complete_delayed_requests(tp)

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


def _has_control_batch(records: bytes | memoryview) -> bool:
    """Whether any batch header marks a control batch; a malformed buffer
    is left to the log's validation (which names the problem)."""
    try:
        return any(h.is_control for _pos, h in iter_batches(records, check_crc=False))
    except InvalidRecordBatch:
        return False
