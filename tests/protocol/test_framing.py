"""Size-prefixed framing and the sans-IO frame decoder."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

import schema_strategies as ss
from kavka.protocol.errors import FrameSizeError
from kavka.protocol.framing import FrameDecoder, frame, frame_parts


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
