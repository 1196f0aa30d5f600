"""The C record walk (``kavka.protocol.records._validate``) and its Python
fallback give the same verdict and the same messages: on random valid
batches from Kavka's builder and kafka-python's (every codec), on those
batches damaged byte by byte (the CRC recomputed, as a hostile producer
would), on sections made of random varints and bytes, and on random bytes.

And what the walk accepts, Kavka's reader (``decode_batch``, which the
cleaner, the console consumer and the client use) reads without error, with
the same record count and max timestamp: the leader never stores a batch a
reader of its log would choke on."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from kavka.protocol.records import Compression, build_batch, decode_batch
from kavka.protocol.records.batch import HEADER_SIZE, TimestampType, parse_header
from kavka.protocol.records.builder import assemble_batch
from kavka.protocol.records.reader import records_section
from kavka.protocol.records.record import encode_record
from kavka.protocol.records.validation import NATIVE, TS_ALWAYS, TS_NONE, TS_RANGE, walk_records
from kavka.protocol.records.varint import write_varint, write_varlong

from .strategies import record_lists

pytestmark = pytest.mark.skipif(not NATIVE, reason="kavka.protocol.records._validate is not built here")

PARITY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INT64 = (-(1 << 63), (1 << 63) - 1)

rules = st.fixed_dictionaries({
    "key_message": st.none() | st.just("Compacted topic cannot accept message without key in topic partition t-0"),
    "ts_mode": st.sampled_from([TS_NONE, TS_RANGE, TS_ALWAYS]),
    "ts_lo": st.integers(*INT64),
    "ts_hi": st.integers(*INT64),
    "ts_message": st.just("Producer should not set timestamp type to LogAppendTime."),
    "max_errors": st.integers(0, 5),
})


def both_walks(section, count, base_offset, base_timestamp, fixed=None, **rule):
    c = walk_records(section, count, base_offset, base_timestamp, fixed, native=True, **rule)
    py = walk_records(section, count, base_offset, base_timestamp, fixed, native=False, **rule)
    assert c == py
    return c


def kafka_python_batch(items, codec) -> bytes:
    builder = DefaultRecordBatchBuilder(2, int(codec), False, -1, -1, -1, batch_size=1 << 24)
    for i, rec in enumerate(items):
        assert builder.append(i, rec.timestamp, rec.key, rec.value, list(rec.headers)) is not None
    return bytes(builder.build())


def walk_batch(raw: bytes, **rule):
    header = parse_header(raw)
    section = records_section(raw, header)
    fixed = header.max_timestamp if header.timestamp_type is TimestampType.LOG_APPEND_TIME else None
    return header, both_walks(section, header.record_count, header.base_offset, header.base_timestamp, fixed, **rule)


@PARITY
@given(record_lists, st.sampled_from(list(Compression)), st.booleans(), st.integers(0, 1 << 40), rules)
def test_valid_batches_pass_the_same_way(items, codec, kafka_python, base_offset, rule):
    raw = kafka_python_batch(items, codec) if kafka_python else build_batch(items, compression=codec,
                                                                          base_offset=base_offset)
    header, walk = walk_batch(raw)
    assert walk.ok
    assert walk.max_timestamp == max([-1] + [r.timestamp for r in items])
    # with rules: both paths still agree, record by record
    walk_batch(raw, **rule)


@PARITY
@given(record_lists, st.sampled_from([Compression.NONE, Compression.GZIP]),
       st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4),
       st.integers(-3, 3), rules)
def test_damaged_batches_with_a_recomputed_crc_get_the_same_verdict(items, codec, changes, count_change, rule):
    raw = build_batch(items)  # damage the plain records, then compress them as a producer would
    header = parse_header(raw)
    section = bytearray(raw[HEADER_SIZE:])
    for pos, value in changes:
        section[pos % len(section)] = value
    count = max(header.record_count + count_change, 0)
    damaged = build_from_section(bytes(section), count, codec, header.base_timestamp)
    _h, walk = walk_batch(damaged, **rule)
    if not walk.structural:  # what the walk accepts, the reader reads
        _read_header, records = decode_batch(damaged)
        assert len(records) == count


def build_from_section(section: bytes, count: int, codec: Compression = Compression.NONE,
                       base_timestamp: int = 0) -> bytes:
    return assemble_batch(
        section, base_offset=0, last_offset_delta=max(count - 1, 0), record_count=count,
        base_timestamp=base_timestamp, max_timestamp=base_timestamp, attributes=int(codec),
        producer_id=-1, producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1,
    )


field = st.one_of(
    st.integers(-(1 << 31), (1 << 31) - 1).map(lambda n: ("varint", n)),
    st.integers(-3, 40).map(lambda n: ("varint", n)),
    st.integers(*INT64).map(lambda n: ("varlong", n)),
    st.binary(max_size=12).map(lambda b: ("raw", b)),
)


def encode_fields(fields) -> bytes:
    out = bytearray()
    for kind, value in fields:
        if kind == "varint":
            write_varint(value, out)
        elif kind == "varlong":
            write_varlong(value, out)
        else:
            out += value
    return bytes(out)


@PARITY
@given(st.lists(st.lists(field, max_size=10), max_size=6), st.integers(0, 8), st.integers(*INT64), rules)
def test_sections_of_random_varints_get_the_same_verdict(records, count, base_timestamp, rule):
    section = bytearray()
    for fields in records:
        raw = encode_fields(fields)
        write_varint(len(raw), section)
        section += raw
    walk = both_walks(bytes(section), count, 0, base_timestamp, **rule)
    if not walk.structural:  # what the walk accepts, the reader reads
        _header, decoded = decode_batch(build_from_section(bytes(section), count))
        assert len(decoded) == count


@PARITY
@given(st.binary(max_size=200), st.integers(-2, 10), st.integers(*INT64), st.none() | st.integers(*INT64), rules)
def test_random_bytes_get_the_same_verdict(section, count, base_timestamp, fixed, rule):
    both_walks(section, count, 7, base_timestamp, fixed, **rule)


def test_the_walk_is_stricter_than_the_reader_where_kafka_is():
    # The reader accepts gaps in offset deltas (the cleaner leaves them);
    # a producer's batch is dense, so the leader refuses a gap.
    out = bytearray()
    encode_record(out, 0, 0, b"k", b"v")
    encode_record(out, 2, 0, b"k", b"v")
    batch = assemble_batch(bytes(out), base_offset=0, last_offset_delta=2, record_count=2, base_timestamp=0,
                           max_timestamp=0, attributes=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                           partition_leader_epoch=-1)
    assert len(decode_batch(batch)[1]) == 2
    walk = both_walks(bytes(out), 2, 0, 0)
    assert walk.structural and walk.errors[0][0] == 1
