"""Variable-length integers of record batch v2 (zigzag varint/varlong) and the
unsigned varint of flexible protocol versions.

Wire format (protocol guide, "Record" and KIP-482): little-endian base-128
groups of 7 bits, the high bit of each byte set while more bytes follow.
Signed values are zigzag-mapped first (0, -1, 1, -2 ... become 0, 1, 2, 3 ...)
so small negative numbers stay short: ``-1`` (a null key) is one byte ``0x01``.

A 32-bit varint takes at most 5 bytes and a 64-bit varlong at most 10; a
longer run, a value past 32/64 bits, or a run that reaches the end of the
buffer is a ``VarintError`` (a ``CorruptRecordBatch``) carrying the position.

Readers take ``(buf, pos)`` and return ``(value, next_pos)``; ``buf`` is any
object whose indexing yields ints (``bytes``, ``bytearray``, a byte
``memoryview``). Writers append to a ``bytearray``. Pure functions; any thread.
"""

from __future__ import annotations

from kavka.protocol.records.batch import CorruptRecordBatch

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1
UINT64_MAX = (1 << 64) - 1

MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


class VarintError(CorruptRecordBatch):
    """A variable-length integer that is too long, too large or truncated."""


def _read_unsigned(buf, pos: int, max_bytes: int, limit: int, what: str) -> tuple[int, int]:
    # Multi-byte slow path shared by every reader; the one-byte case is inlined
    # by the callers because it covers most lengths and deltas in practice.
    start = pos
    end = len(buf)
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise VarintError(f"{what} runs past the end of the buffer", start)
        if pos - start >= max_bytes:
            raise VarintError(f"{what} is longer than {max_bytes} bytes", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    if result > limit:
        raise VarintError(f"{what} value {result} does not fit in {limit.bit_length()} bits", start)
    return result, pos


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Zigzag varint (int32) at ``pos`` -> ``(value, next_pos)``."""
    try:
        b = buf[pos]
    except IndexError:
        raise VarintError("varint runs past the end of the buffer", pos) from None
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    if pos + 1 < len(buf) and buf[pos + 1] < 0x80:
        raw = (b & 0x7F) | (buf[pos + 1] << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    raw, pos = _read_unsigned(buf, pos, MAX_VARINT_BYTES, UINT32_MAX, "varint")
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """Zigzag varlong (int64) at ``pos`` -> ``(value, next_pos)``."""
    try:
        b = buf[pos]
    except IndexError:
        raise VarintError("varlong runs past the end of the buffer", pos) from None
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    if pos + 1 < len(buf) and buf[pos + 1] < 0x80:
        raw = (b & 0x7F) | (buf[pos + 1] << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    raw, pos = _read_unsigned(buf, pos, MAX_VARLONG_BYTES, UINT64_MAX, "varlong")
    return (raw >> 1) ^ -(raw & 1), pos


def read_unsigned_varint(buf, pos: int) -> tuple[int, int]:
    """Unsigned varint (uint32, flexible versions' compact lengths) at ``pos``."""
    try:
        b = buf[pos]
    except IndexError:
        raise VarintError("unsigned varint runs past the end of the buffer", pos) from None
    if b < 0x80:
        return b, pos + 1
    return _read_unsigned(buf, pos, MAX_VARINT_BYTES, UINT32_MAX, "unsigned varint")


def _write_unsigned(value: int, out: bytearray) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(value: int, out: bytearray) -> None:
    """Append ``value`` (an int32) as a zigzag varint."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint value {value} is outside int32")
    z = ((value << 1) ^ (value >> 31)) & UINT32_MAX
    if z < 0x80:
        out.append(z)
    elif z < 0x4000:
        out.append((z & 0x7F) | 0x80)
        out.append(z >> 7)
    else:
        _write_unsigned(z, out)


def write_varlong(value: int, out: bytearray) -> None:
    """Append ``value`` (an int64) as a zigzag varlong."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong value {value} is outside int64")
    z = ((value << 1) ^ (value >> 63)) & UINT64_MAX
    if z < 0x80:
        out.append(z)
    elif z < 0x4000:
        out.append((z & 0x7F) | 0x80)
        out.append(z >> 7)
    else:
        _write_unsigned(z, out)


def write_unsigned_varint(value: int, out: bytearray) -> None:
    """Append ``value`` (0..2**32-1) as an unsigned varint."""
    if not 0 <= value <= UINT32_MAX:
        raise ValueError(f"unsigned varint value {value} is outside uint32")
    _write_unsigned(value, out)


def encode_varint(value: int) -> bytes:
    out = bytearray()
    write_varint(value, out)
    return bytes(out)


def encode_varlong(value: int) -> bytes:
    out = bytearray()
    write_varlong(value, out)
    return bytes(out)


def size_of_varint(value: int) -> int:
    """Bytes ``write_varint(value)`` would append."""
    z = ((value << 1) ^ (value >> 31)) & UINT32_MAX
    return max(1, (z.bit_length() + 6) // 7)


def size_of_varlong(value: int) -> int:
    """Bytes ``write_varlong(value)`` would append."""
    z = ((value << 1) ^ (value >> 63)) & UINT64_MAX
    return max(1, (z.bit_length() + 6) // 7)
