"""Kafka's LogValidator on the leader (kavka.storage.log_validator through
``Log.append_as_leader``): every rule refuses with Kafka's error and the
records at fault, and a refused append leaves the log byte for byte as it
was; accepted batches are stored as Kafka stores them (LogAppendTime
stamped in the header, the topic's compression.type, the max timestamp of
the records)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kavka.protocol.records import Compression, SimpleRecord, build_batch, decode_batch, iter_batches, validation
from kavka.protocol.records.batch import HEADER_SIZE, TimestampType, parse_header, validate_batch
from kavka.protocol.records.builder import assemble_batch
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.protocol.records.record import encode_record
from kavka.storage import log_validator
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.errors import (
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    RecordError,
)
from kavka.storage.log import Log

from .conftest import T0, make_batch, small_config

HOUR = 3_600_000


def files(directory: Path) -> dict[str, bytes]:
    """Every file of the log directory and its bytes (indexes included)."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def batch_from_section(section: bytes, count: int, *, last_offset_delta: int | None = None, codec=Compression.NONE,
                       ts: int = T0, producer_id: int = -1, base_sequence: int = -1, attributes: int = 0) -> bytes:
    """A batch around ``section`` with a valid CRC, whatever the records hold."""
    return assemble_batch(
        section, base_offset=0, last_offset_delta=count - 1 if last_offset_delta is None else last_offset_delta,
        record_count=count, base_timestamp=ts, max_timestamp=ts, attributes=int(codec) | attributes,
        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1, base_sequence=base_sequence,
        partition_leader_epoch=-1,
    )


@pytest.fixture(autouse=True, params=[pytest.param(True, id="C"), pytest.param(False, id="python")])
def walk_path(request, monkeypatch):
    """Every test on both record walks: the C extension and the fallback a
    broker without a compiler runs."""
    if request.param and not validation.NATIVE:
        pytest.skip("kavka.protocol.records._validate is not built here")
    monkeypatch.setattr(validation, "NATIVE", request.param)


@pytest.fixture
def open_log(log_dir, clock):
    opened = []

    def make(**props) -> Log:
        log = Log(log_dir, small_config(**{"segment.bytes": 1 << 20, **props}), clock=clock)
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()


def refused(log: Log, records: bytes, error, origin=AppendOrigin.CLIENT):
    """Append ``records`` after a good batch; it must raise ``error`` and
    change nothing on disk or in memory."""
    log.append_as_leader(make_batch(2), 0)
    before = files(log.dir), log.log_end_offset, log.active_segment.size
    with pytest.raises(error) as info:
        log.append_as_leader(records, 0, origin)
    assert (files(log.dir), log.log_end_offset, log.active_segment.size) == before
    return info.value


# -- structure ----------------------------------------------------------------------------------

def test_a_poison_pill_with_a_valid_crc_is_refused_naming_the_record(open_log):
    log = open_log()
    good = bytearray()
    encode_record(good, 0, 0, b"k", b"v")
    garbage = bytes(good) + b"\x14garbage that is no record at all"
    err = refused(log, batch_from_section(garbage, 2), InvalidRecordError)
    assert err.code.name == "INVALID_RECORD"
    assert err.record_errors and err.record_errors[0].batch_index == 1
    assert "record 1 of the record batch at byte 0 for topic-0 is invalid" in err.message


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_garbage_inside_a_compressed_batch_is_found(open_log, codec):
    log = open_log()
    records = b"".join(bytes([12, 0, 0, 2 * i, 1, 1, 0]) for i in range(3))  # keyless, valueless, no headers
    err = refused(log, batch_from_section(records + b"\xff\xff", 3, codec=codec), InvalidRecordError)
    assert "2 bytes follow the batch's 3 records" in err.message and err.record_errors == ()


