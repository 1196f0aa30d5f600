"""Record batch v2 header: parse, validate, patch — without decoding records.

Wire and disk format (magic 2, big-endian), 61-byte header then records::

    offset  size  field
    0       8     base_offset             patched by the leader on append
    8       4     batch_length            bytes after this field
    12      4     partition_leader_epoch  patched by the leader on append
    16      1     magic                   always 2
    17      4     crc                     CRC32C of bytes 21..end
    21      2     attributes              codec bits 0-2, timestamp type bit 3,
                                          transactional bit 4, control bit 5,
                                          delete-horizon bit 6
    23      4     last_offset_delta
    27      8     base_timestamp
    35      8     max_timestamp
    43      8     producer_id
    51      2     producer_epoch
    53      4     base_sequence
    57      4     record_count
    61      ...   records (possibly compressed)

The CRC covers attributes onward, so base offset and leader epoch can be
rewritten in place (``patch_base_offset``, ``patch_leader_epoch``) without
recomputing it: this is how the broker assigns offsets on the hot path.

Pure functions over ``bytes``/``bytearray``/``memoryview``; any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from enum import IntEnum
from typing import NamedTuple

try:  # the folding CRC32C where it is built and the CPU has SSE4.2 (setup.py)
    from kavka.protocol.records._crc32c import crc32c as _crc32c_of
except ImportError:
    from crc32c import crc32c as _crc32c_of

LOG_OVERHEAD = 12  # base_offset + batch_length
HEADER_SIZE = 61
MAGIC_V2 = 2
CRC_START = 21
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == HEADER_SIZE
HEADER_STRUCT = _HEADER  # field order as in the table above; for writers
CRC_OFFSET = 17
_UINT32 = struct.Struct(">I")
_OFFSET_LEN = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class Compression(IntEnum):
    """Codec in attribute bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40
_MAX_CODEC_ID = int(Compression.ZSTD)


class InvalidRecordBatch(ValueError):
    """A batch that must not be stored or served. ``position`` is the byte
    offset of the batch in the buffer or file it came from (when known)."""

    def __init__(self, message: str, position: int | None = None) -> None:
        self.position = position
        super().__init__(message if position is None else f"{message} (at byte {position})")


class CorruptRecordBatch(InvalidRecordBatch):
    """CRC mismatch or an impossible length: the bytes were damaged."""


class RecordBatchHeader(NamedTuple):
    """The decoded 61-byte header of one v2 batch. A named tuple rather than
    a frozen dataclass: every produced batch makes one, straight from the
    struct's tuple (one allocation, no per-field ``__setattr__``)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & ATTR_COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType(1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: with attribute bit 6 set the base timestamp is the time
        after which the cleaner may drop this batch's tombstones and markers."""
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


