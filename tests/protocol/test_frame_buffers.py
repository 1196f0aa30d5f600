"""FrameBuffers: large-frame buffers handed from one FrameReader to the
next (a closed connection's to the process's next one), never while a
frame in them is still referenced, within a bound."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import schema_strategies as ss
from kavka.protocol.frame_buffers import FrameBuffers
from kavka.protocol.framing import FrameReader, frame


def _receive(rx: FrameReader, payload: bytes):
    """``payload``'s frame written into ``rx``'s buffers as a socket would,
    one read per buffer offered; the frames completed."""
    stream = frame(payload)
    out, pos = [], 0
    while pos < len(stream):
        buf = rx.get_buffer()
        n = min(len(buf), len(stream) - pos)
        buf[:n] = stream[pos:pos + n]
        del buf
        out += rx.received(n)
        pos += n
    return out


def test_a_released_readers_buffer_serves_the_next_reader():
    pool = FrameBuffers(max_bytes=10_000)
    first = FrameReader(staging_bytes=64, buffers=pool)
    f = _receive(first, b"a" * 800)[0]
    buffer = id(f.obj)  # not the object: a reference to it would keep it busy
    del f
    first.release()
    assert pool.pooled_bytes == 900
    second = FrameReader(staging_bytes=64, buffers=pool)
    f = _receive(second, b"b" * 700)[0]
    assert id(f.obj) == buffer and bytes(f) == b"b" * 700
    assert pool.pooled_bytes == 0  # taken: the second reader owns it now


def test_a_buffer_still_holding_a_frame_is_not_handed_out():
    pool = FrameBuffers(max_bytes=10_000)
    first = FrameReader(staging_bytes=64, buffers=pool)
    held = _receive(first, b"a" * 800)[0][100:200]  # a slice of the last frame, still in use
    first.release()
    second = FrameReader(staging_bytes=64, buffers=pool)
    f = _receive(second, b"b" * 800)[0]
    assert f.obj is not held.obj and bytes(held) == b"a" * 100
    assert pool.pooled_bytes == 900  # still there, for when it is free
    del held
    third = FrameReader(staging_bytes=64, buffers=pool)
    assert len(_receive(third, b"c" * 500)[0]) == 500
    assert pool.pooled_bytes == 0


def test_a_replaced_spare_goes_to_the_pool_and_comes_back_when_free():
    """A reader whose last frame is still being decoded when the next
    arrives takes a second buffer; the two then alternate instead of one
    new buffer per frame."""
    pool = FrameBuffers(max_bytes=10_000)
    rx = FrameReader(staging_bytes=64, buffers=pool)
    a = _receive(rx, b"a" * 800)[0]
    b = _receive(rx, b"b" * 800)[0]  # a is busy: a second buffer
    ids = {id(a.obj), id(b.obj)}
    assert len(ids) == 2 and pool.pooled_bytes == 900  # a's buffer is pooled, busy
    del a
    c = _receive(rx, b"c" * 800)[0]  # b busy: a's buffer back from the pool
    assert id(c.obj) in ids and bytes(c) == b"c" * 800
    del b
    d = _receive(rx, b"d" * 800)[0]
    assert id(d.obj) in ids and bytes(d) == b"d" * 800


def test_without_a_pool_a_released_buffer_is_dropped():
    rx = FrameReader(staging_bytes=64)
    _receive(rx, b"a" * 800)
    rx.release()
    assert rx._spare is None


def test_take_picks_the_smallest_free_buffer_that_fits():
    pool = FrameBuffers(max_bytes=10_000)
    small, mid, big = bytearray(100), bytearray(500), bytearray(2000)
    for b in (big, small, mid):
        pool.give(b)
    ids = id(small), id(mid), id(big)
    del small, mid, big, b  # the loop's name too: a reference keeps a buffer busy
    assert id(pool.take(200)) == ids[1]
    assert pool.take(3000) is None
    assert id(pool.take(1)) == ids[0]
    assert id(pool.take(1)) == ids[2]
    assert pool.take(1) is None


def test_the_bound_drops_smaller_free_buffers_or_the_given_one():
    pool = FrameBuffers(max_bytes=1000)
    pool.give(bytearray(300))
    busy = bytearray(300)
    pool.give(busy)
    pool.give(bytearray(600))  # over the bound: the free 300 goes, the busy one stays
    assert pool.pooled_bytes == 900  # the busy 300 and the 600
    pool.give(bytearray(200))  # nothing smaller is free: dropped
    assert pool.pooled_bytes == 900
    pool.give(busy)  # already there: not twice
    assert pool.pooled_bytes == 900
    with pytest.raises(ValueError, match="max_bytes"):
        FrameBuffers(max_bytes=-1)


@ss.budget(4)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(70, 600), st.booleans()), max_size=30))
def test_readers_sharing_a_pool_never_see_their_frames_change(steps):
    """Several readers on one pool, frames kept or dropped at random,
    readers released at random: every frame kept still reads as received,
    and the pool stays within its bound."""
    pool = FrameBuffers(max_bytes=1500)
    readers = [FrameReader(staging_bytes=64, spare_bytes=700, buffers=pool) for _ in range(4)]
    kept = []
    for n, (which, size, keep) in enumerate(steps):
        payload = bytes([n % 256]) * size
        f = _receive(readers[which], payload)[0]
        if keep:
            kept.append((f, payload))
        del f
        if n % 5 == which:
            readers[which].release()
        for f, payload in kept:
            assert bytes(f) == payload
        assert pool.pooled_bytes <= 1500
