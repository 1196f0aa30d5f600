"""ReadBuffers: large log reads land in buffers used again once every view
of them is gone, never while one is held; the pool stays under its bound;
a segment read through it returns the same bytes as without."""

from __future__ import annotations

import gc
import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.storage.read_buffers import ReadBuffers
from kavka.storage.segment import LogSegment

from .conftest import T0, make_batch, small_config

KIB = 1024


@pytest.fixture
def data_file(tmp_path):
    data = os.urandom(512 * KIB)
    path = tmp_path / "data"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    yield fd, data
    os.close(fd)


def test_small_reads_are_plain_bytes(data_file):
    fd, data = data_file
    pool = ReadBuffers(min_bytes=64 * KIB)
    got = pool.pread(fd, 1000, 5)
    assert type(got) is bytes and got == data[5:1005]
    assert pool.pooled_bytes == 0


def test_a_freed_buffer_is_used_again_and_a_held_one_is_not(data_file):
    fd, data = data_file
    pool = ReadBuffers(min_bytes=16 * KIB, max_bytes=1024 * KIB)
    first = pool.pread(fd, 100 * KIB, 0)
    assert isinstance(first, memoryview) and first.readonly and first == data[: 100 * KIB]
    second = pool.pread(fd, 100 * KIB, 100 * KIB)  # first is held: a second buffer
    assert pool.pooled_bytes == 200 * KIB
    assert first == data[: 100 * KIB] and second == data[100 * KIB : 200 * KIB]
    del first
    third = pool.pread(fd, 50 * KIB, 300 * KIB)  # fits the freed one
    assert pool.pooled_bytes == 200 * KIB and third == data[300 * KIB : 350 * KIB]
    assert second == data[100 * KIB : 200 * KIB]


def test_a_slice_of_a_view_keeps_its_buffer(data_file):
    fd, data = data_file
    pool = ReadBuffers(min_bytes=16 * KIB, max_bytes=100 * KIB)
    piece = pool.pread(fd, 64 * KIB, 0)[10:20]
    gc.collect()
    other = pool.pread(fd, 64 * KIB, 64 * KIB)  # not the held buffer's memory
    assert piece == data[10:20] and other == data[64 * KIB : 128 * KIB]


def test_the_pool_stays_under_its_bound_and_drops_small_free_buffers(data_file):
    fd, data = data_file
    pool = ReadBuffers(min_bytes=16 * KIB, max_bytes=150 * KIB)
    held = [pool.pread(fd, 64 * KIB, i * 64 * KIB) for i in range(4)]  # two kept, two lent once
    assert pool.pooled_bytes == 128 * KIB
    assert [bytes(v) for v in held] == [data[i * 64 * KIB : (i + 1) * 64 * KIB] for i in range(4)]
    del held
    big = pool.pread(fd, 100 * KIB, 0)  # the free 64 KiB buffers make room for it
    assert pool.pooled_bytes <= 150 * KIB and big == data[: 100 * KIB]


def test_a_read_at_the_end_of_the_file_is_short(data_file):
    fd, data = data_file
    pool = ReadBuffers(min_bytes=16 * KIB)
    assert pool.pread(fd, 64 * KIB, len(data) - 20 * KIB) == data[-20 * KIB :]


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="min_bytes"):
        ReadBuffers(min_bytes=0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500 * KIB), st.integers(1, 200 * KIB), st.booleans()), max_size=25))
def test_held_views_never_change(tmp_path_factory, reads):
    """Any sequence of reads, each kept or dropped: every view still held
    holds the file's bytes at its place."""
    path = tmp_path_factory.mktemp("rb") / "data"
    data = os.urandom(512 * KIB)
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        pool = ReadBuffers(min_bytes=8 * KIB, max_bytes=300 * KIB)
        held = []
        for position, size, keep in reads:
            got = pool.pread(fd, size, position)
            assert got == data[position : position + size]
            if keep:
                held.append((position, got))
            for pos, view in held:
                assert view == data[pos : pos + len(view)]
            assert pool.pooled_bytes <= 300 * KIB
    finally:
        os.close(fd)


def test_a_segment_read_through_the_pool_is_the_same_bytes(tmp_path):
    seg = LogSegment(tmp_path, 0, small_config(), ManualClock(T0))
    offset = 0
    for i in range(40):
        b = bytearray(make_batch(50, ts=T0 + i))
        struct.pack_into(">q", b, 0, offset)
        seg.append(offset + 49, T0 + i, offset, [bytes(b)])
        offset += 50
    pool = ReadBuffers(min_bytes=1)
    plain = seg.read(0, 10**6)
    pooled = seg.read(0, 10**6, buffers=pool)
    assert plain is not None and pooled is not None
    assert isinstance(pooled.records, memoryview) and bytes(pooled.records) == plain.records
    assert (pooled.position, pooled.base_offset) == (plain.position, plain.base_offset)
    seg.close()
