"""The coordinator epoch carried by transaction markers (KIP-98), read where
the producer state needs it: a partition leader remembers, per producer,
the epoch of the coordinator whose marker it last appended, and refuses a
marker from an older coordinator epoch (TRANSACTION_COORDINATOR_FENCED), so
a zombie coordinator — one that lost its ``__transaction_state`` partition
but still sends WriteTxnMarkers — cannot close a transaction its successor
owns.

A marker is a control batch with one small record (``protocol.records.
control``); only control batches with a producer id are decoded here, data
batches stay opaque. A control record that is not a readable transaction
marker yields ``NO_COORDINATOR_EPOCH`` (no fencing information). Pure
functions over buffers; any thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from kavka.protocol.records.batch import ATTR_CONTROL, InvalidRecordBatch, RecordBatchHeader
from kavka.protocol.records.control import parse_control_record
from kavka.protocol.records.reader import iter_records

NO_COORDINATOR_EPOCH = -1


def is_marker(header: RecordBatchHeader) -> bool:
    return header.producer_id >= 0 and header.is_control


def coordinator_epoch_of(batch: bytes | memoryview) -> int:
    """The coordinator epoch of the marker batch at the start of ``batch``."""
    try:
        for record in iter_records(batch, check_crc=False):
            return parse_control_record(record).coordinator_epoch
    except InvalidRecordBatch:
        pass
    return NO_COORDINATOR_EPOCH


def coordinator_epochs(buffer: bytes | bytearray | memoryview, headers: Sequence[RecordBatchHeader]) -> list[int] | None:
    """Per batch of ``buffer`` (whose batches are ``headers``, back to back
    from position 0): the marker's coordinator epoch, NO_COORDINATOR_EPOCH
    for a data batch. None when no batch is a marker (the common case)."""
    for h in headers:  # a loop, not any(genexpr): this runs for every produce
        if h.producer_id >= 0 and h.attributes & ATTR_CONTROL:
            break
    else:
        return None
    view = memoryview(buffer).cast("B")
    out: list[int] = []
    pos = 0
    for h in headers:
        out.append(coordinator_epoch_of(view[pos:pos + h.size]) if is_marker(h) else NO_COORDINATOR_EPOCH)
        pos += h.size
    return out
