"""Log: append as leader/follower, read, roll, truncate, log start offset."""

from __future__ import annotations

import os
import struct

import pytest

from kavka.protocol.records.batch import LOG_OVERHEAD, iter_batches, parse_header, validate_batch
from kavka.protocol.records.reader import iter_records
from kavka.storage.errors import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    UnexpectedAppendOffsetError,
)
from kavka.storage.index.index_file import IndexFile
from kavka.storage.log import Log

from .conftest import T0, make_batch, read_all, scan_dir, small_config


def test_leader_append_assigns_offsets_and_stamps_epoch(log_dir, clock):
    log = Log(log_dir, small_config(), clock=clock)
    original = make_batch(3)
    info = log.append_as_leader(original, leader_epoch=7)
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 2, 3)
    assert info.max_timestamp == T0 + 2 and info.offset_of_max_timestamp == 2
    assert info.log_append_time == -1 and info.log_start_offset == 0
    info2 = log.append_as_leader(make_batch(2), leader_epoch=7)
    assert (info2.first_offset, info2.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    stored = log.read(3, 10_000).records
    header = validate_batch(stored)  # CRC still valid after patching
    assert header.base_offset == 3 and header.partition_leader_epoch == 7
    assert [r.offset for r in iter_records(stored)] == [3, 4]
    # the on-disk bytes are the wire bytes with only base offset / epoch changed
    on_disk = scan_dir(log_dir)[0][2]
    assert on_disk[16:] == original[16:] and struct.unpack(">q", on_disk[:8])[0] == 0
    assert log.leader_epoch_cache.entries()[0].epoch == 7
    log.close()


def test_validation_errors_carry_kafka_codes(log_dir, clock):
    log = Log(log_dir, small_config(**{"max.message.bytes": 200}), clock=clock)
    with pytest.raises(MessageTooLargeError) as e:
        log.append_as_leader(make_batch(10), 1)
    assert e.value.code.name == "MESSAGE_TOO_LARGE" and "max.message.bytes=200" in str(e.value)
    bad = bytearray(make_batch(1))
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptMessageError) as e:
        log.append_as_leader(bytes(bad), 1)
    assert e.value.code.name == "CORRUPT_MESSAGE"
    with pytest.raises(CorruptMessageError):
        log.append_as_leader(make_batch(1)[:-3], 1)  # partial batch
    magic1 = bytearray(make_batch(1))
    magic1[16] = 1
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(bytes(magic1), 1)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(b"", 1)
    assert log.log_end_offset == 0 and log.size_in_bytes() == 0  # nothing written
    log.close()


def test_record_list_larger_than_a_segment(log_dir, clock):
    log = Log(log_dir, small_config(**{"segment.bytes": 300}), clock=clock)
    with pytest.raises(RecordListTooLargeError):
        log.append_as_leader(make_batch(3) * 3, 1)
    log.close()


def test_create_time_difference_is_enforced(log_dir, clock):
    log = Log(log_dir, small_config(**{"message.timestamp.difference.max.ms": 1000}), clock=clock)
    with pytest.raises(InvalidTimestampError) as e:
        log.append_as_leader(make_batch(1, ts=T0 - 5000), 1)
    assert e.value.code.name == "INVALID_TIMESTAMP"
    log.append_as_leader(make_batch(1, ts=T0 - 500), 1)
    log.close()


def test_log_append_time_rewrites_timestamp_and_crc(log_dir, clock):
    log = Log(log_dir, small_config(**{"message.timestamp.type": "LogAppendTime"}), clock=clock)
    clock.advance(12345)
    info = log.append_as_leader(make_batch(2, ts=5), 3)
    assert info.log_append_time == clock.now_ms == info.max_timestamp
    stored = log.read(0, 10_000).records
    header = validate_batch(stored)
    assert header.timestamp_type.name == "LOG_APPEND_TIME" and header.max_timestamp == clock.now_ms
    assert {r.timestamp for r in iter_records(stored)} == {clock.now_ms}
    log.close()


