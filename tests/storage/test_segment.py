"""LogSegment on real files: Kafka's layout decoded by hand, reads, lookups,
recovery, truncation, roll conditions, suffix renames."""

from __future__ import annotations

import os
import struct

import pytest

from kavka.common.clock import ManualClock
from kavka.protocol.records.batch import iter_batches
from kavka.storage.segment import LogSegment

from .conftest import T0, make_batch, small_config


def seg_with(tmp_path, n=10, base=100, **cfg):
    clock = ManualClock(T0)
    seg = LogSegment(tmp_path, base, small_config(**cfg), clock)
    off = base
    for i in range(n):
        b = bytearray(make_batch(3, ts=T0 + 10 * i))
        struct.pack_into(">q", b, 0, off)
        seg.append(off + 2, T0 + 10 * i + 2, off + 2, [bytes(b)])
        off += 3
    return seg, clock


def test_layout_decoded_by_hand(tmp_path):
    seg, _ = seg_with(tmp_path, n=2, base=100, **{"index.interval.bytes": 0})
    seg.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000100.index",
        "00000000000000000100.log",
        "00000000000000000100.timeindex",
    ]
    data = (tmp_path / "00000000000000000100.log").read_bytes()
    # first batch header, field by field (big-endian)
    base_offset, batch_length, epoch, magic, crc = struct.unpack_from(">qiibI", data, 0)
    attributes, last_delta, first_ts, max_ts, pid, pepoch, seq, count = struct.unpack_from(">hiqqqhii", data, 21)
    assert (base_offset, magic, last_delta, count) == (100, 2, 2, 3)
    assert (first_ts, max_ts, pid, pepoch, seq, attributes) == (T0, T0 + 2, -1, -1, -1, 0)
    assert batch_length + 12 == len(data) // 2
    # offset index: (relative offset, position); time index: (timestamp, relative offset)
    idx = (tmp_path / "00000000000000000100.index").read_bytes()
    assert [struct.unpack_from(">ii", idx, i) for i in range(0, len(idx), 8)] == [(5, batch_length + 12)]
    tidx = (tmp_path / "00000000000000000100.timeindex").read_bytes()
    assert [struct.unpack_from(">qi", tidx, i) for i in range(0, len(tidx), 12)] == [(T0 + 12, 5)]


def test_translate_and_read_with_position_limit(tmp_path):
    seg, _ = seg_with(tmp_path)
    for target in range(100, 130):
        pos, header = seg.translate_offset(target)
        assert header.base_offset <= target <= header.last_offset
    assert seg.translate_offset(130) is None
    assert seg.read(130, 1000) is None
    whole = seg.read(100, 10**6)
    assert len(list(iter_batches(whole.records))) == 10
    third = seg.translate_offset(106)[0]
    limited = seg.read(100, 10**6, max_position=third)
    assert [h.base_offset for _p, h in iter_batches(limited.records)] == [100, 103]
    seg.close()


@pytest.mark.parametrize("interval, value_bytes, windows", [
    # small batches, an index entry every few: the tail after it is read at once
    (300, (10, 47, 84, 121, 158), (1, 60, 200, 333, 1000, 2500, 10**6)),
    # large batches, no index entry in reach: the tail is walked batch by batch
    (10**7, (9000, 17000, 26000, 31000, 40000), (1, 70_000, 100_000, 250_000, 10**6)),
])
def test_read_returns_the_whole_batches_that_fit_whatever_the_window(tmp_path, interval, value_bytes, windows):
    # Batches of different sizes: a window of any size from any offset holds
    # exactly the batches that fit whole (found from the last indexed batch
    # in the window, then read at that exact length).
    clock = ManualClock(T0)
    config = small_config(**{"segment.bytes": 1 << 24, "index.interval.bytes": interval,
                             "max.message.bytes": 1 << 20})
    seg = LogSegment(tmp_path, 0, config, clock)
    off, starts = 0, []
    for i in range(40):
        b = bytearray(make_batch(1 + i % 4, value=os.urandom(value_bytes[i % 5])))
        struct.pack_into(">q", b, 0, off)
        count = 1 + i % 4
        starts.append((off, seg.log.size, len(b)))
        seg.append(off + count - 1, T0 + count - 1, off + count - 1, [bytes(b)])
        off += count
    assert (seg.offset_index.entries > 5) == (interval < 1000)
    for first, position, _size in starts[::3]:
        for max_size in windows:
            got = seg.read(first, max_size, min_one_message=False).records
            fitting = [s for o, p, s in starts if p >= position and p + s - position <= max_size]
            expected = 0
            for s in fitting:  # contiguous from the start
                expected += s
            assert len(got) == expected, (first, max_size)
            assert [h.base_offset for _p, h in iter_batches(got)] == [o for o, p, s in starts
                                                                      if position <= p < position + expected]


def test_recover_rebuilds_identical_indexes_and_truncates_garbage(tmp_path):
    seg, clock = seg_with(tmp_path, n=20)
    entries = seg.offset_index.entries_list(), seg.time_index.entries_list()
    with open(seg.log.path, "ab") as f:
        f.write(b"\x00" * 30)
    seg.close_quietly()
    again = LogSegment(tmp_path, 100, small_config(), clock)
    assert again.recover() == 30
    assert (again.offset_index.entries_list(), again.time_index.entries_list()[: len(entries[1])]) == entries
    assert again.read_next_offset() == 160
    again.close()


def test_truncate_to_mid_batch_cuts_from_its_start(tmp_path):
    seg, _ = seg_with(tmp_path, n=10)
    removed, cut_base = seg.truncate_to(110)
    assert cut_base == 109 and removed > 0
    assert seg.read_next_offset() == 109
    assert all(e.offset < 109 for e in seg.offset_index.entries_list())
    assert seg.max_timestamp_so_far.offset < 109
    assert seg.truncate_to(500) == (0, None)
    seg.close()


def test_roll_conditions(tmp_path):
    seg, clock = seg_with(tmp_path, n=3, **{"segment.bytes": 10_000, "segment.ms": 1000})
    cfg = small_config(**{"segment.bytes": 10_000, "segment.ms": 1000})
    kw = dict(messages_size=100, max_timestamp=T0 + 30, max_offset=120, now_ms=clock.now_ms)
    assert not seg.should_roll(cfg, **kw)
    assert seg.should_roll(cfg, **{**kw, "messages_size": 10_000 - seg.size + 1})  # size
    assert not seg.should_roll(cfg, **{**kw, "max_timestamp": T0 + 1002})  # first batch max ts is T0+2
    assert seg.should_roll(cfg, **{**kw, "max_timestamp": T0 + 1003})  # age by record time
    assert seg.should_roll(cfg, **{**kw, "max_offset": 100 + 2**31})  # relative offset overflow
    seg.close()


def test_largest_timestamp_and_suffix_rename(tmp_path):
    seg, _ = seg_with(tmp_path, n=4)
    assert seg.largest_timestamp() == T0 + 32
    seg.change_suffix(".deleted")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00000000000000000100.index.deleted",
        "00000000000000000100.log.deleted",
        "00000000000000000100.timeindex.deleted",
    ]
    seg.delete_files()
    assert list(tmp_path.iterdir()) == []
