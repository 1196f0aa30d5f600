"""The one varint codec (``kavka.protocol.varint``): the error it raises is
a wire ``DecodeError`` that still carries what another layer needs to word
it (problem, type, start position), and the bytes-returning encoders agree
with the appending writers, shared one-byte objects included."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol import varint as v
from kavka.protocol.errors import DecodeError, EncodeError
from kavka.protocol.varint import VarintDecodeError, VarintProblem


@pytest.mark.parametrize(
    "reader, raw, pos, problem, what, value, text",
    [
        (v.read_uvarint, b"\x00\x80\x80", 1, VarintProblem.TRUNCATED, "unsigned varint", 0,
         "truncated: unsigned varint needs 1 bytes, 0 remain"),
        (v.read_varint, b"", 0, VarintProblem.TRUNCATED, "varint", 0, "truncated: varint"),
        (v.read_varlong, b"\x00" + b"\x80" * 11, 1, VarintProblem.TOO_LONG, "varlong", 0,
         "varlong longer than 10 bytes"),
        (v.read_uvarint, b"\xff\xff\xff\xff\x1f", 0, VarintProblem.TOO_LARGE, "unsigned varint", 2**33 - 1,
         f"unsigned varint {2**33 - 1} does not fit 32 bits"),
        (v.read_varint, b"\x80\x80\x80\x80\x10", 0, VarintProblem.TOO_LARGE, "varint", 2**32,
         f"varint {2**32} does not fit 32 bits"),
    ],
)
def test_errors_are_decode_errors_that_say_what_and_where(reader, raw, pos, problem, what, value, text):
    with pytest.raises(VarintDecodeError) as info:
        reader(raw, pos)
    e = info.value
    assert isinstance(e, DecodeError)
    assert (e.problem, e.what, e.position, e.value) == (problem, what, pos, value)
    assert e.reason.startswith(text)


@pytest.mark.parametrize("reader, width", [(v.read_uvarint, 5), (v.read_varint, 5), (v.read_varlong, 10)])
def test_a_full_width_run_still_continuing_is_too_long_even_at_the_end(reader, width):
    # More bytes could not make it valid, so it is not reported as truncated.
    with pytest.raises(VarintDecodeError) as info:
        reader(b"\x80" * width, 0)
    assert info.value.problem is VarintProblem.TOO_LONG
    assert info.value.max_bytes == width


def test_one_byte_varint_at_the_very_end_of_the_buffer():
    assert v.read_uvarint(b"\x00\x7f", 1) == (127, 2)
    assert v.read_varint(b"\x00\x01", 1) == (-1, 2)
    assert v.read_varlong(memoryview(b"\x00\x02"), 1) == (1, 2)


def _appended(append, value) -> bytes:
    out = bytearray(b"\xee")
    append(value, out)
    return bytes(out[1:])


@settings(max_examples=150)
@given(st.one_of(st.integers(-70, 70), st.integers(v.INT32_MIN, v.INT32_MAX)))
def test_encode_varint_agrees_with_append(value):
    raw = v.encode_varint(value)
    assert raw == _appended(v.append_varint, value)
    assert len(raw) == v.size_of_varint(value)
    assert v.read_varint(raw, 0) == (value, len(raw))


@settings(max_examples=100)
@given(st.one_of(st.integers(-70, 70), st.integers(v.INT64_MIN, v.INT64_MAX)))
def test_encode_varlong_agrees_with_append(value):
    raw = v.encode_varlong(value)
    assert raw == _appended(v.append_varlong, value)
    assert len(raw) == v.size_of_varlong(value)
    assert v.read_varlong(raw, 0) == (value, len(raw))


@settings(max_examples=100)
@given(st.one_of(st.integers(0, 200), st.integers(0, v.UINT32_MAX)))
def test_encode_uvarint_agrees_with_append(value):
    raw = v.encode_uvarint(value)
    assert raw == _appended(v.append_uvarint, value)
    assert v.read_uvarint(raw, 0) == (value, len(raw))


@pytest.mark.parametrize(
    "writer, value",
    [
        (v.encode_varint, v.INT32_MAX + 1),
        (v.encode_varint, v.INT32_MIN - 1),
        (v.encode_varlong, v.INT64_MIN - 1),
        (v.encode_uvarint, -1),
        (v.encode_uvarint, v.UINT32_MAX + 1),
    ],
)
def test_values_outside_the_type_are_encode_errors(writer, value):
    with pytest.raises(EncodeError, match="outside") as info:
        writer(value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("value", [-0x2001, -0x2000, -0x41, -0x40, 0x3F, 0x40, 0x1FFF, 0x2000])
def test_encode_varint_fast_path_edges(value):
    assert v.encode_varint(value) == _appended(v.append_varint, value)


@pytest.mark.parametrize("value", [0x7F, 0x80, 0x3FFF, 0x4000])
def test_encode_uvarint_fast_path_edges(value):
    assert v.encode_uvarint(value) == _appended(v.append_uvarint, value)
