"""Kafka protocol primitive types: readers and writers.

Wire forms (big-endian; see the protocol guide, "Protocol Primitive Types"):

    int8 int16 int32 int64 uint16 uint32 float64   fixed size
    bool                 1 byte, 0 false, anything else true
    uuid                 16 bytes
    unsigned varint      7 bits a byte, low group first, at most 5 bytes
    varint / varlong     zigzag then as above (at most 5 / 10 bytes)
    string               int16 length N (-1 = null if nullable), N UTF-8 bytes
    compact string       unsigned varint N+1 (0 = null), N bytes
    bytes                int32 length N (-1 = null), N bytes
    compact bytes        unsigned varint N+1 (0 = null), N bytes
    array                int32 count N (-1 = null), N elements
    compact array        unsigned varint N+1 (0 = null), N elements
    tagged fields        unsigned varint count, then per field: unsigned
                         varint tag, unsigned varint size, size bytes

Readers are functions ``read_x(buf, pos) -> (value, new_pos)`` over any
buffer (``bytes``, ``bytearray``, ``memoryview``); ``Reader`` wraps them with
a position for hand-written parsers (headers). Every declared length or
count is checked against the bytes that remain BEFORE anything is allocated
(CVE-2022-34917: a tiny request declaring a huge array made Kafka allocate
it); the memory of what a whole request decodes to is bounded by
``kavka.protocol.budget``. Every failure is a ``DecodeError``. Writers ``write_x(value) -> bytes``.
The varint readers and writers are ``kavka.protocol.varint``'s, re-exported.

Pure functions; any thread.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

from kavka.protocol.budget import TAGGED_FIELD_COST, DecodeBudget
from kavka.protocol.buffers import Buffer
from kavka.protocol.errors import DecodeError
from kavka.protocol.structs import FLOAT64 as FLOAT64  # noqa: E402
from kavka.protocol.structs import INT8 as INT8
from kavka.protocol.structs import INT16 as INT16
from kavka.protocol.structs import INT32 as INT32
from kavka.protocol.structs import INT64 as INT64
from kavka.protocol.structs import UINT16 as UINT16
from kavka.protocol.structs import UINT32 as UINT32

# Varints come from the one codec Kavka has (see its docstring); its readers
# raise VarintDecodeError, a DecodeError, so they are used here unwrapped.
from kavka.protocol.varint import read_uvarint as read_uvarint
from kavka.protocol.varint import read_varint as read_varint
from kavka.protocol.varint import read_varlong as read_varlong

# A reader: (value, position after it) from a buffer and a position.
ReadFn: TypeAlias = Callable[[Buffer, int], tuple[Any, int]]
_T = TypeVar("_T")

BOOL = struct.Struct(">?")
UUID16 = struct.Struct(">16s")

ZERO_UUID = uuid.UUID(int=0)

_FIXED = {
    "int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64,
    "uint16": UINT16, "uint32": UINT32, "float64": FLOAT64, "bool": BOOL,
}
FIXED_SIZE = {name: s.size for name, s in _FIXED.items()} | {"uuid": 16}
STRUCT_CODE = {"int8": "b", "int16": "h", "int32": "i", "int64": "q",
               "uint16": "H", "uint32": "I", "float64": "d", "bool": "?"}


def length_error(what: str, n: int, remaining: int) -> DecodeError:
    return DecodeError(f"{what} {n} exceeds {remaining} remaining bytes")


def truncated(what: str, need: int, remaining: int) -> DecodeError:
    return DecodeError(f"truncated: {what} needs {need} bytes, {max(remaining, 0)} remain")


# ---------------------------------------------------------------- readers


def _fixed_reader(s: struct.Struct, name: str) -> ReadFn:
    unpack_from = s.unpack_from
    size = s.size

    def read(buf: Buffer, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise truncated(name, size, len(buf) - pos)
        return unpack_from(buf, pos)[0], pos + size

    read.__name__ = f"read_{name}"
    read.__doc__ = f"Read one {name}."
    return read


read_int8: Callable[[Buffer, int], tuple[int, int]] = _fixed_reader(INT8, "int8")
read_int16: Callable[[Buffer, int], tuple[int, int]] = _fixed_reader(INT16, "int16")
read_int32: Callable[[Buffer, int], tuple[int, int]] = _fixed_reader(INT32, "int32")
read_int64: Callable[[Buffer, int], tuple[int, int]] = _fixed_reader(INT64, "int64")
read_uint16: Callable[[Buffer, int], tuple[int, int]] = _fixed_reader(UINT16, "uint16")
read_uint32: Callable[[Buffer, int], tuple[int, int]] = _fixed_reader(UINT32, "uint32")
read_float64: Callable[[Buffer, int], tuple[float, int]] = _fixed_reader(FLOAT64, "float64")
read_bool: Callable[[Buffer, int], tuple[bool, int]] = _fixed_reader(BOOL, "bool")


def read_uuid(buf: Buffer, pos: int) -> tuple[uuid.UUID, int]:
    if pos + 16 > len(buf):
        raise truncated("uuid", 16, len(buf) - pos)
    return uuid.UUID(bytes=bytes(buf[pos : pos + 16])), pos + 16


def _utf8(buf: Buffer, start: int, n: int) -> str:
    try:
        return str(buf[start : start + n], "utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"string is not valid UTF-8 ({e.reason} at byte {e.start})") from None


def read_string_len(buf: Buffer, pos: int) -> tuple[int, int]:
    """int16 length of a (non-compact) string; -1 for null."""
    if pos + 2 > len(buf):
        raise truncated("string length", 2, len(buf) - pos)
    n = INT16.unpack_from(buf, pos)[0]
    pos += 2
    if n < -1:
        raise DecodeError(f"negative string length {n}")
    if n > len(buf) - pos:
        raise length_error("string length", n, len(buf) - pos)
    return n, pos


def read_compact_len(buf: Buffer, pos: int, what: str) -> tuple[int, int]:
    """Compact length (N+1 as unsigned varint); -1 for null."""
    raw, pos = read_uvarint(buf, pos)
    n = raw - 1
    if n > len(buf) - pos:
        raise length_error(what, n, len(buf) - pos)
    return n, pos


def read_nullable_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    n, pos = read_string_len(buf, pos)
    if n < 0:
        return None, pos
    return _utf8(buf, pos, n), pos + n


def read_string(buf: Buffer, pos: int) -> tuple[str, int]:
    n, pos = read_string_len(buf, pos)
    if n < 0:
        raise DecodeError("null string where null is not allowed")
    return _utf8(buf, pos, n), pos + n


def read_compact_nullable_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    n, pos = read_compact_len(buf, pos, "compact string length")
    if n < 0:
        return None, pos
    return _utf8(buf, pos, n), pos + n


def read_compact_string(buf: Buffer, pos: int) -> tuple[str, int]:
    n, pos = read_compact_len(buf, pos, "compact string length")
    if n < 0:
        raise DecodeError("null string where null is not allowed")
    return _utf8(buf, pos, n), pos + n


def read_bytes_len(buf: Buffer, pos: int) -> tuple[int, int]:
    """int32 length of (non-compact) bytes; -1 for null."""
    if pos + 4 > len(buf):
        raise truncated("bytes length", 4, len(buf) - pos)
    n = INT32.unpack_from(buf, pos)[0]
    pos += 4
    if n < -1:
        raise DecodeError(f"negative bytes length {n}")
    if n > len(buf) - pos:
        raise length_error("length", n, len(buf) - pos)
    return n, pos


def read_nullable_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_bytes_len(buf, pos)
    if n < 0:
        return None, pos
    return bytes(buf[pos : pos + n]), pos + n


def read_bytes(buf: Buffer, pos: int) -> tuple[bytes, int]:
    n, pos = read_bytes_len(buf, pos)
    if n < 0:
        raise DecodeError("null bytes where null is not allowed")
    return bytes(buf[pos : pos + n]), pos + n


def read_compact_nullable_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_compact_len(buf, pos, "compact bytes length")
    if n < 0:
        return None, pos
    return bytes(buf[pos : pos + n]), pos + n


def read_compact_bytes(buf: Buffer, pos: int) -> tuple[bytes, int]:
    n, pos = read_compact_len(buf, pos, "compact bytes length")
    if n < 0:
        raise DecodeError("null bytes where null is not allowed")
    return bytes(buf[pos : pos + n]), pos + n


def read_records(buf: Buffer, pos: int) -> tuple[Buffer | None, int]:
    """Nullable bytes kept as a zero-copy slice of ``buf`` (a memoryview
    when ``buf`` is one): record batches are never decoded here."""
    n, pos = read_bytes_len(buf, pos)
    if n < 0:
        return None, pos
    return buf[pos : pos + n], pos + n


def read_compact_records(buf: Buffer, pos: int) -> tuple[Buffer | None, int]:
    n, pos = read_compact_len(buf, pos, "compact records length")
    if n < 0:
        return None, pos
    return buf[pos : pos + n], pos + n


def read_array_len(buf: Buffer, pos: int, min_element_size: int = 1) -> tuple[int, int]:
    """int32 element count (-1 = null), checked so that ``count *
    min_element_size`` fits in the remaining bytes."""
    if pos + 4 > len(buf):
        raise truncated("array length", 4, len(buf) - pos)
    n = INT32.unpack_from(buf, pos)[0]
    pos += 4
    if n < -1:
        raise DecodeError(f"negative array length {n}")
    if n * min_element_size > len(buf) - pos:
        raise length_error("array length", n, len(buf) - pos)
    return n, pos


def read_compact_array_len(buf: Buffer, pos: int, min_element_size: int = 1) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos)
    n = raw - 1
    if n * min_element_size > len(buf) - pos:
        raise length_error("compact array length", n, len(buf) - pos)
    return n, pos


def read_tagged_fields(buf: Buffer, pos: int, budget: DecodeBudget | None = None) -> tuple[dict[int, bytes], int]:
    """A tagged-field block as ``{tag: bytes}``; tags must strictly increase.
    Each field is charged to ``budget`` (when given) before it is kept."""
    count, pos = read_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise length_error("tagged field count", count, len(buf) - pos)
    fields: dict[int, bytes] = {}
    last = -1
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        if tag <= last:
            raise DecodeError(f"tagged field {tag} out of order or repeated (after {last})")
        last = tag
        size, pos = read_uvarint(buf, pos)
        if size > len(buf) - pos:
            raise length_error(f"tagged field {tag} size", size, len(buf) - pos)
        if budget is not None:
            budget.charge(TAGGED_FIELD_COST + size, f"tagged field {tag}")
        fields[tag] = bytes(buf[pos : pos + size])
        pos += size
    return fields, pos


class Reader:
    """A position over a buffer for hand-written parsers (request and
    response headers). Methods read at ``pos`` and advance it."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self.buf = buf if isinstance(buf, memoryview) else memoryview(buf)
        self.pos = pos

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def _do(self, fn: Callable[[Buffer, int], tuple[_T, int]]) -> _T:
        value, self.pos = fn(self.buf, self.pos)
        return value

    def int8(self) -> int: return self._do(read_int8)
    def int16(self) -> int: return self._do(read_int16)
    def int32(self) -> int: return self._do(read_int32)
    def int64(self) -> int: return self._do(read_int64)
    def uvarint(self) -> int: return self._do(read_uvarint)
    def varint(self) -> int: return self._do(read_varint)
    def varlong(self) -> int: return self._do(read_varlong)
    def uuid(self) -> uuid.UUID: return self._do(read_uuid)
    def nullable_string(self) -> str | None: return self._do(read_nullable_string)
    def compact_nullable_string(self) -> str | None: return self._do(read_compact_nullable_string)
    def tagged_fields(self) -> dict[int, bytes]: return self._do(read_tagged_fields)


# Writers live in kavka.protocol.writers; re-exported here so one module
# names every primitive.
from kavka.protocol.writers import *  # noqa: E402,F401,F403
