"""Writers of Kafka protocol primitive types (wire forms: see
``kavka.protocol.primitives``). ``write_x(value) -> bytes``; values out of
the type's range raise ``EncodeError``. Pure functions; any thread.
"""

from __future__ import annotations

import struct
import uuid

from kavka.protocol.errors import EncodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")


_UV1 = [bytes([i]) for i in range(128)]


def write_uvarint(value: int) -> bytes:
    """Unsigned varint; ``value`` in 0 .. 2**32-1."""
    if 0 <= value < 128:
        return _UV1[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint {value} out of range 0..2**32-1")
    return _write_varbits(value)


def write_uvarlong(value: int) -> bytes:
    if value < 0 or value > 0xFFFFFFFFFFFFFFFF:
        raise EncodeError(f"unsigned varlong {value} out of range 0..2**64-1")
    return _write_varbits(value)


def _write_varbits(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_varint(value: int) -> bytes:
    if not -(1 << 31) <= value < (1 << 31):
        raise EncodeError(f"varint {value} out of int32 range")
    return write_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(value: int) -> bytes:
    if not -(1 << 63) <= value < (1 << 63):
        raise EncodeError(f"varlong {value} out of int64 range")
    return write_uvarlong(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def write_int8(v: int) -> bytes: return INT8.pack(v)
def write_int16(v: int) -> bytes: return INT16.pack(v)
def write_int32(v: int) -> bytes: return INT32.pack(v)
def write_int64(v: int) -> bytes: return INT64.pack(v)
def write_uint16(v: int) -> bytes: return UINT16.pack(v)
def write_uint32(v: int) -> bytes: return UINT32.pack(v)
def write_float64(v: float) -> bytes: return FLOAT64.pack(v)
def write_bool(v: bool) -> bytes: return b"\x01" if v else b"\x00"


def write_uuid(v: uuid.UUID) -> bytes:
    return v.bytes


_NULL16 = INT16.pack(-1)
_NULL32 = INT32.pack(-1)


def write_nullable_string(v: str | None) -> bytes:
    if v is None:
        return _NULL16
    data = v.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes exceeds the int16 length limit")
    return INT16.pack(len(data)) + data


write_string = write_nullable_string


def write_compact_nullable_string(v: str | None) -> bytes:
    if v is None:
        return b"\x00"
    data = v.encode("utf-8")
    return write_uvarint(len(data) + 1) + data


write_compact_string = write_compact_nullable_string


def write_nullable_bytes(v) -> bytes:
    if v is None:
        return _NULL32
    return INT32.pack(len(v)) + bytes(v)


write_bytes = write_nullable_bytes


def write_compact_nullable_bytes(v) -> bytes:
    if v is None:
        return b"\x00"
    return write_uvarint(len(v) + 1) + bytes(v)


write_compact_bytes = write_compact_nullable_bytes


def write_array_len(n: int | None) -> bytes:
    """int32 count; None for a null array."""
    return _NULL32 if n is None else INT32.pack(n)


def write_compact_array_len(n: int | None) -> bytes:
    return b"\x00" if n is None else write_uvarint(n + 1)


EMPTY_TAGGED_FIELDS = b"\x00"


def write_tagged_fields(fields: list[tuple[int, bytes]]) -> bytes:
    """A tagged-field block from ``(tag, payload)`` pairs sorted by tag."""
    if not fields:
        return EMPTY_TAGGED_FIELDS
    out = [write_uvarint(len(fields))]
    for tag, payload in fields:
        out.append(write_uvarint(tag))
        out.append(write_uvarint(len(payload)))
        out.append(bytes(payload))
    return b"".join(out)
