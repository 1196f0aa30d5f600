"""Primitive readers and writers: known encodings, edge cases, round trips,
and the rule that every length is checked before anything is allocated."""

import tracemalloc
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

import schema_strategies as ss
from kavka.protocol import primitives as p
from kavka.protocol.errors import DecodeError, EncodeError

# -------------------------------------------------------------- varints


@pytest.mark.parametrize("value, encoded", [
    (0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"), (300, b"\xac\x02"),
    (16383, b"\xff\x7f"), (16384, b"\x80\x80\x01"), (0xFFFFFFFF, b"\xff\xff\xff\xff\x0f"),
])
def test_unsigned_varint_known_encodings(value, encoded):
    assert p.write_uvarint(value) == encoded
    assert p.read_uvarint(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize("value, encoded", [
    (0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-2, b"\x03"), (63, b"\x7e"), (-64, b"\x7f"),
    (64, b"\x80\x01"), (2**31 - 1, b"\xfe\xff\xff\xff\x0f"), (-(2**31), b"\xff\xff\xff\xff\x0f"),
])
def test_zigzag_varint_known_encodings(value, encoded):
    assert p.write_varint(value) == encoded
    assert p.read_varint(encoded, 0) == (value, len(encoded))


def test_varlong_extremes():
    for v in (-(2**63), 2**63 - 1, 0, -1):
        data = p.write_varlong(v)
        assert p.read_varlong(data, 0) == (v, len(data))
    assert len(p.write_varlong(-(2**63))) == 10


def test_overlong_and_truncated_varints_are_decode_errors():
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        p.read_uvarint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(DecodeError, match="does not fit 32 bits"):
        p.read_uvarint(b"\xff\xff\xff\xff\x1f", 0)
    with pytest.raises(DecodeError, match="truncated"):
        p.read_uvarint(b"\x80\x80", 0)
    with pytest.raises(DecodeError, match="truncated"):
        p.read_uvarint(b"", 0)
    with pytest.raises(DecodeError, match="longer than 10 bytes"):
        p.read_varlong(b"\x80" * 11, 0)


def test_out_of_range_varints_are_encode_errors():
    for bad in (-1, 2**32):
        with pytest.raises(EncodeError):
            p.write_uvarint(bad)
    with pytest.raises(EncodeError):
        p.write_varint(2**31)
    with pytest.raises(EncodeError):
        p.write_varlong(-(2**63) - 1)


@ss.budget(4)
@given(st.integers(0, 2**32 - 1))
def test_uvarint_round_trip(v):
    data = p.write_uvarint(v)
    assert p.read_uvarint(data + b"tail", 0) == (v, len(data))


@ss.budget(4)
@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(v):
    assert p.read_varint(p.write_varint(v), 0)[0] == v


@ss.budget(4)
@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(v):
    assert p.read_varlong(p.write_varlong(v), 0)[0] == v


# -------------------------------------------------------------- fixed types


@pytest.mark.parametrize("name, value", [
    ("int8", -128), ("int16", 32767), ("int32", -(2**31)), ("int64", 2**63 - 1),
    ("uint16", 65535), ("uint32", 2**32 - 1), ("float64", -1.5), ("bool", True),
])
def test_fixed_round_trip_and_truncation(name, value):
    data = getattr(p, f"write_{name}")(value)
    read = getattr(p, f"read_{name}")
    assert read(data, 0) == (value, len(data))
    with pytest.raises(DecodeError, match="truncated"):
        read(data[:-1], 0)


def test_bool_reads_any_nonzero_as_true():
    assert p.read_bool(b"\x02", 0) == (True, 1)
    assert p.read_bool(b"\x00", 0) == (False, 1)


@ss.budget(4)
@given(st.uuids())
def test_uuid_round_trip(u):
    assert p.read_uuid(p.write_uuid(u), 0) == (u, 16)


def test_uuid_truncated():
    with pytest.raises(DecodeError):
        p.read_uuid(uuid.uuid4().bytes[:15], 0)


# -------------------------------------------------------------- strings and bytes


@ss.budget(4)
@given(st.one_of(st.none(), st.text(max_size=50)))
def test_strings_round_trip(s):
    assert p.read_nullable_string(p.write_nullable_string(s), 0)[0] == s
    assert p.read_compact_nullable_string(p.write_compact_nullable_string(s), 0)[0] == s


@ss.budget(4)
@given(st.one_of(st.none(), st.binary(max_size=50)))
def test_bytes_round_trip(b):
    assert p.read_nullable_bytes(p.write_nullable_bytes(b), 0)[0] == b
    assert p.read_compact_nullable_bytes(p.write_compact_nullable_bytes(b), 0)[0] == b


def test_known_string_encodings():
    assert p.write_string("ab") == b"\x00\x02ab"
    assert p.write_nullable_string(None) == b"\xff\xff"
    assert p.write_compact_string("ab") == b"\x03ab"
    assert p.write_compact_nullable_string(None) == b"\x00"
    assert p.write_compact_string("") == b"\x01"


def test_null_where_not_allowed():
    with pytest.raises(DecodeError, match="null"):
        p.read_string(b"\xff\xff", 0)
    with pytest.raises(DecodeError, match="null"):
        p.read_compact_bytes(b"\x00", 0)


def test_invalid_utf8_is_a_decode_error():
    with pytest.raises(DecodeError, match="UTF-8"):
        p.read_string(b"\x00\x02\xff\xfe", 0)


def test_negative_lengths_below_minus_one_are_rejected():
    with pytest.raises(DecodeError, match="negative"):
        p.read_nullable_string(b"\xff\xfe", 0)
    with pytest.raises(DecodeError, match="negative"):
        p.read_nullable_bytes(b"\xff\xff\xff\xfe", 0)
    with pytest.raises(DecodeError, match="negative"):
        p.read_array_len(b"\xff\xff\xff\xfe", 0)


def test_string_too_long_to_encode():
    with pytest.raises(EncodeError, match="int16"):
        p.write_string("x" * 40000)


def test_records_are_zero_copy_slices():
    buf = memoryview(p.write_nullable_bytes(b"batch") + b"!")
    value, pos = p.read_records(buf, 0)
    assert isinstance(value, memoryview) and value == b"batch" and pos == 9
    assert value.obj is buf.obj


# -------------------------------------------------------------- bounded lengths


@pytest.mark.parametrize("reader, prefix", [
    (p.read_nullable_string, b"\x7f\xff"),
    (p.read_nullable_bytes, b"\x7f\xff\xff\xff"),
    (p.read_records, b"\x7f\xff\xff\xff"),
    (p.read_compact_nullable_string, b"\xff\xff\xff\xff\x0f"),
    (p.read_compact_nullable_bytes, b"\xff\xff\xff\xff\x0f"),
    (p.read_array_len, b"\x7f\xff\xff\xff"),
    (p.read_compact_array_len, b"\xff\xff\xff\xff\x0f"),
    (p.read_tagged_fields, b"\xff\xff\xff\xff\x0f"),
])
def test_huge_declared_lengths_fail_before_allocating(reader, prefix):
    """CVE-2022-34917: a length larger than what remains is rejected up
    front, without allocating anything near the declared size."""
    data = prefix + b"\x00" * 12
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match="exceeds 12 remaining bytes|exceeds"):
            reader(data, 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


def test_array_length_checked_against_element_size():
    # 4 int64 elements need 32 bytes; only 16 remain
    with pytest.raises(DecodeError, match="array length 4 exceeds 16"):
        p.read_array_len(b"\x00\x00\x00\x04" + b"\x00" * 16, 0, 8)


# -------------------------------------------------------------- tagged fields


def test_tagged_fields_round_trip_and_order():
    block = p.write_tagged_fields([(0, b"ab"), (5, b"")])
    assert block == b"\x02\x00\x02ab\x05\x00"
    assert p.read_tagged_fields(block, 0) == ({0: b"ab", 5: b""}, len(block))
    with pytest.raises(DecodeError, match="out of order"):
        p.read_tagged_fields(b"\x02\x05\x00\x01\x00", 0)
    assert p.write_tagged_fields([]) == p.EMPTY_TAGGED_FIELDS == b"\x00"


def test_reader_advances():
    r = p.Reader(p.write_int16(7) + p.write_varint(-3) + p.write_compact_string("x"))
    assert (r.int16(), r.varint(), r.compact_nullable_string()) == (7, -3, "x")
    assert r.remaining == 0
