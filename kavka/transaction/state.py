"""One transactional id's state at its coordinator (KIP-98).

``TransactionState`` numbers are the ``TransactionStatus`` byte of the
``__transaction_state`` value. The life of a transaction::

    Empty/CompleteCommit/CompleteAbort --AddPartitions/AddOffsets--> Ongoing
    Ongoing --EndTxn(commit)--> PrepareCommit --markers written--> CompleteCommit
    Ongoing --EndTxn(abort), timeout, fencing--> PrepareAbort --markers--> CompleteAbort
    Ongoing --InitProducerId of a new instance--> PrepareEpochFence --> PrepareAbort

``Dead`` is a transactional id expired and removed (tombstoned).
``TransactionMetadata`` is a frozen value: every change is a new value that
the coordinator writes to the log before it takes effect in memory (so a
coordinator that failed over reloads exactly what it had answered).
Pure values; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

from kavka.common.ids import ProducerEpoch, ProducerId
from kavka.common.topic_partition import TopicPartition

MAX_PRODUCER_EPOCH = 32_767  # int16; Kafka stops one short so a fence can still bump it


class TransactionState(IntEnum):
    """A transaction's state; the value is Kafka's status byte."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """Kafka's name of the state, as DescribeTransactions and
        ListTransactions carry it (KIP-664): "Ongoing", "PrepareCommit"..."""
        return _KAFKA_NAMES[self]

    @classmethod
    def from_kafka_name(cls, name: str) -> TransactionState | None:
        """The state Kafka names ``name`` (exact spelling), or None."""
        return _BY_KAFKA_NAME.get(name)

    @property
    def valid_previous(self) -> frozenset[TransactionState]:
        return _PREVIOUS[self]

    @property
    def is_complete(self) -> bool:
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @property
    def is_preparing(self) -> bool:
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)


S = TransactionState
_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}


_KAFKA_NAMES: dict[TransactionState, str] = {
    S.EMPTY: "Empty",
    S.ONGOING: "Ongoing",
    S.PREPARE_COMMIT: "PrepareCommit",
    S.PREPARE_ABORT: "PrepareAbort",
    S.COMPLETE_COMMIT: "CompleteCommit",
    S.COMPLETE_ABORT: "CompleteAbort",
    S.DEAD: "Dead",
    S.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_KAFKA_NAME = {name: state for state, name in _KAFKA_NAMES.items()}


class IllegalTransactionTransition(ValueError):
    """A state change the state machine does not allow (a coordinator bug or
    a corrupt log record); the message names both states."""


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    """One transactional id: its producer id and epoch, the open
    transaction's partitions, its state and times (ms). ``partitions`` is
    empty unless the state is Ongoing or a Prepare*/Complete* one (which
    keeps them for the markers)."""

    transactional_id: str
    producer_id: ProducerId
    producer_epoch: ProducerEpoch
    timeout_ms: int
    state: TransactionState = TransactionState.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    start_ms: int = -1
    last_update_ms: int = -1

    def transition(self, state: TransactionState, now_ms: int, **changes) -> TransactionMetadata:
        """The next value, if ``state`` may follow the current one."""
        if self.state not in state.valid_previous:
            raise IllegalTransactionTransition(
                f"transactional id {self.transactional_id!r} cannot go from {self.state.name} to {state.name}"
            )
        return replace(self, state=state, last_update_ms=now_ms, **changes)

    def add_partitions(self, partitions: frozenset[TopicPartition], now_ms: int) -> TransactionMetadata:
        """Ongoing with ``partitions`` added; a transaction starts its clock
        at its first partition."""
        start = self.start_ms if self.state is TransactionState.ONGOING else now_ms
        return self.transition(TransactionState.ONGOING, now_ms, partitions=self.partitions | partitions,
                               start_ms=start)

    def has_expired(self, now_ms: int) -> bool:
        """An Ongoing transaction older than its timeout (it gets aborted)."""
        return self.state is TransactionState.ONGOING and now_ms > self.start_ms + self.timeout_ms


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition of a transactional id: Kafka's
    ``Utils.abs(transactionalId.hashCode) % partitions``, with Java's
    ``String.hashCode`` (31*h + c over UTF-16 code units, int32) and
    ``Utils.abs`` mapping INT_MIN to 0."""
    h = 0
    raw = transactional_id.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
