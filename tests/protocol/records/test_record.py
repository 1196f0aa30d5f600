"""One record's layout: round trips, a hand-checked encoding, and typed
errors for every length that lies."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.errors import DecodeError
from kavka.protocol.records.record import CorruptRecord, Record, decode_record, encode_record
from kavka.protocol.records.varint import VarintError, encode_varint, encode_varlong

from .strategies import headers, maybe_bytes


@settings(max_examples=150)
@given(
    key=maybe_bytes,
    value=maybe_bytes,
    hdrs=headers,
    offset_delta=st.integers(0, 2**31 - 1),
    ts_delta=st.integers(-(2**50), 2**50),
    base_offset=st.integers(0, 2**40),
)
def test_round_trip(key, value, hdrs, offset_delta, ts_delta, base_offset):
    out = bytearray(b"\xee")  # records start anywhere in a buffer
    n = encode_record(out, offset_delta, ts_delta, key, value, hdrs)
    assert n == len(out) - 1
    record, end = decode_record(bytes(out), 1, len(out), base_offset, 1_000)
    assert end == len(out)
    assert record == Record(base_offset + offset_delta, 1_000 + ts_delta, key, value, hdrs, offset_delta, ts_delta, 0)


def test_log_append_time_replaces_the_timestamp():
    out = bytearray()
    encode_record(out, 0, 5, b"k", b"v")
    record, _ = decode_record(out, 0, len(out), 0, 100, log_append_time=777)
    assert record.timestamp == 777 and record.timestamp_delta == 5


def test_layout_by_hand():
    out = bytearray()
    encode_record(out, 3, -2, b"ab", None, (("h", b"xyz"),))
    body = (
        b"\x00"  # attributes
        + encode_varlong(-2)
        + encode_varint(3)
        + encode_varint(2) + b"ab"
        + encode_varint(-1)
        + encode_varint(1)
        + encode_varint(1) + b"h" + encode_varint(3) + b"xyz"
    )
    assert bytes(out) == encode_varint(len(body)) + body


def _record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


HEAD = b"\x00" + encode_varlong(0) + encode_varint(0)  # attributes, deltas


@pytest.mark.parametrize(
    "raw, message",
    [
        (encode_varint(0), "too small"),
        (encode_varint(-5), "too small"),
        (encode_varint(50) + b"\x00" * 10, "declares 50 bytes but only 10 remain"),
        (_record(HEAD + encode_varint(9) + b"ab" + encode_varint(-1) + encode_varint(0)), "key length 9 exceeds"),
        (_record(HEAD + encode_varint(-2) + encode_varint(-1) + encode_varint(0)), "key length -2 is negative"),
        (_record(HEAD + encode_varint(-1) + encode_varint(2**20) + encode_varint(0)), "value length 1048576 exceeds"),
        (_record(HEAD + encode_varint(-1) + encode_varint(-1) + encode_varint(-3)), "header count -3 is negative"),
        (_record(HEAD + encode_varint(-1) + encode_varint(-1) + encode_varint(2**30) + b"\x00\x00"), "header count 1073741824 cannot fit"),
        (_record(HEAD + encode_varint(-1) + encode_varint(-1) + encode_varint(1) + encode_varint(-1) + encode_varint(-1)), "header key is null"),
        (_record(HEAD + encode_varint(-1) + encode_varint(-1) + encode_varint(1) + encode_varint(1) + b"\xff" + encode_varint(-1)), "not UTF-8"),
        (_record(HEAD + encode_varint(-1) + encode_varint(-1) + encode_varint(0) + b"junk"), "declares 10 bytes but its fields take 6"),
    ],
)
def test_lying_lengths_are_typed_errors(raw, message):
    with pytest.raises(CorruptRecord, match=message):
        decode_record(raw, 0, len(raw), 0, 0)


def test_fields_running_past_the_declared_length_are_caught():
    # Declared length 4 cuts the record inside its header count; the varints
    # read on into the next bytes but the length check catches it.
    body = HEAD + encode_varint(-1) + encode_varint(-1) + encode_varint(0)
    raw = encode_varint(4) + body
    with pytest.raises(CorruptRecord):
        decode_record(raw, 0, len(raw), 0, 0)


def test_truncated_varint_inside_a_record():
    raw = encode_varint(3) + b"\x00\x80\x80"
    with pytest.raises(VarintError):
        decode_record(raw, 0, len(raw), 0, 0)


def test_bad_varint_deep_in_a_record_is_a_varint_error_at_its_byte():
    # The header value length (the last field) is six bytes long: the codec's
    # error must come out restated for this layer, pointing at that varint.
    body = HEAD + encode_varint(-1) + encode_varint(-1) + encode_varint(1) + encode_varint(1) + b"h"
    bad_at = len(encode_varint(len(body) + 6)) + len(body)
    raw = _record(body + b"\x80" * 5 + b"\x01")
    with pytest.raises(VarintError, match="varint is longer than 5 bytes") as info:
        decode_record(raw, 0, len(raw), 0, 0)
    assert info.value.position == bad_at
    assert not isinstance(info.value, DecodeError)


def test_record_must_lie_within_end():
    out = bytearray()
    encode_record(out, 0, 0, b"key", b"value")
    with pytest.raises(CorruptRecord, match="remain"):
        decode_record(bytes(out) + b"\x00" * 20, 0, len(out) - 1, 0, 0)


def test_header_keys_must_be_text():
    with pytest.raises(TypeError, match="header key must be str"):
        encode_record(bytearray(), 0, 0, None, None, ((b"k", b"v"),))
