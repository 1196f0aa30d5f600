"""Kafka's variable-length integers: the one codec Kavka has for them.

Three types (protocol guide, "Protocol Primitive Types" and "Record"):

    unsigned varint   uint32; compact lengths and tagged fields of flexible
                      versions (KIP-482), at most 5 bytes
    varint            int32 zigzag-mapped, then as above (record lengths,
                      offset deltas, key/value/header lengths), at most 5 bytes
    varlong           int64 zigzag-mapped (timestamp deltas), at most 10 bytes

Little-endian groups of 7 bits, the high bit of each byte set while more
bytes follow. Zigzag maps 0, -1, 1, -2 ... to 0, 1, 2, 3 ... so small
negative numbers stay short: ``-1`` (a null key) is the one byte ``0x01``.
A run longer than the type allows, a value past its width, or a run that
reaches the end of the buffer is an error carrying where the run starts.

Why one codec, and why here. The wire primitives and the record layer each
had their own. This is the record layer's (one- and two-byte cases
unrolled, loops bounded by the type's width, the start position on every
error), moved to the bottom of ``kavka.protocol`` so both use it in the
direction the package already depends: the record layer may use a protocol
primitive, while the primitives importing ``kavka.protocol.records`` would
drag batches and compression into every wire decode.

Errors, one per layer's contract:

* Readers raise ``VarintDecodeError``, a ``DecodeError`` worded as the wire
  codec words it, so ``kavka.protocol.primitives`` re-exports these readers
  unchanged and the compiled struct decoders add the field path to it as
  to any other field error.
* It also carries ``problem``, ``what``, ``position``, ``max_bytes``,
  ``bits`` and ``value``, so the record layer restates it as its own
  ``VarintError`` (a ``CorruptRecordBatch`` naming the byte position; see
  ``kavka.protocol.records.varint``) once around a whole record rather than
  per call: a ``try`` costs nothing until something is raised (Python >=
  3.11), and the one-byte varints that hot loops inline never call here.
* Writers raise ``EncodeError`` (a ``ValueError``) for a value outside the
  type's range.

Readers are ``read_x(buf, pos) -> (value, next_pos)`` over any object
whose indexing yields ints (``bytes``, ``bytearray``, a byte
``memoryview``); ``append_x(value, out)`` appends to a ``bytearray``;
``encode_x(value) -> bytes``. Pure functions; any thread.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from kavka.protocol.buffers import Buffer
from kavka.protocol.errors import DecodeError, EncodeError

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1
UINT64_MAX = (1 << 64) - 1

MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


class VarintProblem(Enum):
    """What is wrong with a variable-length integer."""

    TRUNCATED = "truncated"  # the buffer ends before the last byte
    TOO_LONG = "too long"  # more bytes than the type's width allows
    TOO_LARGE = "too large"  # the value does not fit the type's width


class VarintDecodeError(DecodeError):
    """A variable-length integer that cannot be decoded.

    ``str()`` is the wire codec's wording; ``problem``, ``what`` ("varint",
    "varlong" or "unsigned varint"), ``position`` (where the run starts),
    ``max_bytes``, ``bits`` and ``value`` (the decoded value for
    ``TOO_LARGE``) let another layer word it its own way."""

    def __init__(self, problem: VarintProblem, what: str, position: int, max_bytes: int, bits: int,
                 value: int = 0) -> None:
        self.problem = problem
        self.what = what
        self.position = position
        self.max_bytes = max_bytes
        self.bits = bits
        self.value = value
        if problem is VarintProblem.TRUNCATED:
            reason = f"truncated: {what} needs 1 bytes, 0 remain"
        elif problem is VarintProblem.TOO_LONG:
            reason = f"{what} longer than {max_bytes} bytes"
        else:
            reason = f"{what} {value} does not fit {bits} bits"
        super().__init__(reason)


def _read_unsigned(buf: Buffer, pos: int, max_bytes: int, limit: int, what: str) -> tuple[int, int]:
    # Multi-byte slow path shared by every reader; the one- and two-byte
    # cases are unrolled by the callers because they cover most lengths and
    # deltas in practice.
    start = pos
    end = len(buf)
    result = 0
    shift = 0
    while True:
        # A byte past the width is wrong whatever follows, so say so even
        # when the buffer also ends there.
        if pos - start >= max_bytes:
            raise VarintDecodeError(VarintProblem.TOO_LONG, what, start, max_bytes, limit.bit_length())
        if pos >= end:
            raise VarintDecodeError(VarintProblem.TRUNCATED, what, start, max_bytes, limit.bit_length())
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    if result > limit:
        raise VarintDecodeError(VarintProblem.TOO_LARGE, what, start, max_bytes, limit.bit_length(), result)
    return result, pos


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned varint (uint32) at ``pos`` -> ``(value, next_pos)``."""
    try:
        b = buf[pos]
    except IndexError:
        raise VarintDecodeError(VarintProblem.TRUNCATED, "unsigned varint", pos, MAX_VARINT_BYTES, 32) from None
    if b < 0x80:
        return b, pos + 1
    if pos + 1 < len(buf):
        b2 = buf[pos + 1]
        if b2 < 0x80:
            return (b & 0x7F) | (b2 << 7), pos + 2
    return _read_unsigned(buf, pos, MAX_VARINT_BYTES, UINT32_MAX, "unsigned varint")


