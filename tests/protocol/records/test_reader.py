"""build -> validate -> iter_records for every codec, and the reader's
checks on what the records section holds."""

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.records import (
    Compression,
    CorruptRecordBatch,
    DecompressionError,
    SimpleRecord,
    build_batch,
    decode_batch,
    iter_records,
    validate_batch,
)
from kavka.protocol.records.builder import assemble_batch
from kavka.protocol.records.record import encode_record

from .strategies import record_lists


@settings(max_examples=60, deadline=None)
@given(
    items=record_lists,
    codec=st.sampled_from(list(Compression)),
    base_offset=st.integers(0, 2**62),
    producer=st.one_of(st.just((-1, -1, -1)), st.tuples(st.integers(0, 2**40), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 100))),
    leader_epoch=st.integers(-1, 2**31 - 1),
    container=st.sampled_from([bytes, bytearray, memoryview]),
)
def test_round_trip(items, codec, base_offset, producer, leader_epoch, container):
    pid, epoch, seq = producer
    raw = build_batch(
        items,
        base_offset=base_offset,
        compression=codec,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        partition_leader_epoch=leader_epoch,
    )
    header = validate_batch(raw)
    assert header.size == len(raw)
    assert header.compression is codec
    assert (header.base_offset, header.record_count, header.last_offset_delta) == (base_offset, len(items), len(items) - 1)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == producer
    assert header.partition_leader_epoch == leader_epoch
    assert header.base_timestamp == items[0].timestamp
    assert header.max_timestamp == max(r.timestamp for r in items)
    records = list(iter_records(container(raw)))
    assert [r.to_simple() for r in records] == items
    assert [r.offset for r in records] == list(range(base_offset, base_offset + len(items)))


def test_bytes_after_the_batch_are_ignored():
    raw = build_batch([SimpleRecord(b"k", b"v", 1)])
    assert [r.value for r in iter_records(raw + b"\x00" * 30)] == [b"v"]


def test_decompression_waits_for_the_first_record_and_is_bounded():
    raw = build_batch([SimpleRecord(None, b"x" * 100_000, 1)], compression=Compression.ZSTD)
    records = iter_records(raw, max_decompressed=1000)  # no error yet: lazy
    with pytest.raises(DecompressionError):
        next(records)
    assert decode_batch(raw, max_decompressed=200_000)[1][0].value == b"x" * 100_000


def test_a_corrupt_header_fails_at_once():
    raw = bytearray(build_batch([SimpleRecord(b"k", b"v", 1)]))
    raw[-2] ^= 1  # the value byte: "v" -> "w"
    with pytest.raises(CorruptRecordBatch, match="CRC32C"):
        iter_records(raw)
    assert list(iter_records(raw, check_crc=False))[0].value == b"w"


def _batch(section: bytes, count: int, last_offset_delta: int, codec=Compression.NONE) -> bytes:
    return assemble_batch(
        section,
        base_offset=0,
        last_offset_delta=last_offset_delta,
        record_count=count,
        base_timestamp=0,
        max_timestamp=0,
        attributes=int(codec),
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        partition_leader_epoch=-1,
    )


def _section(*offset_deltas: int) -> bytes:
    out = bytearray()
    for delta in offset_deltas:
        encode_record(out, delta, 0, b"k", b"v")
    return bytes(out)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4])
@pytest.mark.parametrize(
    "section, count, last_delta, message",
    [
        (_section(0, 1), 3, 2, "records"),
        (_section(0, 1, 2), 2, 2, "bytes follow"),
        (_section(0, 0), 2, 1, "offset delta 0 is not between"),
        (_section(0, 5), 2, 3, "offset delta 5 is not between"),
        (b"", 1, 0, "cannot hold"),
        (_section(0) * 1, 10**9, 0, "cannot hold"),
    ],
)
def test_records_section_must_match_the_header(section, count, last_delta, message, codec):
    with pytest.raises(CorruptRecordBatch, match=message):
        decode_batch(_batch(section, count, last_delta, codec))


def test_compacted_gaps_are_fine():
    header, records = decode_batch(_batch(_section(1, 4), 2, 5))
    assert [r.offset for r in records] == [1, 4]


def test_empty_batch_reads_as_no_records():
    raw = bytearray(_batch(b"", 0, 3))
    assert decode_batch(raw)[1] == []
    # A count the CRC vouches for but the bytes cannot hold.
    struct.pack_into(">i", raw, 57, 1)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    with pytest.raises(CorruptRecordBatch, match="cannot hold"):
        decode_batch(raw)
