"""Zigzag varint/varlong and unsigned varint: round trips, the protocol
guide's encodings, and typed errors for long, large or truncated input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.errors import DecodeError
from kavka.protocol.records.batch import CorruptRecordBatch
from kavka.protocol.records.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    VarintError,
    encode_varint,
    encode_varlong,
    read_unsigned_varint,
    read_varint,
    read_varlong,
    size_of_varint,
    size_of_varlong,
    write_unsigned_varint,
    write_varint,
    write_varlong,
)


@settings(max_examples=200)
@given(st.integers(INT32_MIN, INT32_MAX), st.binary(max_size=3))
def test_varint_round_trip_at_any_position(value, prefix):
    out = bytearray(prefix)
    write_varint(value, out)
    assert len(out) - len(prefix) == size_of_varint(value) <= 5
    assert read_varint(bytes(out), len(prefix)) == (value, len(out))
    assert read_varint(memoryview(out), len(prefix)) == (value, len(out))


@settings(max_examples=200)
@given(st.integers(INT64_MIN, INT64_MAX))
def test_varlong_round_trip(value):
    raw = encode_varlong(value)
    assert len(raw) == size_of_varlong(value) <= 10
    assert read_varlong(raw + b"\xff", 0) == (value, len(raw))


@settings(max_examples=100)
@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_round_trip(value):
    out = bytearray()
    write_unsigned_varint(value, out)
    assert read_unsigned_varint(out, 0) == (value, len(out))


@pytest.mark.parametrize(
    "value, encoded",
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (-2, "03"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (300, "d804"),
        (INT32_MAX, "feffffff0f"),
        (INT32_MIN, "ffffffff0f"),
    ],
)
def test_zigzag_encodings_match_the_protocol_guide(value, encoded):
    assert encode_varint(value).hex() == encoded
    assert read_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


def test_varlong_extremes_take_ten_bytes():
    assert encode_varlong(INT64_MIN).hex() == "ffffffffffffffffff01"
    assert encode_varlong(INT64_MAX).hex() == "feffffffffffffffff01"


@pytest.mark.parametrize(
    "reader, raw, what",
    [
        (read_varint, b"\x80\x80\x80\x80\x80\x01", "longer than 5"),
        (read_varlong, b"\x80" * 10 + b"\x01", "longer than 10"),
        (read_unsigned_varint, b"\xff\xff\xff\xff\xff\x01", "longer than 5"),
        (read_varint, b"\x80\x80", "past the end"),
        (read_varlong, b"", "past the end"),
        (read_unsigned_varint, b"\x81", "past the end"),
        (read_varint, b"\xff\xff\xff\xff\x1f", "does not fit in 32 bits"),
        (read_varlong, b"\xff" * 9 + b"\x03", "does not fit in 64 bits"),
    ],
)
def test_bad_varints_are_typed_errors(reader, raw, what):
    with pytest.raises(VarintError, match=what) as info:
        reader(raw, 0)
    assert isinstance(info.value, CorruptRecordBatch)
    assert not isinstance(info.value, DecodeError)  # the wire's error stays on the wire
    assert info.value.position == 0


def test_error_position_is_where_the_varint_starts():
    with pytest.raises(VarintError) as info:
        read_varint(b"\x00\x00\x80", 2)
    assert info.value.position == 2


@pytest.mark.parametrize(
    "writer, value",
    [
        (write_varint, INT32_MAX + 1),
        (write_varint, INT32_MIN - 1),
        (write_varlong, INT64_MAX + 1),
        (write_unsigned_varint, -1),
        (write_unsigned_varint, 2**32),
    ],
)
def test_writers_refuse_values_outside_their_width(writer, value):
    with pytest.raises(ValueError, match="outside"):
        writer(value, bytearray())