def _zigzag_reader(max_bytes: int, limit: int, what: str) -> Callable[[Buffer, int], tuple[int, int]]:
    # read_varint and read_varlong differ only in these three constants.
    bits = limit.bit_length()

    def read(buf: Buffer, pos: int) -> tuple[int, int]:
        try:
            b = buf[pos]
        except IndexError:
            raise VarintDecodeError(VarintProblem.TRUNCATED, what, pos, max_bytes, bits) from None
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        if pos + 1 < len(buf):
            b2 = buf[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                return (raw >> 1) ^ -(raw & 1), pos + 2
        raw, pos = _read_unsigned(buf, pos, max_bytes, limit, what)
        return (raw >> 1) ^ -(raw & 1), pos

    read.__name__ = read.__qualname__ = f"read_{what}"
    read.__doc__ = f"Zigzag {what} (int{bits}) at ``pos`` -> ``(value, next_pos)``."
    return read


read_varint = _zigzag_reader(MAX_VARINT_BYTES, UINT32_MAX, "varint")
read_varlong = _zigzag_reader(MAX_VARLONG_BYTES, UINT64_MAX, "varlong")


def _append_unsigned(value: int, out: bytearray) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _outside_uint32(value: int) -> EncodeError:
    return EncodeError(f"unsigned varint value {value} is outside uint32")


def append_uvarint(value: int, out: bytearray) -> None:
    """Append ``value`` (0..2**32-1) as an unsigned varint."""
    if not 0 <= value <= UINT32_MAX:
        raise _outside_uint32(value)
    _append_unsigned(value, out)


# The two zigzag appenders are written out rather than made by a factory like
# the readers: as closures their bounds and mask become cell loads, which
# measured 1-4% slower in encode_record (about seven appends per record).
def append_varint(value: int, out: bytearray) -> None:
    """Append ``value`` (an int32) as a zigzag varint."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise EncodeError(f"varint value {value} is outside int32")
    z = ((value << 1) ^ (value >> 31)) & UINT32_MAX
    if z < 0x80:
        out.append(z)
    elif z < 0x4000:
        out.append((z & 0x7F) | 0x80)
        out.append(z >> 7)
    else:
        _append_unsigned(z, out)


def append_varlong(value: int, out: bytearray) -> None:
    """Append ``value`` (an int64) as a zigzag varlong."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise EncodeError(f"varlong value {value} is outside int64")
    z = ((value << 1) ^ (value >> 63)) & UINT64_MAX
    if z < 0x80:
        out.append(z)
    elif z < 0x4000:
        out.append((z & 0x7F) | 0x80)
        out.append(z >> 7)
    else:
        _append_unsigned(z, out)


# Compact lengths and tag counts are nearly always one byte: hand out shared
# objects instead of building a bytearray each time.
_ONE_BYTE = tuple(bytes([i]) for i in range(0x80))


def encode_uvarint(value: int) -> bytes:
    """``value`` (0..2**32-1) as an unsigned varint."""
    if 0 <= value < 0x80:
        return _ONE_BYTE[value]
    if 0 < value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if not 0 <= value <= UINT32_MAX:
        raise _outside_uint32(value)
    out = bytearray()
    _append_unsigned(value, out)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """``value`` (an int32) as a zigzag varint."""
    if -0x2000 <= value < 0x2000:  # one or two bytes
        z = (value << 1) ^ (value >> 31)
        return _ONE_BYTE[z] if z < 0x80 else bytes(((z & 0x7F) | 0x80, z >> 7))
    out = bytearray()
    append_varint(value, out)
    return bytes(out)


def encode_varlong(value: int) -> bytes:
    """``value`` (an int64) as a zigzag varlong."""
    out = bytearray()
    append_varlong(value, out)
    return bytes(out)


def size_of_varint(value: int) -> int:
    """Bytes ``append_varint(value)`` would append."""
    z = ((value << 1) ^ (value >> 31)) & UINT32_MAX
    return max(1, (z.bit_length() + 6) // 7)


def size_of_varlong(value: int) -> int:
    """Bytes ``append_varlong(value)`` would append."""
    z = ((value << 1) ^ (value >> 63)) & UINT64_MAX
    return max(1, (z.bit_length() + 6) // 7)
