"""Offset and time indexes: format decoded by hand, lookups against a linear
scan (hypothesis), preallocation, trimming, truncation, reopening."""

from __future__ import annotations

import errno
import mmap
import os
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.storage.index.offset_index import IndexOffsetError, OffsetIndex, OffsetPosition
from kavka.storage.index.time_index import TimeIndex, TimestampOffset

from ..conftest import STORAGE_SETTINGS


def test_offset_index_file_format_and_preallocation(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(path, 100, 1003)  # rounded down to 125 entries
    assert path.stat().st_size == 1000 and idx.max_entries == 125 and idx.entries == 0
    idx.append(105, 0)
    idx.append(130, 4200)
    raw = path.read_bytes()[:16]
    assert struct.unpack(">ii", raw[:8]) == (5, 0)  # relative offset, position
    assert struct.unpack(">ii", raw[8:]) == (30, 4200)
    idx.close()
    assert path.stat().st_size == 16  # trimmed on close
    again = OffsetIndex(path, 100, 1000)
    assert again.entries_list() == [OffsetPosition(105, 0), OffsetPosition(130, 4200)]
    again.close()


def test_time_index_file_format(tmp_path):
    path = tmp_path / "00000000000000000007.timeindex"
    idx = TimeIndex(path, 7, 120)
    assert idx.maybe_append(1000, 9)
    assert not idx.maybe_append(1000, 12)  # not larger: skipped
    assert idx.maybe_append(1500, 12)
    raw = path.read_bytes()[:24]
    assert struct.unpack(">qi", raw[:12]) == (1000, 2)
    assert struct.unpack(">qi", raw[12:]) == (1500, 5)
    with pytest.raises(IndexOffsetError):
        idx.maybe_append(900, 20)  # time index is monotonic
    idx.close()
    assert path.stat().st_size == 24


def test_offset_index_rejects_out_of_order(tmp_path):
    idx = OffsetIndex(tmp_path / "x.index", 0, 800)
    idx.append(10, 0)
    with pytest.raises(IndexOffsetError):
        idx.append(10, 100)
    with pytest.raises(IndexOffsetError):
        idx.append(2**31 + 5, 100)
    idx.close()


def test_preallocated_index_left_by_crash_counts_only_written_entries(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(path, 0, 800)
    for i in range(1, 6):
        idx.append(i * 10, i * 100)
    idx.close_quietly()  # no trim: a crash
    assert path.stat().st_size == 800
    again = OffsetIndex(path, 0, 800)
    assert again.entries == 5 and again.last_offset == 50
    again.close()


def test_truncation_zeroes_dropped_entries(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(path, 0, 800)
    for i in range(1, 6):
        idx.append(i * 10, i * 100)
    idx.truncate_to(30)
    assert [e.offset for e in idx.entries_list()] == [10, 20]
    idx.append(25, 250)
    idx.close_quietly()
    again = OffsetIndex(path, 0, 800)
    assert [e.offset for e in again.entries_list()] == [10, 20, 25]  # no stale 40, 50
    again.close()


offsets_strategy = st.lists(st.integers(0, 10_000), min_size=0, max_size=60, unique=True).map(sorted)


@STORAGE_SETTINGS
@given(offsets=offsets_strategy, targets=st.lists(st.integers(-5, 10_100), max_size=30))
def test_offset_lookup_agrees_with_linear_scan(tmp_path_factory, offsets, targets):
    d = tmp_path_factory.mktemp("oi")
    idx = OffsetIndex(d / "00000000000000000050.index", 50, 8 * 64)
    entries = [(50 + o, i * 64) for i, o in enumerate(offsets)]
    for off, pos in entries:
        idx.append(off, pos)
    for t in targets + [e[0] for e in entries]:
        expected = OffsetPosition(50, 0)
        for off, pos in entries:
            if off <= t:
                expected = OffsetPosition(off, pos)
        assert idx.lookup(t) == expected
    idx.close()


@STORAGE_SETTINGS
@given(offsets=offsets_strategy, gaps=st.lists(st.integers(1, 500), min_size=60, max_size=60),
       targets=st.lists(st.integers(-5, 40_000), max_size=30))
def test_position_lookup_agrees_with_linear_scan(tmp_path_factory, offsets, gaps, targets):
    d = tmp_path_factory.mktemp("oi")
    idx = OffsetIndex(d / "00000000000000000050.index", 50, 8 * 64)
    positions = [sum(gaps[:i + 1]) for i in range(len(offsets))]
    for off, pos in zip(offsets, positions, strict=True):
        idx.append(50 + off, pos)
    for t in targets + positions + [p - 1 for p in positions]:
        expected = max((p for p in positions if p <= t), default=None)
        assert idx.last_position_at_or_below(t) == expected
    idx.close()


@STORAGE_SETTINGS
@given(
    points=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 5000)), max_size=60),
    targets=st.lists(st.integers(-1, 10**6 + 10), max_size=30),
)
def test_time_lookup_agrees_with_linear_scan(tmp_path_factory, points, targets):
    d = tmp_path_factory.mktemp("ti")
    idx = TimeIndex(d / "00000000000000000000.timeindex", 0, 12 * 64)
    kept: list[TimestampOffset] = []
    for ts, off in sorted(points, key=lambda p: (p[1], p[0])):
        last = kept[-1] if kept else TimestampOffset(-1, 0)
        if ts > last.timestamp and off >= last.offset:
            assert idx.maybe_append(ts, off)
            kept.append(TimestampOffset(ts, off))
    assert idx.entries_list() == kept
    for t in targets:
        expected = TimestampOffset(-1, 0)
        for e in kept:
            if e.timestamp <= t:
                expected = e
        assert idx.lookup(t) == expected
    idx.close()


