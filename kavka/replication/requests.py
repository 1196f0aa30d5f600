"""Request and result values of the replica manager's produce and fetch paths.

The broker's Produce and Fetch handlers translate wire messages into these
and back; the replica manager and the delayed operations never see the wire.

* ``FetchIsolation``: how far a read may go — the log end (a follower), the
  high watermark (a consumer, READ_UNCOMMITTED) or the last stable offset
  (READ_COMMITTED: the log's first offset of its earliest open transaction,
  capped by the high watermark, KIP-98); a READ_COMMITTED answer lists the
  ``AbortedTransaction``s of the range read.
* ``FetchParams`` (request level) and ``FetchPartition`` (per partition),
  ``LogReadResult`` (what one partition's read found) and
  ``FetchPartitionData`` (what goes back in the response).
* ``ProducePartitionResult``: one partition's produce answer.

Frozen, slotted values; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kavka.common.errors import ErrorCode, KafkaError
from kavka.replication.replica_selector import ClientMetadata
from kavka.storage.errors import RecordError
from kavka.storage.fetch_data_info import LogOffsetMetadata

CONSUMER_REPLICA_ID = -1  # Fetch's replica_id for a consumer (seed 002 §6.6)
FUTURE_LOCAL_REPLICA_ID = -3  # used by Kafka for intra-broker moves; never a follower


# Fetch's replica id of a debugging consumer (Kafka's DEBUGGING_CONSUMER_ID):
# reads any replica, leader or follower, below that replica's own high
# watermark. kafka-replica-verification.sh / ``kavka replica-verification``
# compare the replicas of a partition this way.
DEBUGGING_CONSUMER_ID = -2


class FetchIsolation(Enum):
    LOG_END = "log_end"
    HIGH_WATERMARK = "high_watermark"
    TXN_COMMITTED = "txn_committed"

    @classmethod
    def of(cls, replica_id: int, isolation_level: int) -> FetchIsolation:
        """Kafka's choice: a follower reads to the LEO; a consumer with
        isolation_level 1 (READ_COMMITTED) to the last stable offset, else to
        the high watermark."""
        if replica_id >= 0:
            return cls.LOG_END
        return cls.TXN_COMMITTED if isolation_level == 1 else cls.HIGH_WATERMARK


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """One partition of a Fetch request. ``current_leader_epoch`` (-1: not
    checked, KIP-320); ``last_fetched_epoch`` (-1: none, Fetch v12) lets a
    follower learn of a divergence without OffsetsForLeaderEpoch;
    ``log_start_offset``: the follower's (-1 from consumers)."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1


@dataclass(frozen=True, slots=True)
class FetchParams:
    """Request-level fetch settings. ``max_bytes`` bounds the whole response
    (KIP-74); the first partition with data returns at least one whole batch
    unless ``hard_max_bytes_limit`` (old fetch versions). ``client_metadata``:
    a consumer's Fetch v11+ (KIP-392), which may read from a follower and
    be sent to a preferred read replica."""

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation: FetchIsolation
    hard_max_bytes_limit: bool = False
    client_metadata: ClientMetadata | None = None

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0

    @property
    def is_from_consumer(self) -> bool:
        return self.replica_id == CONSUMER_REPLICA_ID

    @property
    def fetch_only_from_leader(self) -> bool:
        """Kafka's FetchParams.fetchOnlyLeader: followers, and consumers
        older than Fetch v11 (KIP-392); a v11+ consumer and a debugging
        consumer may read a follower, below its high watermark."""
        return self.is_from_follower or (self.is_from_consumer and self.client_metadata is None)


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """A leader epoch and the offset where it ends (OffsetsForLeaderEpoch,
    Fetch's diverging epoch)."""

    epoch: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """A Fetch response's aborted transaction (read_committed, KIP-98): the
    consumer drops ``producer_id``'s records from ``first_offset`` up to the
    producer's ABORT marker."""

    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class LogReadResult:
    """One partition's read: the batches (whole, as stored), the leader's
    offsets at read time, the error (NONE when fine), and for followers the
    divergence found from ``last_fetched_epoch``. ``fetch_offset`` is the
    requested offset; ``leader_end_offset`` the leader's LEO when read;
    ``fetch_offset_metadata`` where the read started in the log (what a
    DelayedFetch measures new bytes from), None when nothing was read."""

    error: ErrorCode
    records: bytes | memoryview = b""  # a view of a ReadBuffers buffer when the read was given one
    fetch_offset: int = -1
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    leader_end_offset: int = -1
    diverging_epoch: EpochEndOffset | None = None
    error_message: str | None = None
    aborted_transactions: tuple[AbortedTransaction, ...] = ()
    fetch_offset_metadata: LogOffsetMetadata | None = None
    preferred_read_replica: int = -1  # KIP-392: set by a leader instead of reading

    def to_partition_data(self) -> FetchPartitionData:
        return FetchPartitionData(
            self.error,
            self.high_watermark,
            self.last_stable_offset,
            self.log_start_offset,
            self.records,
            self.diverging_epoch,
            self.error_message,
            self.aborted_transactions,
            self.preferred_read_replica,
        )


@dataclass(frozen=True, slots=True)
class FetchPartitionData:
    """What the Fetch response carries for one partition."""

    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes | memoryview = b""  # a Fetch response's field, as the codec decodes it
    diverging_epoch: EpochEndOffset | None = None
    error_message: str | None = None
    aborted_transactions: tuple[AbortedTransaction, ...] = ()
    preferred_read_replica: int = -1  # KIP-392: the consumer should read from this broker (-1: none)


@dataclass(frozen=True, slots=True)
class ProducePartitionResult:
    """One partition's produce answer: ``base_offset`` of the first appended
    record (-1 on error), ``log_append_time`` (-1 for CreateTime),
    ``log_start_offset`` after the append."""

    error: ErrorCode
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: tuple[RecordError, ...] = ()  # the refused records (KIP-467; Produce v8+)


def error_code_of(exc: BaseException) -> ErrorCode:
    """The Kafka error code for an exception raised by a layer below
    (docs/ARCHITECTURE.md convention 6); UNKNOWN_SERVER_ERROR for anything unexpected."""
    if isinstance(exc, KafkaError):  # StorageError among them
        return exc.code
    return ErrorCode.UNKNOWN_SERVER_ERROR


def error_message_of(exc: BaseException) -> str:
    if isinstance(exc, KafkaError):
        return exc.message
    return str(exc)


@dataclass(frozen=True, slots=True)
class DeleteRecordsResult:
    """One partition's DeleteRecords answer: the leader's new log start
    offset (``low_watermark``, -1 on error)."""

    error: ErrorCode
    low_watermark: int = -1
    error_message: str | None = None
