"""Batches from kafka-python 3's DefaultRecordBatchBuilder parse with our
reader, and ours with its reader, for every codec (its snappy, lz4 and zstd
need python-snappy, lz4 and zstandard: the ``dev`` extra has them)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kavka.protocol.records import Compression, SimpleRecord, build_batch, decode_batch

from .strategies import record_lists

TEXT_RECORDS = [
    SimpleRecord(b"user-%d" % (i % 7), b"payload %d " % i * 20, 1_700_000_000_000 + i, (("h", b"%d" % i), ("n", None)))
    for i in range(200)
] + [SimpleRecord(None, None, 1_700_000_000_000)]


def _kafka_python_batch(items, codec, pid=-1, epoch=-1, seq=-1, transactional=False) -> bytes:
    builder = DefaultRecordBatchBuilder(2, int(codec), transactional, pid, epoch, seq, batch_size=1 << 24)
    for i, rec in enumerate(items):
        assert builder.append(i, rec.timestamp, rec.key, rec.value, list(rec.headers)) is not None
    return bytes(builder.build())


def _their_view(raw: bytes):
    batch = DefaultRecordBatch(bytearray(raw))
    assert batch.validate_crc()
    return batch, [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]


@pytest.mark.parametrize("codec", list(Compression))
def test_we_read_kafka_python_batches(codec):
    raw = _kafka_python_batch(TEXT_RECORDS, codec, pid=99, epoch=2, seq=40, transactional=True)
    header, records = decode_batch(raw)
    # kafka-python sends uncompressed when compression does not pay; these
    # records compress well, so the codec must be the one asked for.
    assert header.compression is codec
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (99, 2, 40)
    assert header.is_transactional
    assert [r.to_simple() for r in records] == TEXT_RECORDS
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == _their_view(raw)[1]


@pytest.mark.parametrize("codec", list(Compression))
def test_kafka_python_reads_our_batches(codec):
    raw = build_batch(TEXT_RECORDS, base_offset=1234, compression=codec, producer_id=5, producer_epoch=0, base_sequence=0)
    batch, theirs = _their_view(raw)
    assert batch.compression_type == int(codec)
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (1234, 1234 + 200, 201)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (5, 0, 0)
    assert theirs == [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decode_batch(raw)[1]]


@settings(max_examples=30, deadline=None)
@given(record_lists, st.sampled_from(list(Compression)))
def test_any_records_both_ways(items, codec):
    ours = build_batch(items, compression=codec)
    assert [t[1:] for t in _their_view(ours)[1]] == [(r.timestamp, r.key, r.value, r.headers) for r in items]
    theirs = _kafka_python_batch(items, codec)
    assert [r.to_simple() for r in decode_batch(theirs)[1]] == items
