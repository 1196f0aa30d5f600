"""One producer's state in one partition (Kafka's ProducerStateEntry,
KIP-98): its epoch, the metadata of its last five batches (a producer keeps
at most five requests in flight per partition), the epoch of the
coordinator whose marker it last got, and the first offset of its open
transaction; plus the values the producer state hands out
(``BatchMetadata``, ``CompletedTxn``, ``ActiveProducer``) and the sequence arithmetic
(``in_sequence``: sequences wrap from 2^31-1 to 0).

An entry turns into one snapshot row (``snapshot``) and back:
only the last batch survives the round trip, as in Kafka. Not thread-safe:
the owning ``ProducerStateManager`` uses it under its log's lock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

from kavka.common.ids import NO_PRODUCER_EPOCH, ProducerEpoch, ProducerId
from kavka.storage.producer_state.snapshot import SnapshotEntry

NUM_BATCHES_TO_RETAIN = 5
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms (KIP-854)
SEQ_MOD = 1 << 31


class BatchMetadata(NamedTuple):
    """What is remembered of one appended batch (offsets inclusive); one per
    idempotent produce (a named tuple: no per-field ``__setattr__``)."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by the control batch at ``marker_offset``; its
    data lies in [first_offset, marker_offset). Whether it committed or
    aborted is in the marker's record, which the log reads (this state works
    on batch headers only). ``last_stable_offset``: the first offset of the
    earliest transaction still open after this one closed, else the offset
    after the marker (the LSO an aborted-index entry records)."""

    producer_id: int
    first_offset: int
    marker_offset: int
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """What DescribeProducers reports of one producer of a partition
    (KIP-664; Kafka's UnifiedLog.activeProducers): its epoch, last sequence
    and timestamp (-1 when it has no batch here, only a marker), the epoch
    of the coordinator whose marker it last got (-1: none yet) and the first
    offset of its open transaction (-1: none open)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """Whether ``next_seq`` directly follows ``last_seq`` (sequences wrap
    from 2^31-1 to 0)."""
    return next_seq == last_seq + 1 or (last_seq == SEQ_MOD - 1 and next_seq == 0)


class ProducerStateEntry:
    """One producer's state in one partition. ``batches`` holds at most
    ``NUM_BATCHES_TO_RETAIN`` entries, oldest first, all of ``producer_epoch``."""

    __slots__ = ("producer_id", "producer_epoch", "batches", "last_timestamp", "coordinator_epoch",
                 "current_txn_first_offset")

    def __init__(self, producer_id: ProducerId, producer_epoch: ProducerEpoch = NO_PRODUCER_EPOCH) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.batches: deque[BatchMetadata] = deque(maxlen=NUM_BATCHES_TO_RETAIN)
        self.last_timestamp = -1
        self.coordinator_epoch = -1
        self.current_txn_first_offset = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def active_producer(self) -> ActiveProducer:
        return ActiveProducer(self.producer_id, self.producer_epoch, self.last_seq, self.last_timestamp,
                              self.coordinator_epoch, self.current_txn_first_offset)

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def add(self, epoch: ProducerEpoch, batch: BatchMetadata) -> None:
        if epoch != self.producer_epoch:
            # A new epoch restarts the sequence: older batches can no longer match.
            self.producer_epoch = epoch
            self.batches.clear()
        self.batches.append(batch)
        self.last_timestamp = batch.timestamp

    def to_snapshot(self) -> SnapshotEntry | None:
        if not self.batches:
            if self.producer_epoch < 0:
                return None
            # Only a marker so far (an epoch bumped by a fencing abort): keep
            # the epoch, so a zombie's older epoch is still refused after a restart.
            return SnapshotEntry(self.producer_id, self.producer_epoch, -1, -1, 0, self.last_timestamp,
                                 self.coordinator_epoch, self.current_txn_first_offset)
        last = self.batches[-1]
        return SnapshotEntry(self.producer_id, self.producer_epoch, last.last_seq, last.last_offset,
                             last.last_offset - last.first_offset, self.last_timestamp, self.coordinator_epoch,
                             self.current_txn_first_offset)

    @classmethod
    def from_snapshot(cls, e: SnapshotEntry) -> ProducerStateEntry:
        entry = cls(ProducerId(e.producer_id), ProducerEpoch(e.producer_epoch))
        if e.last_sequence < 0 and e.last_offset < 0:
            entry.last_timestamp = e.timestamp
            entry.coordinator_epoch = e.coordinator_epoch
            entry.current_txn_first_offset = e.current_txn_first_offset
            return entry
        first_seq = (e.last_sequence - e.offset_delta) % SEQ_MOD if e.last_sequence >= 0 else -1
        entry.batches.append(BatchMetadata(first_seq, e.last_sequence, e.last_offset - e.offset_delta,
                                           e.last_offset, e.timestamp))
        entry.last_timestamp = e.timestamp
        entry.coordinator_epoch = e.coordinator_epoch
        entry.current_txn_first_offset = e.current_txn_first_offset
        return entry