def test_an_undecompressable_payload_is_invalid_record(open_log):
    log = open_log()
    raw = bytearray(build_batch([SimpleRecord(b"k", b"v" * 100, T0)], compression=Compression.GZIP))
    raw[HEADER_SIZE + 12: HEADER_SIZE + 20] = b"\xff" * 8
    from kavka.protocol.records.batch import write_crc
    write_crc(raw)
    err = refused(log, bytes(raw), InvalidRecordError)
    assert "cannot be read: gzip decompression failed" in err.message


def test_decompression_is_bounded(open_log, monkeypatch):
    log = open_log()
    monkeypatch.setattr(log_validator, "MAX_DECOMPRESSED", 1000)
    bomb = build_batch([SimpleRecord(b"k", b"\x00" * 5000, T0)], compression=Compression.ZSTD)
    err = refused(log, bomb, InvalidRecordError)
    assert "1000-byte limit" in err.message


def test_a_record_count_larger_than_the_records_is_refused(open_log):
    log = open_log()
    section = bytearray()
    for i in range(2):
        encode_record(section, i, 0, b"k", b"v")
    err = refused(log, batch_from_section(bytes(section), 3), InvalidRecordError)
    assert err.record_errors == (RecordError(2, "the records section ends after 2 of the 3 records the batch "
                                                "declares"),)


def test_offset_deltas_must_be_dense(open_log):
    log = open_log()
    section = bytearray()
    for delta in (0, 1, 3):
        encode_record(section, delta, 0, b"k", b"v")
    err = refused(log, batch_from_section(bytes(section), 3), InvalidRecordError)
    assert err.record_errors[0].batch_index == 2 and "offset delta 3 should be 2" in err.message


def test_a_bad_batch_after_a_good_one_refuses_both(open_log):
    log = open_log()
    bad = batch_from_section(b"\x00" * 20, 2)
    refused(log, make_batch(3) + bad, InvalidRecordError)


# -- compacted topics ---------------------------------------------------------------------------

def test_keyless_records_are_refused_on_a_compacted_topic_with_kafkas_message(open_log):
    log = open_log(**{"cleanup.policy": "compact"})
    batch = build_batch([SimpleRecord(b"a", b"1", T0), SimpleRecord(None, b"2", T0), SimpleRecord(None, b"3", T0)])
    err = refused(log, batch, InvalidRecordError)
    message = "Compacted topic cannot accept message without key in topic partition topic-0"
    assert err.record_errors == (RecordError(1, message), RecordError(2, message))
    assert err.message.startswith("One or more records have been rejected due to 2 record errors in total, and only "
                                  "showing the first three errors at most: [RecordError(batchIndex=1, message='")


def test_keyless_records_are_fine_on_a_delete_topic_and_keyed_ones_on_a_compacted_one(open_log, tmp_path):
    log = open_log()
    log.append_as_leader(build_batch([SimpleRecord(None, b"1", T0)]), 0)
    compacted = Log(tmp_path / "c-0", small_config(**{"cleanup.policy": "compact,delete"}))
    try:
        compacted.append_as_leader(build_batch([SimpleRecord(b"k", None, T0)]), 0)  # a tombstone has a key
        with pytest.raises(InvalidRecordError, match="Compacted topic"):
            compacted.append_as_leader(build_batch([SimpleRecord(None, b"x", T0)]), 0)
    finally:
        compacted.close()


# -- timestamps (KIP-937) -----------------------------------------------------------------------

