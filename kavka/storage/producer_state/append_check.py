"""The checks a partition leader makes before appending a producer's
batches (Kafka's ProducerAppendInfo validation, KIP-98/KIP-360), on batch
headers only (a marker's coordinator epoch is read by ``end_txn_marker``):

* a marker with an older producer epoch than the producer's:
  INVALID_PRODUCER_EPOCH; with an older coordinator epoch than the one of
  the producer's last marker: TRANSACTION_COORDINATOR_FENCED;
* more than one batch per partition from an idempotent producer:
  INVALID_RECORD;
* an older epoch than the one known: INVALID_PRODUCER_EPOCH;
* no sequence (-1): a coordinator's transactional write, only the epoch
  counts;
* exactly the sequence range of a remembered batch of the same epoch: a
  duplicate, returned so the log answers with its original offsets;
* a new epoch must start at sequence 0, the same epoch must continue the
  last sequence: else OUT_OF_ORDER_SEQUENCE_NUMBER;
* a producer with no state is accepted with any sequence (KIP-360).

A pure function over the producers' entries; the owning ``Log`` calls it
under its lock.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.records.batch import RecordBatchHeader
from kavka.storage.errors import InvalidRecordError, StorageError
from kavka.storage.producer_state.end_txn_marker import NO_COORDINATOR_EPOCH, is_marker
from kavka.storage.producer_state.entry import SEQ_MOD, BatchMetadata, ProducerStateEntry, in_sequence


class OutOfOrderSequenceError(StorageError):
    """The batch's first sequence does not follow the producer's last one."""

    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(StorageError):
    """The batch carries an epoch older than the producer's current one."""

    code = ErrorCode.INVALID_PRODUCER_EPOCH


class TransactionCoordinatorFencedError(StorageError):
    """A marker from a coordinator epoch older than the one whose marker
    this partition last appended for the producer (a zombie coordinator)."""

    code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


def check_leader_append(
producers: dict[int, ProducerStateEntry], headers: list[RecordBatchHeader], coordinator_epochs: list[int] | None = None
) -> BatchMetadata | None:
    """Validate a producer's batches before they are appended; return the
    original batch when this one is a duplicate (then nothing must be
    appended). ``coordinator_epochs``: per batch, a marker's coordinator
    epoch (``end_txn_marker.coordinator_epochs``). Raises
    ``InvalidRecordError``, ``InvalidProducerEpochError``,
    ``TransactionCoordinatorFencedError`` or ``OutOfOrderSequenceError``."""
    if len(headers) == 1 and headers[0].producer_id < 0:
        return None  # the common non-idempotent produce
    for i, h in enumerate(headers):
        entry = producers.get(h.producer_id) if is_marker(h) else None
        if entry is None:
            continue
        if h.producer_epoch < entry.producer_epoch:
            # A marker from a coordinator that has not seen the producer's newer epoch.
            raise InvalidProducerEpochError(
                f"transaction marker for producer {h.producer_id} carries epoch {h.producer_epoch}, older "
                f"than its current epoch {entry.producer_epoch}"
            )
        epoch = coordinator_epochs[i] if coordinator_epochs is not None else NO_COORDINATOR_EPOCH
        if epoch < entry.coordinator_epoch:
            # Kafka's checkCoordinatorEpoch: the transaction coordinator
            # moved (a new leader epoch of its __transaction_state
            # partition) and a marker of the old one arrives late.
            raise TransactionCoordinatorFencedError(
                f"transaction marker for producer {h.producer_id} comes from coordinator epoch {epoch}, "
                f"older than epoch {entry.coordinator_epoch} whose marker this partition already has"
            )
    if not any((h.producer_id >= 0 and not h.is_control) for h in headers):
        return None
    if len(headers) != 1:
        # Kafka accepts exactly one v2 batch per partition from a client;
        # with sequences the rule matters: one request, one sequence range.
        raise InvalidRecordError(
            f"a produce request holds {len(headers)} batches for one partition; an idempotent producer "
            "must send exactly one batch per partition"
        )
    h = headers[0]
    entry = producers.get(h.producer_id)
    if entry is None:
        return None  # KIP-360: no state (new, or expired/removed by retention): any sequence starts it
    epoch, first_seq, last_seq = h.producer_epoch, h.base_sequence, h.last_sequence
    if epoch < entry.producer_epoch:
        raise InvalidProducerEpochError(
            f"producer {h.producer_id} sent epoch {epoch}, older than its current epoch "
            f"{entry.producer_epoch}: a newer instance fenced it"
        )
    if first_seq < 0:
        # No sequence: a coordinator's transactional write (TxnOffsetCommit
        # into __consumer_offsets), never a client's; only the epoch counts.
        return None
    duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
    if duplicate is not None:
        return duplicate
    if epoch != entry.producer_epoch:
        if first_seq != 0:
            raise OutOfOrderSequenceError(
                f"producer {h.producer_id} started epoch {epoch} at sequence {first_seq}; a new epoch "
                "must start at sequence 0"
            )
    elif entry.batches and not in_sequence(entry.last_seq, first_seq):
        raise OutOfOrderSequenceError(
            f"producer {h.producer_id} epoch {epoch} sent sequence {first_seq} after {entry.last_seq}; "
            f"expected {(entry.last_seq + 1) % SEQ_MOD}"
        )
    return None
