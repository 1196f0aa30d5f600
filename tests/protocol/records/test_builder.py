"""Building batches and the cleaner's rebuild of a batch's survivors."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.records import (
    Compression,
    SimpleRecord,
    TimestampType,
    build_batch,
    decode_batch,
    rebuild_batch,
    validate_batch,
)

from .strategies import record_lists

RECORDS = [SimpleRecord(b"k%d" % (i % 3), b"v%d" % i, 1_000 + 10 * i) for i in range(6)]


def test_log_append_time_is_what_readers_see():
    raw = build_batch(RECORDS, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=9_999)
    header, records = decode_batch(raw)
    assert header.max_timestamp == 9_999
    assert header.base_timestamp == 1_000
    assert [r.timestamp for r in records] == [9_999] * 6
    assert [r.timestamp_delta for r in records] == [10 * i for i in range(6)]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"timestamp_type": TimestampType.LOG_APPEND_TIME}, "needs log_append_time"),
        ({"log_append_time": 5}, "only meaningful"),
        ({"is_transactional": True}, "needs a producer id"),
        ({"producer_epoch": 1 << 15}, "producer_epoch"),
        ({"base_sequence": 1 << 31}, "base_sequence"),
        ({"base_offset": 2**63 - 3}, "base offset \\+ last offset delta"),
        ({"partition_leader_epoch": -(2**31) - 1}, "partition_leader_epoch"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_batch(RECORDS, **kwargs)


def test_an_empty_batch_is_refused():
    with pytest.raises(ValueError, match="at least one record"):
        build_batch([])


def test_records_come_from_any_iterable():
    raw = build_batch(r for r in RECORDS)
    assert validate_batch(raw).record_count == 6


# -- rebuild_batch (log cleaner) ------------------------------------------------


def _original(codec=Compression.NONE, **kwargs):
    return build_batch(
        RECORDS,
        base_offset=500,
        compression=codec,
        producer_id=77,
        producer_epoch=4,
        base_sequence=30,
        is_transactional=True,
        partition_leader_epoch=9,
        **kwargs,
    )


@pytest.mark.parametrize("codec", list(Compression))
def test_rebuild_keeps_offsets_producer_state_and_codec(codec):
    header, records = decode_batch(_original(codec))
    survivors = [records[1], records[4]]  # the last record is gone too
    rebuilt_header, rebuilt = decode_batch(rebuild_batch(header, survivors))
    assert [r.offset for r in rebuilt] == [501, 504]
    assert [r.to_simple() for r in rebuilt] == [r.to_simple() for r in survivors]
    assert rebuilt_header.base_offset == 500
    assert rebuilt_header.last_offset == header.last_offset == 505
    assert rebuilt_header.last_sequence == header.last_sequence == 35
    assert rebuilt_header.record_count == 2
    assert rebuilt_header.compression is codec
    for field in ("producer_id", "producer_epoch", "base_sequence", "partition_leader_epoch"):
        assert getattr(rebuilt_header, field) == getattr(header, field)
    assert rebuilt_header.is_transactional and not rebuilt_header.is_control
    # CreateTime: the survivors' largest timestamp.
    assert rebuilt_header.max_timestamp == 1_040


def test_rebuild_keeps_log_append_time():
    header, records = decode_batch(_original(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=8_888))
    rebuilt_header, rebuilt = decode_batch(rebuild_batch(header, records[:2]))
    assert rebuilt_header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert rebuilt_header.max_timestamp == 8_888
    assert [r.timestamp for r in rebuilt] == [8_888, 8_888]


def test_rebuild_with_delete_horizon():
    header, records = decode_batch(_original())
    survivors = records[2:4]
    raw = rebuild_batch(header, survivors, delete_horizon=50_000)
    rebuilt_header, rebuilt = decode_batch(raw)
    assert rebuilt_header.has_delete_horizon
    assert rebuilt_header.attributes & 0x40
    assert rebuilt_header.base_timestamp == rebuilt_header.delete_horizon_ms == 50_000
    # Record timestamps survive: deltas are taken from the horizon.
    assert [r.timestamp for r in rebuilt] == [r.timestamp for r in survivors]
    # Keeping an existing horizon on a second pass.
    again_header, again = decode_batch(
        rebuild_batch(rebuilt_header, rebuilt[:1], delete_horizon=rebuilt_header.delete_horizon_ms)
    )
    assert again_header.delete_horizon_ms == 50_000
    assert again[0].timestamp == survivors[0].timestamp


def test_rebuild_with_no_survivors_keeps_an_empty_batch():
    header, _ = decode_batch(_original(Compression.ZSTD))
    raw = rebuild_batch(header, [])
    assert len(raw) == 61
    empty, records = decode_batch(raw)
    assert records == []
    assert (empty.base_offset, empty.last_offset, empty.record_count) == (500, 505, 0)
    assert empty.base_sequence == 30 and empty.last_sequence == 35
    assert empty.compression is Compression.NONE
    assert empty.base_timestamp == empty.max_timestamp == header.max_timestamp
    assert empty.is_transactional


def test_rebuild_refuses_records_from_elsewhere():
    header, records = decode_batch(_original())
    foreign = decode_batch(build_batch(RECORDS, base_offset=900))[1]
    with pytest.raises(ValueError, match="not after the previous one"):
        rebuild_batch(header, [foreign[0]])
    with pytest.raises(ValueError, match="not after the previous one"):
        rebuild_batch(header, [records[3], records[1]])


@settings(max_examples=40, deadline=None)
@given(record_lists, st.sampled_from(list(Compression)), st.data())
def test_rebuild_of_any_subset_round_trips(items, codec, data):
    header, records = decode_batch(build_batch(items, base_offset=10, compression=codec))
    keep = sorted(data.draw(st.sets(st.integers(0, len(records) - 1))))
    survivors = [records[i] for i in keep]
    rebuilt_header, rebuilt = decode_batch(rebuild_batch(header, survivors))
    assert [(r.offset, r.to_simple()) for r in rebuilt] == [(r.offset, r.to_simple()) for r in survivors]
    assert rebuilt_header.last_offset == header.last_offset
