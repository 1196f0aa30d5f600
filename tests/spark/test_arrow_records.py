"""kavka.spark.arrow_records against Kavka's own record decoder: the Arrow
columns hold exactly the records of [start, end), aborted transactions and
control batches left out, and corrupt input raises. Both decoding paths
(the C extension ``kavka.spark._recordcols`` and the aiokafka fallback)
are run and compared; the C one is fuzzed with random and mutated records
sections against ``kavka.protocol.records``."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.records import Compression, SimpleRecord, build_batch, iter_batches, iter_records
from kavka.protocol.records.batch import HEADER_SIZE, CorruptRecordBatch, TimestampType, write_crc
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.spark import arrow_records
from kavka.spark.arrow_records import ColumnBuilder
from kavka.spark.schema import arrow_schema

pytestmark = pytest.mark.spark

blobs = st.one_of(st.none(), st.binary(max_size=300))
header_keys = st.text(max_size=5)
records = st.builds(SimpleRecord, blobs, blobs, st.integers(-2**41, 2**41),
                    st.lists(st.tuples(header_keys, st.one_of(st.none(), st.binary(max_size=8))),
                             max_size=3).map(tuple))
batches = st.lists(st.tuples(st.lists(records, min_size=1, max_size=30), st.sampled_from(list(Compression)),
                             st.booleans()), min_size=1, max_size=5)

native_only = pytest.mark.skipif(not arrow_records.NATIVE, reason="kavka.spark._recordcols is not built here")


def test_the_extension_is_built_wherever_a_compiler_is():
    # setup.py builds it with optional=True (an install without gcc still
    # works); where a compiler and Python's headers exist — every machine
    # make test runs on — a failed build must not hide behind the skips above.
    import shutil
    import sysconfig
    from pathlib import Path
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if shutil.which("gcc") is None or not headers.exists():
        pytest.skip("no C compiler or Python headers: the Python fallback is the path in use")
    assert arrow_records.NATIVE, "kavka.spark._recordcols failed to build: run pip install -e . and read its output"


both_paths = pytest.mark.parametrize("native", [pytest.param(True, marks=native_only, id="native"),
                                                 pytest.param(False, id="aiokafka")])


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


def _rows(rb: pa.RecordBatch, with_headers: bool):
    return list(zip(rb.column("key").to_pylist(), rb.column("value").to_pylist(), rb.column("offset").to_pylist(),
                    [us // 1000 for us in rb.column("timestamp").cast(pa.int64()).to_pylist()],
                    rb.column("timestampType").to_pylist(),
                    rb.column("headers").to_pylist() if with_headers else [None] * rb.num_rows, strict=True))


def _read(data: bytes, start: int, end: int, with_headers: bool, native: bool) -> pa.RecordBatch:
    b = ColumnBuilder("topic-a", 3, with_headers, start, native=native)
    b.add_fetch(data, end)
    rb = b.record_batch()
    rb.validate(full=True)
    return rb


@both_paths
@settings(max_examples=40, deadline=None)
@given(spec=batches, start=st.integers(0, 40), length=st.integers(0, 200), with_headers=st.booleans())
def test_columns_equal_the_reference_decoder(native, spec, start, length, with_headers):
    data = _log(spec)
    end = start + length
    b = ColumnBuilder("topic-a", 3, with_headers, start, native=native)
    b.add_fetch(data, end)
    rb = b.record_batch()
    rb.validate(full=True)
    assert rb.schema.equals(arrow_schema(with_headers))
    got = _rows(rb, with_headers)
    want = _expected(data, start, end)
    assert [g[:5] for g in got] == [w[:5] for w in want]
    if with_headers:
        assert [g[5] for g in got] == [w[5] for w in want]
    assert set(rb.column("topic").to_pylist()) <= {"topic-a"} and set(rb.column("partition").to_pylist()) <= {3}
    total = sum(len(r) for r, _, _ in spec)
    assert b.next_offset == min(max(start, total), end) or b.next_offset == min(total, end)


@native_only
@settings(max_examples=40, deadline=None)
@given(spec=batches, start=st.integers(0, 40), length=st.integers(0, 200), with_headers=st.booleans())
def test_native_batches_equal_the_aiokafka_path(spec, start, length, with_headers):
    data = _log(spec)
    native = _read(data, start, start + length, with_headers, True)
    fallback = _read(data, start, start + length, with_headers, False)
    assert native.equals(fallback)


@both_paths
def test_aborted_transactions_and_markers_are_left_out_under_read_committed(native):
    pid_a, pid_b = 7, 8
    data = (build_batch([SimpleRecord(b"a", b"1", 0)], base_offset=0, producer_id=pid_a, producer_epoch=0,
                        base_sequence=0, is_transactional=True)
            + build_batch([SimpleRecord(b"b", b"2", 0)], base_offset=1, producer_id=pid_b, producer_epoch=0,
                          base_sequence=0, is_transactional=True)
            + build_control_batch(ControlRecordType.ABORT, pid_a, 0, 0, 0, base_offset=2)
            + build_control_batch(ControlRecordType.COMMIT, pid_b, 0, 0, 0, base_offset=3)
            + build_batch([SimpleRecord(b"c", b"3", 0)], base_offset=4))
    committed = ColumnBuilder("t", 0, False, 0, native=native)
    committed.add_fetch(data, 10, aborted=[(0, pid_a)], read_committed=True)
    assert committed.record_batch().column("value").to_pylist() == [b"2", b"3"]
    assert committed.next_offset == 5
    dirty = ColumnBuilder("t", 0, True, 0, native=native)
    dirty.add_fetch(data, 10, aborted=[(0, pid_a)], read_committed=False)
    assert dirty.record_batch().column("value").to_pylist() == [b"1", b"2", b"3"]


@both_paths
def test_corrupt_record_section_raises(native):
    data = bytearray(build_batch([SimpleRecord(b"k", b"v" * 10, 0)] * 3))
    data[-5] ^= 0xFF  # inside the records: the CRC catches it
    with pytest.raises(CorruptRecordBatch):
        ColumnBuilder("t", 0, False, 0, native=native).add_fetch(bytes(data), 10)


# --- the C decoder on damaged records sections (CRC recomputed, so only the
# records' own checks stand between the bytes and the columns) ---

def _reframe(template: bytes, section: bytes, count: int, last_offset_delta: int, log_append: bool) -> bytes:
    """A batch with ``template``'s header around ``section``: length, record
    count, last offset delta, timestamp type and CRC rewritten."""
    out = bytearray(template[:HEADER_SIZE]) + section
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, 0x08 if log_append else 0)
    struct.pack_into(">i", out, 23, last_offset_delta)
    struct.pack_into(">i", out, 57, count)
    write_crc(out)
    return bytes(out)


_TEMPLATE = build_batch([SimpleRecord(b"k", b"v", 1_600_000_000_000)], base_offset=0)


def _agrees_with_reference(batch: bytes, with_headers: bool) -> None:
    try:
        want = _expected(batch, 0, 2**40)
    except CorruptRecordBatch:
        want = None
    b = ColumnBuilder("t", 0, with_headers, 0, native=True)
    if want is None:
        with pytest.raises(CorruptRecordBatch):
            b.add_fetch(batch, 2**40)
        assert len(b) == 0  # nothing of the failed batch was kept
        return
    b.add_fetch(batch, 2**40)
    rb = b.record_batch()
    rb.validate(full=True)
    got = _rows(rb, with_headers)
    assert [g[:5] for g in got] == [w[:5] for w in want]
    if with_headers:
        assert [g[5] for g in got] == [w[5] for w in want]


@native_only
@settings(max_examples=300, deadline=None)
@given(section=st.binary(max_size=120), count=st.integers(0, 20), last_delta=st.integers(0, 30),
       log_append=st.booleans(), with_headers=st.booleans())
def test_native_random_sections_raise_or_match_the_reference(section, count, last_delta, log_append, with_headers):
    _agrees_with_reference(_reframe(_TEMPLATE, section, count, last_delta, log_append), with_headers)


edits = st.lists(st.tuples(st.sampled_from(["set", "insert", "delete"]), st.integers(0, 10_000),
                           st.integers(0, 255)), min_size=1, max_size=4)


@native_only
@settings(max_examples=300, deadline=None)
@given(recs=st.lists(records, min_size=1, max_size=6), edits=edits, count_change=st.sampled_from([0, 0, 0, -1, 1]),
       cut=st.one_of(st.none(), st.integers(0, 2000)), with_headers=st.booleans())
def test_native_mutated_sections_raise_or_match_the_reference(recs, edits, count_change, cut, with_headers):
    valid = build_batch(recs, base_offset=0)
    section = bytearray(valid[HEADER_SIZE:])
    for op, at, byte in edits:
        at %= len(section) + 1
        if op == "insert":
            section.insert(at, byte)
        elif at < len(section):
            if op == "set":
                section[at] = byte
            else:
                del section[at]
    if cut is not None:
        del section[cut:]
    count = max(len(recs) + count_change, 0)
    _agrees_with_reference(_reframe(valid, bytes(section), count, len(recs) - 1, False), with_headers)


@native_only
def test_native_failed_batch_leaves_the_columns_as_they_were():
    good = build_batch([SimpleRecord(None, b"a", 5, (("h", None),))], base_offset=0)
    bad = bytearray(build_batch([SimpleRecord(b"k", b"b", 5, (("h", b"v"),))] * 2, base_offset=1))
    bad = _reframe(bytes(bad), bytes(bad[HEADER_SIZE:-1]), 2, 1, False)  # last record cut short
    b = ColumnBuilder("t", 0, True, 0, native=True)
    b.add_fetch(good, 10)
    with pytest.raises(CorruptRecordBatch, match="batch at offset 1"):
        b.add_fetch(bad, 10)
    rb = b.record_batch()
    rb.validate(full=True)
    assert _rows(rb, True) == [(None, b"a", 0, 5, 0, [{"key": "h", "value": None}])]


@native_only
@pytest.mark.parametrize("section, problem", [
    (b"\x10\x00\x00\x00\x01\x01\x00\x00\x00", "record declares 8 bytes but its fields take 6"),
    (b"\x0e\x00\x00\x00\x01\x01\x00", "record declares 7 bytes but only 6 remain"),
    (b"\x0c\x00\x00\x00\x03\x01\x00", "record key length -2 is negative"),
    (b"\x12\x00\x00\x00\x01\x01\x02\x02\xff\x01", "record header key is not UTF-8"),
    (b"\x10\x00\x00\xff\xff\xff\xff\xff\x01", "record offset delta longer than 5 bytes"),
    (b"\x16" + b"\x00" + b"\xff" * 9 + b"\x02", "record timestamp delta does not fit 64 bits"),
])
def test_native_errors_name_the_problem(section, problem):
    with pytest.raises(CorruptRecordBatch, match=problem):
        ColumnBuilder("t", 0, True, 0, native=True).add_fetch(_reframe(_TEMPLATE, section, 1, 0, False), 10)


def test_without_the_extension_the_aiokafka_path_is_used(monkeypatch):
    monkeypatch.setattr(arrow_records, "NATIVE", False)
    with pytest.raises(RuntimeError, match="_recordcols is not built"):
        ColumnBuilder("t", 0, False, 0, native=True)
    b = ColumnBuilder("t", 0, False, 0)
    b.add_fetch(build_batch([SimpleRecord(b"k", b"v", 1)], base_offset=0), 10)
    assert isinstance(b._columns, arrow_records._ListColumns)
    assert b.record_batch().column("value").to_pylist() == [b"v"]


@native_only
def test_native_batches_own_their_buffers():
    # take() hands its buffers to the arrays instead of copying them: each
    # batch stays intact while the builder goes on filling new buffers (of
    # other sizes, with and without nulls), and after the builder is gone.
    import gc

    fetches = [[SimpleRecord(None, b"x" * 50, 7, (("h", None),))] * 3,
               [SimpleRecord(b"k%d" % i, None if i % 2 else b"v" * i, 9, ()) for i in range(200)],
               [],
               [SimpleRecord(b"", b"", 11, (("a", b"b"),))]]
    b = ColumnBuilder("t", 0, True, 0, native=True)
    kept, want, offset = [], [], 0
    for recs in fetches:
        if recs:
            data = build_batch(recs, base_offset=offset)
            want.append(_expected(data, 0, 2**40))
            b.add_fetch(data, 2**40)
            offset += len(recs)
        else:
            want.append([])
        kept.append(b.record_batch())
    del b
    gc.collect()
    for rb, w in zip(kept, want, strict=True):
        rb.validate(full=True)
        assert _rows(rb, True) == [(k, v, o, ts, tt, h) for k, v, o, ts, tt, h in w]


def _large_fetch(offset: int, n: int, tag: int) -> bytes:
    """``n`` records whose values (1 KiB each, ``tag`` in every byte of
    the first) make buffers large enough for the decoder to keep their
    blocks for later batches (_recordcols' spares, 64 KiB and up)."""
    return build_batch([SimpleRecord(b"k%d" % i, bytes([tag % 256]) * 1024, 5, ()) for i in range(n)],
                       base_offset=offset)


@native_only
@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(60, 400), st.booleans()), min_size=1, max_size=12))
def test_native_blocks_used_again_never_reach_a_batch_still_held(steps):
    """The memory of a batch Spark is done with goes to the next ones; a
    batch still held keeps its bytes, whatever is decoded after it."""
    import gc

    b = ColumnBuilder("t", 0, False, 0, native=True)
    held, offset = [], 0
    for tag, (n, keep) in enumerate(steps):
        data = _large_fetch(offset, n, tag)
        b.add_fetch(data, 2**40)
        rb = b.record_batch()
        want = _expected(data, 0, 2**40)
        offset += n
        if keep:
            held.append((rb, want))
        del rb
        gc.collect()
        for kept, w in held:
            assert _rows(kept, False) == [(k, v, o, ts, tt, None) for k, v, o, ts, tt, _h in w]
    for kept, _w in held:
        kept.validate(full=True)