# RecordBatchHeader from the struct's 13-tuple, without the Python-level
# _make (its length check is the struct's own).
_new_header = tuple.__new__


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC32C (Castagnoli) in C; ``value``: the CRC of the bytes before
    ``data``, to continue it (a rewritten header before untouched records).
    ``kavka.protocol.records._crc32c`` where built (carry-less folding on
    AVX-512 CPUs with VPCLMULQDQ, the crc32 instruction elsewhere), else
    the ``crc32c`` package."""
    return _crc32c_of(data, value)


def peek_size(buf: bytes | bytearray | memoryview, pos: int = 0) -> int | None:
    """Whole size of the batch starting at ``pos``, or None if fewer than 12
    bytes remain. The size is not validated here."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    size: int = _INT32.unpack_from(buf, pos + 8)[0]
    return size + LOG_OVERHEAD


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> RecordBatchHeader:
    """Decode the header at ``pos``. Checks only that 61 bytes exist and
    magic is 2; use ``validate_batch`` for lengths and CRC."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordBatch(
            f"record batch header needs {HEADER_SIZE} bytes, {len(buf) - pos} remain", pos
        )
    fields = _HEADER.unpack_from(buf, pos)
    if fields[3] != MAGIC_V2:
        raise InvalidRecordBatch(
            f"unsupported record batch magic {fields[3]} (only magic 2 is accepted)", pos
        )
    return _new_header(RecordBatchHeader, fields)


def validate_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, check_crc: bool = True
) -> RecordBatchHeader:
    """Parse and validate one batch at ``pos``: the length fits the buffer and
    is at least a header, magic is 2, the record count and offset delta agree,
    and the CRC32C matches. Raises ``InvalidRecordBatch``/``CorruptRecordBatch``."""
    remaining = len(buf) - pos
    if remaining < LOG_OVERHEAD:
        raise CorruptRecordBatch(f"truncated batch: {remaining} bytes, need at least {LOG_OVERHEAD}", pos)
    batch_length = _INT32.unpack_from(buf, pos + 8)[0]
    size = batch_length + LOG_OVERHEAD
    if size < HEADER_SIZE:
        raise CorruptRecordBatch(f"batch length {batch_length} is smaller than a v2 header", pos)
    if size > remaining:
        raise CorruptRecordBatch(f"batch declares {size} bytes but only {remaining} remain", pos)
    # parse_header inlined (this runs for every produced batch); the 61
    # bytes exist: size >= HEADER_SIZE and size <= remaining
    fields = _HEADER.unpack_from(buf, pos)
    if fields[3] != MAGIC_V2:
        raise InvalidRecordBatch(f"unsupported record batch magic {fields[3]} (only magic 2 is accepted)", pos)
    header = _new_header(RecordBatchHeader, fields)
    if header.record_count < 0 or header.last_offset_delta < 0:
        raise CorruptRecordBatch(
            f"negative record count {header.record_count} or last offset delta {header.last_offset_delta}", pos
        )
    codec_id = header.attributes & ATTR_COMPRESSION_MASK
    if codec_id > _MAX_CODEC_ID:
        # Compare the raw bits: Compression(5..7) itself would raise ValueError.
        raise InvalidRecordBatch(f"unknown compression codec id {codec_id}", pos)
    if check_crc:
        view = buf if type(buf) is memoryview else memoryview(buf)
        actual = _crc32c_of(view[pos + CRC_START : pos + size])
        if actual != header.crc:
            raise CorruptRecordBatch(
                f"CRC32C mismatch: header says {header.crc:#010x}, bytes give {actual:#010x}", pos
            )
    return header


def write_crc(buf: bytearray | memoryview, pos: int = 0) -> int:
    """Compute the CRC32C of the batch at ``pos`` (its length field must be
    set) and store it in the header; return it. For batch writers."""
    size = _INT32.unpack_from(buf, pos + 8)[0] + LOG_OVERHEAD
    crc = _crc32c_of(memoryview(buf)[pos + CRC_START : pos + size])
    _UINT32.pack_into(buf, pos + CRC_OFFSET, crc)
    return crc


def patch_base_offset(buf: bytearray | memoryview, base_offset: int, pos: int = 0) -> None:
    """Rewrite the base offset in place (outside the CRC)."""
    _INT64.pack_into(buf, pos, base_offset)


def patch_leader_epoch(buf: bytearray | memoryview, epoch: int, pos: int = 0) -> None:
    """Rewrite the partition leader epoch in place (outside the CRC)."""
    _INT32.pack_into(buf, pos + 12, epoch)


def iter_batches(
    buf: bytes | bytearray | memoryview, *, check_crc: bool = True, start: int = 0
) -> Iterator[tuple[int, RecordBatchHeader]]:
    """Yield ``(position, header)`` for each whole, valid batch in ``buf``.
    Stops at a trailing partial batch (a fetch may end mid-batch, as Kafka's
    does); raises on a damaged one."""
    pos = start
    end = len(buf)
    while end - pos >= LOG_OVERHEAD:
        size = _INT32.unpack_from(buf, pos + 8)[0] + LOG_OVERHEAD
        if size >= HEADER_SIZE and pos + size > end:
            return
        header = validate_batch(buf, pos, check_crc=check_crc)
        yield pos, header
        pos += header.size
