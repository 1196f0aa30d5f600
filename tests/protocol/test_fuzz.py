"""Bounded fuzzing of every decoder: valid encodings of random messages are
truncated, mutated and given huge declared lengths; decoding must either
succeed or raise a DecodeError subclass — never another exception — and
must not allocate more than a small multiple of the input.

``bench/fuzz_protocol.py`` runs the same mutations for longer.
"""

import contextlib
import struct
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

import schema_strategies as ss
from kavka.protocol.codec import decode_body, encode_body
from kavka.protocol.errors import DecodeError
from kavka.protocol.framing import FrameDecoder
from kavka.protocol.headers import decode_request

CASES = ss.all_versions()
IDS = [ss.case_id(c) for c in CASES]

HUGE = [struct.pack(">i", 0x7FFFFFFF), struct.pack(">h", 0x7FFF), b"\xff\xff\xff\xff\x0f",
        struct.pack(">i", -2), b"\x80\x80\x80\x80\x80\x80"]


def mutate(data: bytes, kind: int, pos: int, payload: bytes) -> bytes:
    pos = pos % (len(data) + 1)
    if kind == 0:  # truncate
        return data[:pos]
    if kind == 1:  # overwrite
        return data[:pos] + payload + data[pos + len(payload):]
    if kind == 2:  # insert
        return data[:pos] + payload + data[pos:]
    return payload  # replace entirely


def decode_or_decode_error(key, side, version, data):
    try:
        decode_body(key, side, version, memoryview(data))
    except DecodeError as e:
        assert str(e)  # renders with context and path
        return e
    return None


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_mutated_encodings_only_raise_decode_errors(case):
    key, side, version = case

    @ss.budget(0.5)
    @given(ss.message(key, side, version), st.integers(0, 3), st.integers(0, 10_000),
           st.one_of(st.sampled_from(HUGE), st.binary(min_size=1, max_size=8)))
    def check(msg, kind, pos, payload):
        decode_or_decode_error(key, side, version, mutate(encode_body(msg, version), kind, pos, payload))

    check()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_huge_lengths_at_every_offset_stay_bounded(case):
    """Overwrite each offset of a valid encoding with a huge length (int32,
    int16 and unsigned varint forms): memory stays bounded (CVE-2022-34917)."""
    key, side, version = case

    @ss.budget(1 / ss.EXAMPLES)
    @given(ss.message(key, side, version))
    def check(msg):
        data = encode_body(msg, version)
        tracemalloc.start()
        try:
            for pos in range(len(data)):
                for huge in HUGE[:3]:
                    tracemalloc.reset_peak()
                    decode_or_decode_error(key, side, version, mutate(data, 1, pos, huge))
                    _, peak = tracemalloc.get_traced_memory()
                    assert peak < 256 * 1024 + 8 * len(data), (pos, huge, peak)
        finally:
            tracemalloc.stop()

    check()


@ss.budget(5)
@given(st.binary(max_size=64))
def test_random_request_frames(frame):
    with contextlib.suppress(DecodeError):
        decode_request(frame)


@ss.budget(5)
@given(st.sampled_from([0, 1, 3, 18]), st.integers(-2, 20), st.binary(max_size=48))
def test_random_bodies_behind_valid_headers(key, version, body):
    frame = struct.pack(">hhi", key, version, 1) + b"\x00\x01c\x00" + body
    with contextlib.suppress(DecodeError):
        decode_request(frame)


@ss.budget(5)
@given(st.lists(st.binary(max_size=16), max_size=8))
def test_frame_decoder_random_streams(chunks):
    dec = FrameDecoder(max_frame_size=64)
    try:
        for c in chunks:
            for f in dec.feed(c):
                assert len(f) <= 64
    except DecodeError:
        pass
    assert dec.buffered <= 64 + 4 + 16