@pytest.mark.parametrize("props, bad, good", [
    ({"message.timestamp.before.max.ms": HOUR}, T0 - HOUR - 1, T0 - HOUR),
    ({"message.timestamp.after.max.ms": HOUR}, T0 + HOUR + 1, T0 + HOUR),
    ({"message.timestamp.difference.max.ms": HOUR}, T0 + HOUR + 1, T0 - HOUR),
    # the new keys win over the deprecated one once set
    ({"message.timestamp.difference.max.ms": HOUR, "message.timestamp.before.max.ms": 2 * HOUR}, T0 - 2 * HOUR - 1,
     T0 - 2 * HOUR),
])
def test_create_time_timestamps_are_checked_per_record(open_log, props, bad, good):
    log = open_log(**props)
    batch = build_batch([SimpleRecord(b"k", b"v", good), SimpleRecord(b"k", b"v", bad)])
    err = refused(log, batch, InvalidTimestampError)
    assert err.code.name == "INVALID_TIMESTAMP"
    assert err.message == "One or more records have been rejected due to invalid timestamp"
    assert [e.batch_index for e in err.record_errors] == [1]
    assert err.record_errors[0].message.startswith(f"Timestamp {bad} of message with offset 1 is out of range.")
    log.append_as_leader(build_batch([SimpleRecord(b"k", b"v", good)]), 0)


def test_unbounded_defaults_accept_any_timestamp(open_log):
    log = open_log()
    log.append_as_leader(build_batch([SimpleRecord(b"k", b"v", -(1 << 62)), SimpleRecord(b"k", b"v", (1 << 62) - 1)]), 0)


def test_a_timestamp_error_wins_over_a_key_error_in_the_partition_code(open_log):
    log = open_log(**{"cleanup.policy": "compact", "message.timestamp.after.max.ms": 2})
    batch = build_batch([SimpleRecord(None, b"v", T0), SimpleRecord(b"k", b"v", T0 + 5)])
    err = refused(log, batch, InvalidTimestampError)
    assert [e.batch_index for e in err.record_errors] == [0, 1]


# -- LogAppendTime ------------------------------------------------------------------------------

def test_log_append_time_is_stamped_in_the_header_only(open_log, clock):
    log = open_log(**{"message.timestamp.type": "LogAppendTime"})
    clock.advance(777)
    batch = make_batch(3, ts=5)
    info = log.append_as_leader(batch, 0)
    assert info.log_append_time == clock.now_ms == info.max_timestamp
    stored = log.read(0, 1 << 20).records
    header = validate_batch(stored)  # the CRC holds
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME and header.max_timestamp == clock.now_ms
    assert bytes(stored[HEADER_SIZE:]) == batch[HEADER_SIZE:]  # the records are the producer's bytes


def test_a_producer_may_not_set_log_append_time_itself(open_log):
    log = open_log(**{"message.timestamp.type": "LogAppendTime"})
    batch = build_batch([SimpleRecord(b"k", b"v", T0)], timestamp_type=TimestampType.LOG_APPEND_TIME,
                        log_append_time=T0)
    err = refused(log, batch, InvalidTimestampError)
    assert "Producer should not set timestamp type to LogAppendTime" in err.record_errors[0].message