def test_read_returns_whole_batches_from_the_containing_one(log_dir, clock):
    log = Log(log_dir, small_config(**{"segment.bytes": 100_000}), clock=clock)
    for _ in range(20):
        log.append_as_leader(make_batch(5), 1)
    one = len(make_batch(5))
    info = log.read(12, 2 * one + 10)
    batches = [h for _p, h in iter_batches(info.records)]
    assert [h.base_offset for h in batches] == [10, 15]  # starts at the batch holding 12
    assert len(info.records) == 2 * one
    # a limit smaller than one batch: min_one_message gives the whole first batch
    assert len(log.read(12, 10).records) == one
    small = log.read(12, 10, min_one_message=False)
    assert small.records == b"" and small.first_entry_incomplete
    # max_offset (high watermark) excludes batches reaching it
    hw = log.read(0, 1 << 20, max_offset=17)
    assert [h.base_offset for _p, h in iter_batches(hw.records)] == [0, 5, 10]
    assert log.read(100, 100).records == b""  # at LEO: empty
    with pytest.raises(OffsetOutOfRangeError) as e:
        log.read(101, 100)
    assert e.value.code.name == "OFFSET_OUT_OF_RANGE"
    log.close()


def test_roll_by_size_and_reads_across_segments(log_dir, clock):
    cfg = small_config(**{"segment.bytes": 1000})
    log = Log(log_dir, cfg, clock=clock)
    for _ in range(30):
        log.append_as_leader(make_batch(2), 1)
    segs = log.segments()
    assert len(segs) > 3
    assert all(s.size <= 1000 for s in segs)
    assert [s.base_offset for s in segs] == sorted({s.base_offset for s in segs})
    assert [h.base_offset for h, _b in read_all(log, 300)] == list(range(0, 60, 2))
    names = sorted(p.name for p in log_dir.iterdir())
    assert f"{segs[1].base_offset:020d}.log" in names and f"{segs[1].base_offset:020d}.timeindex" in names
    # rolled segments' indexes are trimmed, the active one preallocated
    assert segs[0].offset_index.path.stat().st_size == 8 * segs[0].offset_index.entries
    assert segs[-1].offset_index.path.stat().st_size == cfg.segment_index_bytes - cfg.segment_index_bytes % 8
    log.close()


def test_roll_by_segment_ms_with_record_time(log_dir, clock):
    log = Log(log_dir, small_config(**{"segment.ms": 1000, "segment.bytes": 1 << 20}), clock=clock)
    log.append_as_leader(make_batch(1, ts=T0), 1)
    log.append_as_leader(make_batch(1, ts=T0 + 500), 1)
    assert len(log.segments()) == 1
    log.append_as_leader(make_batch(1, ts=T0 + 1500), 1)
    assert [s.base_offset for s in log.segments()] == [0, 2]
    log.close()


def test_roll_when_index_full(log_dir, clock):
    log = Log(log_dir, small_config(**{"segment.index.bytes": 24, "index.interval.bytes": 0}), clock=clock)
    for _ in range(10):
        log.append_as_leader(make_batch(1), 1)
    assert len(log.segments()) > 2
    assert [h.base_offset for h, _ in read_all(log)] == list(range(10))
    log.close()


def test_follower_append_keeps_offsets_and_rejects_going_back(log_dir, clock, tmp_path):
    log = Log(log_dir, small_config(), clock=clock)
    b1 = make_batch(3, base_offset=0, partition_leader_epoch=2)
    b2 = make_batch(2, base_offset=10, partition_leader_epoch=4)  # a gap, as after compaction
    info = log.append_as_follower(b1 + b2 + b2[:20])  # trailing partial batch ignored
    assert (info.first_offset, info.last_offset, info.batch_count) == (0, 11, 2)
    assert log.log_end_offset == 12
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries()] == [(2, 0), (4, 10)]
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(make_batch(1, base_offset=11))
    assert log.read(5, 1000).records[:8] == struct.pack(">q", 10)
    log.close()


def test_follower_append_across_int32_relative_offsets_rolls(log_dir, clock):
    log = Log(log_dir, small_config(**{"segment.bytes": 1 << 20}), clock=clock)
    far = 2**31 + 100
    log.append_as_follower(make_batch(1, base_offset=0) + make_batch(1, base_offset=far))
    assert [s.base_offset for s in log.segments()] == [0, far]
    assert log.log_end_offset == far + 1
    log.close()


def test_truncate_to_within_and_across_segments(log_dir, clock):
    log = Log(log_dir, small_config(**{"segment.bytes": 600}), clock=clock)
    for _ in range(20):
        log.append_as_leader(make_batch(2), 1)
    log.leader_epoch_cache.assign(5, 30)
    assert log.truncate_to(31)  # mid-batch: the batch [30, 31] goes entirely
    assert log.log_end_offset == 30
    assert log.leader_epoch_cache.latest_epoch() == 1
    assert log.truncate_to(9)
    assert log.log_end_offset == 8
    assert [h.base_offset for h, _ in read_all(log)] == [0, 2, 4, 6]
    assert not log.truncate_to(50)
    info = log.append_as_leader(make_batch(1), 3)
    assert info.first_offset == 8
    log.close()
    reopened = Log(log_dir, small_config(**{"segment.bytes": 600}), clock=clock, had_clean_shutdown=True)
    assert reopened.log_end_offset == 9
    assert [h.base_offset for h, _ in read_all(reopened)] == [0, 2, 4, 6, 8]
    reopened.close()


