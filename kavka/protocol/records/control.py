"""Control batches: the transaction markers (KIP-98) a transaction
coordinator has each partition leader append on commit or abort.

A control batch has attributes transactional + control, no compression, no
base sequence, and exactly one record whose key and value are::

    key    version int16 (0), type int16 (0 = ABORT, 1 = COMMIT)
    value  version int16 (0), coordinator_epoch int32

Readers accept newer versions by reading the version-0 prefix, as Kafka's
consumer does, and refuse shorter keys/values and other control types with
``InvalidControlRecord``. Pure functions; any thread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from kavka.protocol.records.batch import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    NO_PARTITION_LEADER_EPOCH,
    NO_SEQUENCE,
    InvalidRecordBatch,
)
from kavka.protocol.records.builder import assemble_batch
from kavka.protocol.records.record import Record, encode_record

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlRecordType(IntEnum):
    """Type field of a control record key (transaction markers only)."""

    ABORT = 0
    COMMIT = 1


class InvalidControlRecord(InvalidRecordBatch):
    """A record in a control batch that is not a transaction marker."""


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """A decoded transaction marker: which outcome, and the epoch of the
    coordinator that wrote it (a stale coordinator's marker is fenced)."""

    kind: ControlRecordType
    coordinator_epoch: int
    key_version: int = CONTROL_KEY_VERSION
    value_version: int = END_TXN_MARKER_VERSION


def encode_control_key(kind: ControlRecordType) -> bytes:
    return _KEY.pack(CONTROL_KEY_VERSION, ControlRecordType(kind))


def encode_end_txn_marker_value(coordinator_epoch: int) -> bytes:
    return _VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)


def build_control_batch(
    kind: ControlRecordType,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """One control batch holding the ``kind`` marker for ``producer_id``."""
    kind = ControlRecordType(kind)
    if producer_id < 0 or producer_epoch < 0:
        raise ValueError(f"a transaction marker needs producer id/epoch >= 0, got {producer_id}/{producer_epoch}")
    if not -(1 << 31) <= coordinator_epoch < (1 << 31):
        raise ValueError(f"coordinator_epoch {coordinator_epoch} is outside int32")
    section = bytearray()
    encode_record(section, 0, 0, encode_control_key(kind), encode_end_txn_marker_value(coordinator_epoch))
    return assemble_batch(
        section,
        base_offset=base_offset,
        last_offset_delta=0,
        record_count=1,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        partition_leader_epoch=partition_leader_epoch,
    )


def control_record_type(key: bytes | None) -> int:
    """The raw type number of a control record key (any control type)."""
    if key is None or len(key) < _KEY.size:
        raise InvalidControlRecord(f"control record key needs {_KEY.size} bytes, got {0 if key is None else len(key)}")
    version: int
    kind: int
    version, kind = _KEY.unpack_from(key)
    if version < 0:
        raise InvalidControlRecord(f"control record key version {version} is negative")
    return kind


def parse_control_record(record: Record) -> EndTxnMarker:
    """Decode a transaction marker from a record of a control batch."""
    key = record.key
    kind = control_record_type(key)
    assert key is not None  # control_record_type rejects a missing key
    if kind not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise InvalidControlRecord(f"control record type {kind} is not a transaction marker (0 ABORT, 1 COMMIT)")
    value = record.value
    if value is None or len(value) < _VALUE.size:
        raise InvalidControlRecord(
            f"transaction marker value needs {_VALUE.size} bytes, got {0 if value is None else len(value)}"
        )
    value_version, coordinator_epoch = _VALUE.unpack_from(value)
    if value_version < 0:
        raise InvalidControlRecord(f"transaction marker value version {value_version} is negative")
    return EndTxnMarker(
        ControlRecordType(kind), coordinator_epoch, _KEY.unpack_from(key)[0], value_version
    )
