"""Size-prefixed framing, the sans-IO frame decoder and the receiver that
reads into its own buffers."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

import schema_strategies as ss
from kavka.protocol.errors import FrameSizeError
from kavka.protocol.framing import FrameDecoder, FrameReader, frame, frame_parts


def test_frame_adds_size_prefix():
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert b"".join(frame_parts([b"ab", memoryview(b"cde")])) == b"\x00\x00\x00\x05abcde"


@ss.budget(4)
@given(st.lists(st.binary(max_size=40), max_size=6), st.lists(st.integers(1, 30), min_size=1))
def test_any_chunking_yields_the_same_frames(payloads, cuts):
    stream = b"".join(frame(p) for p in payloads)
    dec = FrameDecoder(max_frame_size=100)
    out, pos, i = [], 0, 0
    while pos < len(stream):
        step = cuts[i % len(cuts)]
        out += dec.feed(stream[pos:pos + step])
        pos += step
        i += 1
    assert out == payloads
    assert dec.buffered == 0


def test_oversized_frame_rejected_before_buffering():
    dec = FrameDecoder(max_frame_size=1024)
    with pytest.raises(FrameSizeError, match="larger than the maximum 1024"):
        dec.feed(struct.pack(">i", 1025))
    assert dec.buffered == 0
    with pytest.raises(FrameSizeError):  # stays failed
        dec.feed(frame(b"ok"))


def test_tls_client_hello_is_rejected():
    # A TLS record header (handshake, TLS 1.0 record version) read as a size
    hello = bytes([0x16, 0x03, 0x01, 0x01, 0x2C, 0x01, 0x00, 0x01, 0x28, 0x03, 0x03])
    dec = FrameDecoder()  # socket.request.max.bytes default: 100 MiB
    with pytest.raises(FrameSizeError, match="369295617"):
        dec.feed(hello)


def test_negative_size_rejected():
    with pytest.raises(FrameSizeError, match="negative"):
        FrameDecoder().feed(b"\xff\xff\xff\xfe")


def test_size_checked_even_when_prefix_arrives_in_pieces():
    dec = FrameDecoder(max_frame_size=10)
    assert dec.feed(b"\x00\x00") == []
    with pytest.raises(FrameSizeError):
        dec.feed(b"\x00\x0b")


def test_zero_length_frame():
    assert FrameDecoder().feed(b"\x00\x00\x00\x00") == [b""]


def test_frame_over_several_reads_is_handed_out_read_only_and_stays_intact():
    # A frame staged over several reads comes out as a read-only view of the
    # staging buffer (no copy); later reads must never write into it.
    big = bytes(range(256)) * 40
    stream = frame(big) + frame(b"next") + frame(b"partial")
    dec = FrameDecoder()
    assert dec.feed(stream[:1000]) == []
    out = dec.feed(stream[1000:-3])
    assert out == [big, b"next"]
    with pytest.raises(TypeError):
        out[0][0] = 0
    assert dec.buffered == len(frame(b"partial")) - 3
    assert dec.feed(stream[-3:]) == [b"partial"]
    assert dec.feed(frame(b"y" * 5000)[:100]) == []
    assert out == [big, b"next"]


def _receive(rx: FrameReader, stream: bytes, cuts: list[int]) -> list:
    """``stream`` written into ``rx``'s buffers as a socket would: each
    read at most its cut and at most the buffer offered."""
    out, pos, i = [], 0, 0
    while pos < len(stream):
        buf = rx.get_buffer()
        assert len(buf) > 0 and not buf.readonly
        n = min(cuts[i % len(cuts)], len(buf), len(stream) - pos)
        buf[:n] = stream[pos:pos + n]
        del buf
        out += rx.received(n)
        pos += n
        i += 1
    return out


@ss.budget(4)
@given(st.lists(st.binary(max_size=120), max_size=8), st.lists(st.integers(1, 70), min_size=1),
       st.integers(8, 64))
def test_receiver_any_chunking_yields_the_frames_the_decoder_does(payloads, cuts, staging):
    stream = b"".join(frame(p) for p in payloads)
    rx = FrameReader(max_frame_size=200, staging_bytes=staging)
    assert _receive(rx, stream, cuts) == payloads
    assert rx.buffered == 0


def test_receiver_takes_a_large_frame_into_its_own_buffer_read_only():
    big = bytes(range(256)) * 40
    stream = frame(b"a") + frame(big) + frame(b"next")
    rx = FrameReader(staging_bytes=1000)
    assert rx.received(0) == []
    out = _receive(rx, stream[:600], [600])
    assert out == [b"a"] and rx.buffered == 600 - 5 - 4
    buf = rx.get_buffer()
    assert len(buf) == len(big) - rx.buffered  # the rest of that frame exactly: nothing read past it
    out = _receive(rx, stream[600:], [4096])
    assert out == [big, b"next"]
    assert isinstance(out[0], memoryview)
    with pytest.raises(TypeError):
        out[0][0] = 0
    assert _receive(rx, frame(b"z" * 2000), [3000]) == [b"z" * 2000]
    assert out[0] == big  # later frames never write into a frame handed out


def test_receiver_refuses_an_oversized_frame_before_allocating_it():
    rx = FrameReader(max_frame_size=1024, staging_bytes=64)
    with pytest.raises(FrameSizeError, match="larger than the maximum 1024"):
        _receive(rx, struct.pack(">i", 1025), [4])
    assert rx.buffered == 0 and len(rx.get_buffer()) == 64  # nothing of its size was allocated
    with pytest.raises(FrameSizeError):  # stays failed
        _receive(rx, frame(b"ok"), [10])
    with pytest.raises(FrameSizeError, match="negative"):
        _receive(FrameReader(), b"\xff\xff\xff\xfe", [4])
    rx = FrameReader(max_frame_size=10)
    assert _receive(rx, b"\x00\x00", [2]) == []
    with pytest.raises(FrameSizeError):  # a size arriving in pieces is checked too
        _receive(rx, b"\x00\x0b", [2])


@ss.budget(4)
@given(st.binary(max_size=300), st.lists(st.integers(1, 40), min_size=1))
def test_receiver_random_streams_raise_frame_size_errors_only(stream, cuts):
    rx = FrameReader(max_frame_size=64, staging_bytes=16)
    try:
        for f in _receive(rx, stream, cuts):
            assert len(f) <= 64
    except FrameSizeError:
        return
    assert rx.buffered <= 64 + 4


def test_receiver_reuses_a_large_frame_buffer_only_once_nothing_refers_to_it():
    rx = FrameReader(staging_bytes=64)
    first = _receive(rx, frame(b"a" * 500), [1000])[0]
    held = first.obj
    kept = first[10:20]  # a slice of the frame handed out keeps its buffer
    del first
    second = _receive(rx, frame(b"b" * 300), [1000])[0]
    assert second.obj is not held and bytes(kept) == b"a" * 10
    del kept, held, second
    third = _receive(rx, frame(b"c" * 400), [1000])[0]
    assert bytes(third) == b"c" * 400 and len(third.obj) == 450  # the spare (337) was too small
    third_buffer = id(third.obj)  # not the object: a reference to it would keep it busy
    del third
    fourth = _receive(rx, frame(b"d" * 200), [1000])[0]
    assert id(fourth.obj) == third_buffer  # free again: the 450-byte buffer reused...
    assert bytes(fourth) == b"d" * 200  # ...and the frame is exactly its own bytes
    big = FrameReader(staging_bytes=64, spare_bytes=100)
    assert _receive(big, frame(b"e" * 500), [1000]) == [b"e" * 500]
    assert big._spare is None  # larger than spare_bytes: not kept


def test_a_frame_a_little_larger_than_the_last_reuses_its_buffer():
    """Fetch responses of one consumer differ by a few batches: the kept
    buffer has room for a frame an eighth larger (within spare_bytes)."""
    rx = FrameReader(staging_bytes=64, spare_bytes=1000)
    first = _receive(rx, frame(b"a" * 800), [1000])[0]
    buffer = id(first.obj)  # not the object: a reference to it would keep it busy
    assert len(first.obj) == 900
    del first
    second = _receive(rx, frame(b"b" * 880), [1000])[0]
    assert id(second.obj) == buffer and bytes(second) == b"b" * 880
    del second
    third = _receive(rx, frame(b"c" * 990), [1000])[0]  # past the room: a new one, capped at spare_bytes
    assert len(third.obj) == 1000 and bytes(third) == b"c" * 990