def test_truncate_to_the_log_end_drops_an_epoch_that_starts_there(log_dir, clock):
    """A leader that wrote nothing in its epoch: the entry at the log end
    goes, the records stay (Kafka's UnifiedLog.truncateTo)."""
    log = Log(log_dir, small_config(), clock=clock)
    log.append_as_leader(make_batch(3), 1)
    log.leader_epoch_cache.assign(4, 3)
    assert not log.truncate_to(3) and not log.truncate_to(10)
    assert log.log_end_offset == 3
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries()] == [(1, 0)]
    log.close()


def test_truncate_fully_and_start_at(log_dir, clock):
    log = Log(log_dir, small_config(), clock=clock)
    for _ in range(5):
        log.append_as_leader(make_batch(2), 1)
    log.truncate_fully_and_start_at(1000)
    assert (log.log_start_offset, log.log_end_offset) == (1000, 1000)
    assert [s.base_offset for s in log.segments()] == [1000]
    assert log.leader_epoch_cache.entries() == []
    assert log.append_as_leader(make_batch(1), 2).first_offset == 1000
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)
    log.close()
    assert sorted(p.name for p in log_dir.glob("*.log")) == [f"{1000:020d}.log"]


def test_delete_records_before_moves_start_and_drops_whole_segments(log_dir, clock):
    log = Log(log_dir, small_config(**{"segment.bytes": 600}), clock=clock)
    for _ in range(20):
        log.append_as_leader(make_batch(2), 1)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(10)  # above the high watermark (0)
    log.update_high_watermark(log.log_end_offset)
    second = log.segments()[1].base_offset
    assert log.delete_records_before(second + 1) == second + 1
    assert log.segments()[0].base_offset == second
    with pytest.raises(OffsetOutOfRangeError):
        log.read(second, 100)
    assert parse_header(log.read(second + 1, 100).records).base_offset == second  # containing batch
    log.close()


def test_read_bound_by_max_offset_in_earlier_segment(log_dir, clock):
    log = Log(log_dir, small_config(**{"segment.bytes": 600}), clock=clock)
    for _ in range(20):
        log.append_as_leader(make_batch(2), 1)
    got = log.read(0, 1 << 20, max_offset=4)
    assert [h.base_offset for _p, h in iter_batches(got.records)] == [0, 2]
    assert log.read(4, 1 << 20, max_offset=4).records == b""
    log.close()


def test_end_offset_for_epoch_through_log(log_dir, clock):
    log = Log(log_dir, small_config(), clock=clock)
    log.append_as_leader(make_batch(2), 1)
    log.append_as_leader(make_batch(2), 3)
    assert log.end_offset_for_epoch(1) == (1, 2)
    assert log.end_offset_for_epoch(2) == (1, 2)
    assert log.end_offset_for_epoch(3) == (3, 4)
    assert log.end_offset_for_epoch(0) == (0, 0)
    assert log.end_offset_for_epoch(4) == (-1, -1)
    log.close()
    assert LOG_OVERHEAD == 12


def test_flush_writes_the_pending_index_entries_before_it_fsyncs(log_dir, clock, monkeypatch):
    """Index entries are held in memory and written in batches
    (kavka.storage.index.index_file); a flush writes them under the log's
    lock before its fsyncs, which run outside it."""
    cfg = small_config(**{"index.interval.bytes": 0, "segment.bytes": 1 << 20, "segment.index.bytes": 4096})
    log = Log(log_dir, cfg, clock=clock)
    for _ in range(5):
        log.append_as_leader(make_batch(1), 1)
    index = log.active_segment.offset_index
    assert index.pending_entries == 4  # the first append indexes nothing
    order = []
    real_fsync, real_write = os.fsync, IndexFile.write_pending
    monkeypatch.setattr(os, "fsync", lambda fd: (order.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(IndexFile, "write_pending", lambda self: (order.append("write"), real_write(self))[1])
    assert log.flush()
    assert order[0] == "write" and "fsync" in order
    raw = index.path.read_bytes()
    assert [struct.unpack_from(">i", raw, 8 * i)[0] for i in range(4)] == [1, 2, 3, 4]
    log.close()
