"""Writers of Kafka protocol primitive types (wire forms: see
``kavka.protocol.primitives``). ``write_x(value) -> bytes``; values out of
the type's range raise ``EncodeError``. Pure functions; any thread.
"""

from __future__ import annotations

import uuid

from kavka.protocol.buffers import Buffer
from kavka.protocol.errors import EncodeError
from kavka.protocol.structs import FLOAT64, INT8, INT16, INT32, INT64, UINT16, UINT32  # noqa: E402

# The one varint codec (kavka.protocol.varint) under the wire's names.
from kavka.protocol.varint import encode_uvarint as write_uvarint
from kavka.protocol.varint import encode_varint as write_varint
from kavka.protocol.varint import encode_varlong as write_varlong

__all__ = [  # what kavka.protocol.primitives re-exports
    "EMPTY_TAGGED_FIELDS", "write_array_len", "write_bool", "write_bytes", "write_compact_array_len",
    "write_compact_bytes", "write_compact_nullable_bytes", "write_compact_nullable_string",
    "write_compact_string", "write_float64", "write_int8", "write_int16", "write_int32", "write_int64",
    "write_nullable_bytes", "write_nullable_string", "write_string", "write_tagged_fields", "write_uint16",
    "write_uint32", "write_uuid", "write_uvarint", "write_varint", "write_varlong",
]


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


def write_nullable_bytes(v: Buffer | None) -> bytes:
    if v is None:
        return _NULL32
    return INT32.pack(len(v)) + bytes(v)


write_bytes = write_nullable_bytes


def write_compact_nullable_bytes(v: Buffer | None) -> bytes:
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


def write_tagged_fields(fields: list[tuple[int, Buffer]]) -> bytes:
    """A tagged-field block from ``(tag, payload)`` pairs sorted by tag."""
    if not fields:
        return EMPTY_TAGGED_FIELDS
    out = [write_uvarint(len(fields))]
    for tag, payload in fields:
        out.append(write_uvarint(tag))
        out.append(write_uvarint(len(payload)))
        out.append(bytes(payload))
    return b"".join(out)
