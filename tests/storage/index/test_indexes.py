"""Offset and time indexes: format decoded by hand, lookups against a linear
scan (hypothesis), preallocation, trimming, truncation, reopening."""

from __future__ import annotations

import errno
import os
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.storage.index.index_file import PENDING_ENTRIES
from kavka.storage.index.offset_index import IndexOffsetError, OffsetIndex, OffsetPosition
from kavka.storage.index.time_index import TimeIndex, TimestampOffset

from ..conftest import STORAGE_SETTINGS


def test_offset_index_file_format_and_preallocation(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(path, 100, 1003)  # rounded down to 125 entries
    assert path.stat().st_size == 1000 and idx.max_entries == 125 and idx.entries == 0
    idx.append(105, 0)
    idx.append(130, 4200)
    idx.write_pending()  # entries are held in memory until a batch of them, a lookup or this
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
    idx.write_pending()
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
    idx.write_pending()
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
    idx.write_pending()
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


def test_entries_are_written_together_and_before_any_lookup(tmp_path, monkeypatch):
    """Appended entries stay in memory until PENDING_ENTRIES of them are
    written by one pwrite, or a lookup, truncation or trim needs the file."""
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(path, 0, 1 << 16)
    writes = []
    real = os.pwrite
    monkeypatch.setattr(os, "pwrite", lambda fd, data, off: (writes.append((len(data), off)), real(fd, data, off))[1])
    for i in range(PENDING_ENTRIES + 3):
        idx.append(i, i * 10)
    assert writes == [(PENDING_ENTRIES * 8, 0)] and idx.pending_entries == 3 and idx.entries == PENDING_ENTRIES + 3
    assert path.read_bytes()[PENDING_ENTRIES * 8:][:8] == bytes(8)  # not on the file yet
    assert idx.lookup(PENDING_ENTRIES + 2) == OffsetPosition(PENDING_ENTRIES + 2, (PENDING_ENTRIES + 2) * 10)
    assert writes[-1] == (24, PENDING_ENTRIES * 8) and idx.pending_entries == 0
    idx.append(500, 5000)
    idx.append(501, 5010)
    idx.restore(PENDING_ENTRIES + 4, 500)  # an append undone: its pending entry goes, nothing is written
    assert writes[-1] == (24, PENDING_ENTRIES * 8) and idx.entries == PENDING_ENTRIES + 4
    idx.truncate_to(PENDING_ENTRIES + 2)  # its lookup writes the pending entry; the dropped two are zeroed
    assert writes[-2:] == [(8, (PENDING_ENTRIES + 3) * 8), (16, (PENDING_ENTRIES + 2) * 8)]
    assert idx.pending_entries == 0 and idx.entries == PENDING_ENTRIES + 2
    idx.append(600, 6000)
    idx.close()  # the trim writes what is pending
    assert OffsetIndex(path, 0, 1 << 16).entries_list()[-2:] == [OffsetPosition(PENDING_ENTRIES + 1,
                                                                                 (PENDING_ENTRIES + 1) * 10),
                                                                  OffsetPosition(600, 6000)]


def test_pending_entries_are_lost_in_a_crash_and_flush_writes_none(tmp_path, monkeypatch):
    """flush (which may run outside the log's lock) only fsyncs what was
    written; a crash (close_quietly) loses what was pending, and the file
    counts only the written entries when opened again."""
    path = tmp_path / "00000000000000000000.timeindex"
    idx = TimeIndex(path, 0, 1 << 16)
    for i in range(PENDING_ENTRIES + 2):
        idx.maybe_append(1000 + i, i)
    synced = []
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd))
    idx.flush()
    assert len(synced) == 1 and idx.pending_entries == 2
    idx.close_quietly()
    again = TimeIndex(path, 0, 1 << 16)
    assert again.entries == PENDING_ENTRIES and again.last_entry == TimestampOffset(1000 + PENDING_ENTRIES - 1,
                                                                                   PENDING_ENTRIES - 1)
    again.close()


def test_a_failed_write_of_pending_entries_keeps_them(tmp_path, monkeypatch):
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(path, 0, 1 << 16)
    idx.append(1, 10)

    def full(fd, data, off):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(OSError):
        idx.write_pending()
    assert idx.pending_entries == 1
    monkeypatch.undo()
    idx.write_pending()
    assert idx.pending_entries == 0 and struct.unpack_from(">ii", path.read_bytes(), 0) == (1, 10)
    idx.close()