def test_a_create_time_max_timestamp_is_taken_from_the_records(open_log):
    log = open_log()
    raw = bytearray(build_batch([SimpleRecord(b"k", b"v", T0 + 9), SimpleRecord(b"k", b"v", T0)]))
    import struct
    struct.pack_into(">q", raw, 35, T0 - 100)  # a producer's wrong max timestamp
    from kavka.protocol.records.batch import write_crc
    write_crc(raw)
    info = log.append_as_leader(bytes(raw), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (T0 + 9, 0)
    assert validate_batch(log.read(0, 1 << 20).records).max_timestamp == T0 + 9


def test_the_offset_of_the_max_timestamp_is_the_first_record_holding_it(open_log):
    log = open_log()
    log.append_as_leader(make_batch(3), 0)
    info = log.append_as_leader(build_batch([SimpleRecord(b"k", b"v", T0 + t) for t in (1, 50, 50, 2)]), 0)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (T0 + 50, 4)


# -- compression.type ---------------------------------------------------------------------------

RECORDS = [SimpleRecord(b"key-%d" % i, b"value %d " % i * 30, T0 + i, (("h", b"%d" % i),)) for i in range(40)]


@pytest.mark.parametrize("topic, producer, stored", [
    ("producer", Compression.LZ4, Compression.LZ4),
    ("producer", Compression.NONE, Compression.NONE),
    ("zstd", Compression.NONE, Compression.ZSTD),
    ("gzip", Compression.SNAPPY, Compression.GZIP),
    ("uncompressed", Compression.ZSTD, Compression.NONE),
    ("lz4", Compression.LZ4, Compression.LZ4),
])
def test_the_topic_compression_type_is_honoured(open_log, topic, producer, stored):
    log = open_log(**{"compression.type": topic})
    log.append_as_leader(make_batch(2), 0)
    batch = build_batch(RECORDS, compression=producer, producer_id=4, producer_epoch=0, base_sequence=0)
    info = log.append_as_leader(batch, 7)
    assert info.first_offset == 2
    data = log.read(2, 1 << 20).records
    header, records = decode_batch(data)
    assert header.compression is stored
    assert (header.base_offset, header.partition_leader_epoch, header.producer_id, header.base_sequence) == (2, 7, 4, 0)
    assert [r.to_simple() for r in records] == RECORDS
    assert [r.offset for r in records] == list(range(2, 42))
    assert log.log_end_offset == 42
    if stored is producer:
        assert bytes(data[HEADER_SIZE:]) == batch[HEADER_SIZE:]  # kept as the producer sent it


def test_markers_are_never_recompressed(open_log):
    log = open_log(**{"compression.type": "gzip"})
    log.append_as_leader(build_batch(RECORDS[:1], producer_id=3, producer_epoch=0, base_sequence=0,
                                     is_transactional=True), 0)
    log.append_as_leader(build_control_batch(ControlRecordType.COMMIT, 3, 0, 1, T0), 0, AppendOrigin.COORDINATOR)
    headers = [h for _p, h in iter_batches(log.read(0, 1 << 20).records)]
    assert [(h.is_control, h.compression) for h in headers] == [(False, Compression.GZIP), (True, Compression.NONE)]


def test_max_message_bytes_is_checked_again_after_recompression(open_log):
    log = open_log(**{"compression.type": "uncompressed", "max.message.bytes": 2000})
    batch = build_batch([SimpleRecord(b"k", b"\x00" * 5000, T0)], compression=Compression.GZIP)
    assert len(batch) < 2000
    err = refused(log, batch, MessageTooLargeError)
    assert "once stored with compression.type=uncompressed, larger than max.message.bytes=2000" in err.message


# -- origin -------------------------------------------------------------------------------------

def test_a_client_idempotent_batch_needs_a_sequence(open_log):
    log = open_log()
    batch = build_batch(RECORDS[:2], producer_id=8, producer_epoch=0)  # base sequence -1
    err = refused(log, batch, InvalidRecordError)
    assert err.message == "Invalid sequence number -1 in record batch with producerId 8 in topic partition topic-0"
    # a coordinator's transactional write carries no sequence (TxnOffsetCommit)
    log.append_as_leader(build_batch(RECORDS[:2], producer_id=8, producer_epoch=0, is_transactional=True), 0,
                         AppendOrigin.COORDINATOR)


def test_coordinators_follow_the_record_rules_too(open_log):
    log = open_log(**{"cleanup.policy": "compact"})
    refused(log, build_batch([SimpleRecord(None, b"v", T0)]), InvalidRecordError, origin=AppendOrigin.COORDINATOR)


# -- followers ----------------------------------------------------------------------------------

def test_a_follower_stores_what_its_leader_sent_without_walking_it(open_log):
    log = open_log(**{"cleanup.policy": "compact"})
    keyless = build_batch([SimpleRecord(None, b"v", T0)], partition_leader_epoch=0)
    log.append_as_follower(keyless)  # a leader of an older version stored it; the follower copies it
    assert log.log_end_offset == 1
    assert parse_header(log.read(0, 1 << 20).records).record_count == 1
