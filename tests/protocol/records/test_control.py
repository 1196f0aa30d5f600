"""Transaction markers: layout, parsing, and refusal of anything else."""

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kavka.protocol.records import (
    ControlRecordType,
    EndTxnMarker,
    InvalidControlRecord,
    Record,
    build_control_batch,
    decode_batch,
    parse_control_record,
)
from kavka.protocol.records.control import control_record_type


@pytest.mark.parametrize("kind", list(ControlRecordType))
def test_marker_batch_layout(kind):
    raw = build_control_batch(kind, 4242, 7, 13, 1_700_000_000_000, base_offset=88, partition_leader_epoch=3)
    header, records = decode_batch(raw)
    assert header.attributes == 0x30  # transactional + control, no codec
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4242, 7, -1)
    assert (header.base_offset, header.record_count, header.last_offset_delta) == (88, 1, 0)
    assert header.partition_leader_epoch == 3
    assert header.base_timestamp == header.max_timestamp == 1_700_000_000_000
    (record,) = records
    assert record.key == struct.pack(">hh", 0, int(kind))
    assert record.value == struct.pack(">hi", 0, 13)
    assert record.headers == ()
    assert parse_control_record(record) == EndTxnMarker(kind, 13)


def test_kafka_python_reads_our_markers():
    raw = build_control_batch(ControlRecordType.ABORT, 5, 1, 2, 99, base_offset=10)
    batch = DefaultRecordBatch(bytearray(raw))
    assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
    (record,) = list(batch)
    assert record.abort and record.offset == 10


def _record(key, value):
    return Record(0, 0, key, value, (), 0, 0)


def test_newer_versions_are_read_by_their_version_0_prefix():
    marker = parse_control_record(_record(struct.pack(">hh", 1, 1) + b"extra", struct.pack(">hi", 2, 9) + b"more"))
    assert marker == EndTxnMarker(ControlRecordType.COMMIT, 9, 1, 2)


@pytest.mark.parametrize(
    "key, value, message",
    [
        (None, struct.pack(">hi", 0, 1), "key needs 4 bytes, got 0"),
        (b"\x00\x00\x00", struct.pack(">hi", 0, 1), "key needs 4 bytes, got 3"),
        (struct.pack(">hh", -1, 0), struct.pack(">hi", 0, 1), "key version -1"),
        (struct.pack(">hh", 0, 2), struct.pack(">hi", 0, 1), "type 2 is not a transaction marker"),
        (struct.pack(">hh", 0, 1), None, "value needs 6 bytes, got 0"),
        (struct.pack(">hh", 0, 1), b"\x00\x00\x00", "value needs 6 bytes, got 3"),
        (struct.pack(">hh", 0, 1), struct.pack(">hi", -3, 1), "value version -3"),
    ],
)
def test_malformed_control_records_are_typed_errors(key, value, message):
    with pytest.raises(InvalidControlRecord, match=message):
        parse_control_record(_record(key, value))


def test_control_record_type_reports_other_types():
    assert control_record_type(struct.pack(">hh", 0, 3)) == 3


@pytest.mark.parametrize(
    "args, message",
    [
        ((ControlRecordType.COMMIT, -1, 0, 0, 0), "producer id/epoch"),
        ((ControlRecordType.COMMIT, 1, -1, 0, 0), "producer id/epoch"),
        ((ControlRecordType.COMMIT, 1, 0, 2**31, 0), "coordinator_epoch"),
    ],
)
def test_bad_marker_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        build_control_batch(*args)


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError):
        build_control_batch(5, 1, 0, 0, 0)