def test_time_index_keeps_one_slot_for_the_roll_entry(tmp_path):
    idx = TimeIndex(tmp_path / "t.timeindex", 0, 36)  # 3 slots
    idx.maybe_append(1, 1)
    idx.maybe_append(2, 2)
    assert idx.is_full()
    assert idx.maybe_append(3, 3, skip_full_check=True)
    idx.close()


def test_writable_index_stores_through_its_mapping_reserving_only_pages_written(tmp_path, monkeypatch):
    """The active segment's index (keep_descriptor) stores entries in its
    mapping, no pwrite; the blocks of each page are reserved (fallocate)
    before the first store into it, and the preallocated tail stays sparse."""
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(path, 0, 1 << 20)
    pwrites, reserved = [], []
    real_fallocate = os.posix_fallocate
    monkeypatch.setattr(os, "pwrite", lambda *a: pwrites.append(a))
    monkeypatch.setattr(os, "posix_fallocate", lambda fd, off, n: (reserved.append((off, n)), real_fallocate(fd, off, n)))
    per_page = mmap.PAGESIZE // 8
    for i in range(per_page + 1):
        idx.append(i, i * 100)
    assert pwrites == []
    assert reserved == [(0, mmap.PAGESIZE), (mmap.PAGESIZE, mmap.PAGESIZE)]
    assert os.stat(path).st_blocks * 512 <= 4 * mmap.PAGESIZE  # 1 MiB long, two pages held
    raw = path.read_bytes()  # the descriptor's view of the page cache
    assert struct.unpack_from(">ii", raw, per_page * 8) == (per_page, per_page * 100)
    assert idx.lookup(per_page).position == per_page * 100
    idx.close()
    again = OffsetIndex(path, 0, 1 << 20)
    assert again.entries == per_page + 1
    again.close()


def test_a_failed_page_reservation_stores_nothing(tmp_path, monkeypatch):
    path = tmp_path / "00000000000000000000.timeindex"
    idx = TimeIndex(path, 0, 1 << 20)

    def full(fd, off, n):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(OSError):
        idx.maybe_append(1000, 5)
    assert idx.entries == 0 and idx.last_entry == TimestampOffset(-1, 0)
    monkeypatch.undo()
    assert idx.maybe_append(1000, 5)
    assert idx.entries_list() == [TimestampOffset(1000, 5)]
    idx.close()


def test_an_index_mapped_read_only_writes_with_pwrite(tmp_path):
    """An index opened for lookups (no descriptor kept, mapped read-only)
    that is written again stores with pwrite, seen by its lookups."""
    path = tmp_path / "00000000000000000000.index"
    OffsetIndex(path, 0, 4096).close_quietly()  # preallocated, no entries
    idx = OffsetIndex(path, 0, 4096, keep_descriptor=False)
    assert not idx.holds_descriptor
    idx.append(3, 300)
    assert idx.holds_descriptor and idx.lookup(3) == OffsetPosition(3, 300)
    assert struct.unpack_from(">ii", path.read_bytes(), 0) == (3, 300)
    idx.close()
