"""Variable-length integers as the record layer sees them.

The codec (wire format, limits, fast paths) is ``kavka.protocol.varint``,
the one implementation Kavka has; its docstring says why it lives there.
This module gives it the record layer's error contract: a bad varint in a
record batch is a ``VarintError`` — a ``CorruptRecordBatch`` carrying the
byte position where the varint starts — never the wire's ``DecodeError``.

The hot loops (``record.decode_record``, the cleaner's key walk) call the
codec's readers directly and restate a ``VarintDecodeError`` with
``VarintError.restating`` once around each record. The readers here do the
same per call, for callers that read one value at a time (tools, tests).
Writers, sizes and limits are the codec's, under the names this layer has
always used; writers raise ``EncodeError`` (a ``ValueError``) for a value
outside the type. Pure functions; any thread.
"""

from __future__ import annotations

from kavka.protocol import varint as _codec
from kavka.protocol.buffers import Buffer
from kavka.protocol.records.batch import CorruptRecordBatch
from kavka.protocol.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAX_VARINT_BYTES,
    MAX_VARLONG_BYTES,
    UINT32_MAX,
    UINT64_MAX,
    VarintDecodeError,
    VarintProblem,
    encode_varint,
    encode_varlong,
    size_of_varint,
    size_of_varlong,
)
from kavka.protocol.varint import append_uvarint as write_unsigned_varint
from kavka.protocol.varint import append_varint as write_varint
from kavka.protocol.varint import append_varlong as write_varlong

__all__ = [  # the codec's names re-exported for the record layer, and this module's own
    "INT32_MAX", "INT32_MIN", "INT64_MAX", "INT64_MIN", "MAX_VARINT_BYTES", "MAX_VARLONG_BYTES", "UINT32_MAX",
    "UINT64_MAX", "VarintDecodeError", "VarintError", "VarintProblem", "encode_varint", "encode_varlong",
    "read_unsigned_varint", "read_varint", "read_varlong", "size_of_varint", "size_of_varlong",
    "write_unsigned_varint", "write_varint", "write_varlong",
]


class VarintError(CorruptRecordBatch):
    """A variable-length integer in a record batch that is too long, too
    large or truncated; ``position`` is the byte where it starts."""

    @classmethod
    def restating(cls, e: VarintDecodeError) -> VarintError:
        """This layer's error for the codec's ``e``, at the same position."""
        if e.problem is VarintProblem.TRUNCATED:
            message = f"{e.what} runs past the end of the buffer"
        elif e.problem is VarintProblem.TOO_LONG:
            message = f"{e.what} is longer than {e.max_bytes} bytes"
        else:
            message = f"{e.what} value {e.value} does not fit in {e.bits} bits"
        return cls(message, e.position)


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zigzag varint (int32) at ``pos`` -> ``(value, next_pos)``."""
    try:
        return _codec.read_varint(buf, pos)
    except VarintDecodeError as e:
        raise VarintError.restating(e) from None


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zigzag varlong (int64) at ``pos`` -> ``(value, next_pos)``."""
    try:
        return _codec.read_varlong(buf, pos)
    except VarintDecodeError as e:
        raise VarintError.restating(e) from None


def read_unsigned_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned varint (uint32) at ``pos`` -> ``(value, next_pos)``."""
    try:
        return _codec.read_uvarint(buf, pos)
    except VarintDecodeError as e:
        raise VarintError.restating(e) from None
