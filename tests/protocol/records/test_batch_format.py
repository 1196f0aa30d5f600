"""A built batch read back field by field with ``struct`` against the
documented v2 layout, CRC coverage, and in-place patches."""

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.records import (
    Compression,
    CorruptRecordBatch,
    InvalidRecordBatch,
    SimpleRecord,
    TimestampType,
    build_batch,
    iter_batches,
    patch_base_offset,
    patch_leader_epoch,
    validate_batch,
)
from kavka.protocol.records.varint import read_varint, read_varlong

RECORDS = [
    SimpleRecord(b"k0", b"v0", 1_700_000_000_000, (("trace", b"abc"),)),
    SimpleRecord(None, b"v1", 1_700_000_000_005),
    SimpleRecord(b"k2", None, 1_699_999_999_990),
]


def test_header_fields_by_hand():
    raw = build_batch(
        RECORDS,
        base_offset=42,
        producer_id=7,
        producer_epoch=3,
        base_sequence=11,
        is_transactional=True,
        partition_leader_epoch=5,
    )
    base_offset, batch_length, leader_epoch, magic = struct.unpack_from(">qiib", raw, 0)
    (crc,) = struct.unpack_from(">I", raw, 17)
    attributes, last_delta, base_ts, max_ts, pid, epoch, seq, count = struct.unpack_from(">hiqqqhii", raw, 21)
    assert (base_offset, leader_epoch, magic) == (42, 5, 2)
    assert batch_length == len(raw) - 12
    assert crc == crc32c.crc32c(raw[21:])
    assert attributes == 0x10  # transactional, no codec, CreateTime
    assert (last_delta, count) == (2, 3)
    assert base_ts == 1_700_000_000_000  # the first record's timestamp
    assert max_ts == 1_700_000_000_005
    assert (pid, epoch, seq) == (7, 3, 11)


def test_records_by_hand():
    raw = build_batch(RECORDS, base_offset=42)
    pos = 61
    seen = []
    for _ in range(3):
        length, pos = read_varint(raw, pos)
        end = pos + length
        attributes = raw[pos]
        ts_delta, p = read_varlong(raw, pos + 1)
        off_delta, p = read_varint(raw, p)
        key_len, p = read_varint(raw, p)
        key = None if key_len < 0 else raw[p : p + key_len]
        p += max(key_len, 0)
        value_len, p = read_varint(raw, p)
        value = None if value_len < 0 else raw[p : p + value_len]
        p += max(value_len, 0)
        header_count, p = read_varint(raw, p)
        headers = []
        for _ in range(header_count):
            n, p = read_varint(raw, p)
            hk = raw[p : p + n].decode()
            p += n
            n, p = read_varint(raw, p)
            headers.append((hk, raw[p : p + n]))
            p += n
        assert p == end and attributes == 0
        seen.append((off_delta, ts_delta, key, value, tuple(headers)))
        pos = end
    assert pos == len(raw)
    assert seen == [
        (0, 0, b"k0", b"v0", (("trace", b"abc"),)),
        (1, 5, None, b"v1", ()),
        (2, -10, b"k2", None, ()),
    ]


@pytest.mark.parametrize("codec", list(Compression))
def test_attributes_carry_codec_and_timestamp_type(codec):
    raw = build_batch(
        RECORDS, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=1_800_000_000_000
    )
    header = validate_batch(raw)
    assert header.attributes == int(codec) | 0x08
    assert header.compression is codec
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 1_800_000_000_000


BATCH = build_batch(RECORDS * 3, base_offset=1000, compression=Compression.NONE)


@settings(max_examples=150)
@given(st.integers(21, len(BATCH) - 1), st.integers(0, 7))
def test_a_flipped_bit_in_the_crc_region_fails_validation(position, bit):
    damaged = bytearray(BATCH)
    damaged[position] ^= 1 << bit
    with pytest.raises(InvalidRecordBatch):
        validate_batch(damaged)


@settings(max_examples=50)
@given(st.integers(17, 20), st.integers(0, 7))
def test_a_flipped_bit_in_the_crc_itself_fails_validation(position, bit):
    damaged = bytearray(BATCH)
    damaged[position] ^= 1 << bit
    with pytest.raises(CorruptRecordBatch, match="CRC32C mismatch"):
        validate_batch(damaged)


@settings(max_examples=50)
@given(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**31), 2**31 - 1))
def test_patching_base_offset_and_leader_epoch_keeps_the_crc(base_offset, epoch):
    buf = bytearray(BATCH)
    patch_base_offset(buf, base_offset)
    patch_leader_epoch(buf, epoch)
    header = validate_batch(buf)
    assert (header.base_offset, header.partition_leader_epoch) == (base_offset, epoch)
    assert header.crc == validate_batch(BATCH).crc


def test_patching_in_a_larger_buffer_at_a_position():
    buf = bytearray(b"\xaa" * 10) + bytearray(BATCH) + bytearray(BATCH)
    patch_base_offset(buf, 5, pos=10 + len(BATCH))
    positions = [(pos, h.base_offset) for pos, h in iter_batches(buf, start=10)]
    assert positions == [(10, 1000), (10 + len(BATCH), 5)]


def test_unknown_codec_bits_are_an_invalid_batch_not_a_crash():
    buf = bytearray(BATCH)
    struct.pack_into(">h", buf, 21, 6)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    with pytest.raises(InvalidRecordBatch, match="unknown compression codec id 6"):
        validate_batch(buf)


def test_delete_horizon_property():
    header = validate_batch(BATCH)
    assert header.delete_horizon_ms is None and not header.has_delete_horizon


def test_every_single_bit_flip_in_a_small_batch_is_caught():
    small = build_batch([SimpleRecord(b"k", b"value", 5, (("h", None),))], compression=Compression.GZIP)
    for position in range(17, len(small)):
        for bit in range(8):
            damaged = bytearray(small)
            damaged[position] ^= 1 << bit
            with pytest.raises(InvalidRecordBatch):
                validate_batch(damaged)
