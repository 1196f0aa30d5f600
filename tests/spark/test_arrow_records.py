"""kavka.spark.arrow_records against Kavka's own record decoder: the Arrow
columns hold exactly the records of [start, end), aborted transactions and
control batches left out, and corrupt input raises."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.records import Compression, SimpleRecord, build_batch, iter_batches, iter_records
from kavka.protocol.records.batch import CorruptRecordBatch, TimestampType
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.spark.arrow_records import ColumnBuilder
from kavka.spark.schema import arrow_schema

pytestmark = pytest.mark.spark

blobs = st.one_of(st.none(), st.binary(max_size=300))
records = st.builds(SimpleRecord, blobs, blobs, st.integers(0, 2**41),
                    st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=8))),
                             max_size=3).map(tuple))
batches = st.lists(st.tuples(st.lists(records, min_size=1, max_size=30), st.sampled_from(list(Compression)),
                             st.booleans()), min_size=1, max_size=5)


def _log(spec) -> bytes:
    out, offset = bytearray(), 0
    for recs, codec, log_append in spec:
        out += build_batch(recs, base_offset=offset, compression=codec,
                           timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
                           log_append_time=1_700_000_000_000 if log_append else None)
        offset += len(recs)
    return bytes(out)


def _expected(data: bytes, start: int, end: int):
    out = []
    for pos, h in iter_batches(data):
        for r in iter_records(data[pos:pos + h.size]):
            if start <= r.offset < end:
                out.append((r.key, r.value, r.offset, r.timestamp, int(h.timestamp_type),
                            [{"key": k, "value": v} for k, v in r.headers]))
    return out


@settings(max_examples=60, deadline=None)
@given(batches, st.integers(0, 40), st.integers(0, 200), st.booleans())
def test_columns_equal_the_reference_decoder(spec, start, length, with_headers):
    data = _log(spec)
    end = start + length
    b = ColumnBuilder("topic-a", 3, with_headers, start)
    b.add_fetch(data, end)
    rb = b.record_batch()
    assert rb.schema.equals(arrow_schema(with_headers))
    got = list(zip(rb.column("key").to_pylist(), rb.column("value").to_pylist(), rb.column("offset").to_pylist(),
                   [us // 1000 for us in rb.column("timestamp").cast(pa.int64()).to_pylist()],
                   rb.column("timestampType").to_pylist(),
                   rb.column("headers").to_pylist() if with_headers else [None] * rb.num_rows))
    want = _expected(data, start, end)
    assert [g[:5] for g in got] == [w[:5] for w in want]
    if with_headers:
        assert [g[5] for g in got] == [w[5] for w in want]
    assert set(rb.column("topic").to_pylist()) <= {"topic-a"} and set(rb.column("partition").to_pylist()) <= {3}
    total = sum(len(r) for r, _, _ in spec)
    assert b.next_offset == min(max(start, total), end) or b.next_offset == min(total, end)


def test_aborted_transactions_and_markers_are_left_out_under_read_committed():
    pid_a, pid_b = 7, 8
    data = (build_batch([SimpleRecord(b"a", b"1", 0)], base_offset=0, producer_id=pid_a, producer_epoch=0,
                        base_sequence=0, is_transactional=True)
            + build_batch([SimpleRecord(b"b", b"2", 0)], base_offset=1, producer_id=pid_b, producer_epoch=0,
                          base_sequence=0, is_transactional=True)
            + build_control_batch(ControlRecordType.ABORT, pid_a, 0, 0, 0, base_offset=2)
            + build_control_batch(ControlRecordType.COMMIT, pid_b, 0, 0, 0, base_offset=3)
            + build_batch([SimpleRecord(b"c", b"3", 0)], base_offset=4))
    committed = ColumnBuilder("t", 0, False, 0)
    committed.add_fetch(data, 10, aborted=[(0, pid_a)], read_committed=True)
    assert committed.record_batch().column("value").to_pylist() == [b"2", b"3"]
    assert committed.next_offset == 5
    dirty = ColumnBuilder("t", 0, False, 0)
    dirty.add_fetch(data, 10, aborted=[(0, pid_a)], read_committed=False)
    assert dirty.record_batch().column("value").to_pylist() == [b"1", b"2", b"3"]


def test_corrupt_record_section_raises():
    data = bytearray(build_batch([SimpleRecord(b"k", b"v" * 10, 0)] * 3))
    data[-5] ^= 0xFF  # inside the records: the CRC catches it
    with pytest.raises(CorruptRecordBatch):
        ColumnBuilder("t", 0, False, 0).add_fetch(bytes(data), 10)
