"""Decode the records of one v2 batch (lazily, decompressing when needed).

Not on the broker's hot path, which walks records without decoding them
(``validation``, in C; docs/ARCHITECTURE.md): used to compact, to check
idempotent sequence numbers, by tools (dump-log, the
console consumer) and by Kavka's own client.

The header is validated first (size, magic, CRC32C unless told otherwise).
A compressed records section is inflated at most to ``max_decompressed``
bytes. Then exactly ``record_count`` records must fill the section: a count
too large for the bytes is refused up front, offset deltas must rise and
stay within ``last_offset_delta``, and leftover bytes after the last record
are an error. Every failure is a ``CorruptRecordBatch`` subclass (records:
``CorruptRecord``; codecs: ``DecompressionError``). Pure; any thread.
"""

from __future__ import annotations

from collections.abc import Iterator

from kavka.protocol.buffers import Buffer
from kavka.protocol.records.batch import (
    HEADER_SIZE,
    Compression,
    CorruptRecordBatch,
    RecordBatchHeader,
    TimestampType,
    validate_batch,
)
from kavka.protocol.records.compression import decompress
from kavka.protocol.records.record import Record, decode_record

# Kafka bounds a compressed batch by message.max.bytes (1 MiB + 12 by
# default); 64 MiB leaves room for highly compressible data while keeping a
# bomb's cost fixed. Callers with other limits pass their own.
DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

# length, attributes, timestampDelta, offsetDelta, key length, value length,
# header count: one byte each at least.
MIN_RECORD_SIZE = 7


def iter_records(
    batch: bytes | bytearray | memoryview,
    *,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    check_crc: bool = True,
) -> Iterator[Record]:
    """Yield the records of the batch at the start of ``batch`` (bytes after
    its declared size are ignored). The header is validated at once;
    decompression waits for the first ``next()``; each record is decoded as
    it is asked for."""
    header = validate_batch(batch, 0, check_crc=check_crc)
    return _records(batch, header, max_decompressed)


def decode_batch(
    batch: bytes | bytearray | memoryview,
    *,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    check_crc: bool = True,
) -> tuple[RecordBatchHeader, list[Record]]:
    """The validated header and all records of the batch at the start of ``batch``."""
    header = validate_batch(batch, 0, check_crc=check_crc)
    return header, list(_records(batch, header, max_decompressed))


def records_section(
    batch: bytes | bytearray | memoryview,
    header: RecordBatchHeader,
    *,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> bytes | bytearray | memoryview:
    """The (decompressed) bytes holding the records of a validated batch."""
    body = memoryview(batch).cast("B")[HEADER_SIZE : header.size]
    codec_id = header.attributes & 0x07
    if codec_id == Compression.NONE:
        return body
    return decompress(Compression(codec_id), body, max_decompressed)


def _records(batch: Buffer, header: RecordBatchHeader, max_decompressed: int) -> Iterator[Record]:
    section = records_section(batch, header, max_decompressed=max_decompressed)
    if isinstance(section, memoryview) and isinstance(batch, bytes):
        # Indexing bytes is cheaper than a memoryview; same bytes, no copy.
        buf: Buffer = batch
        pos, end = HEADER_SIZE, header.size
    else:
        buf, pos, end = section, 0, len(section)
    count = header.record_count
    if count * MIN_RECORD_SIZE > end - pos:
        raise CorruptRecordBatch(
            f"batch declares {count} records but its {end - pos}-byte records section cannot hold them"
        )
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    log_append_time = header.max_timestamp if header.timestamp_type is TimestampType.LOG_APPEND_TIME else None
    last_delta = header.last_offset_delta
    previous = -1
    for _ in range(count):
        record, pos = decode_record(buf, pos, end, base_offset, base_timestamp, log_append_time)
        delta = record.offset_delta
        if not previous < delta <= last_delta:
            raise CorruptRecordBatch(
                f"record offset delta {delta} is not between the previous one ({previous}) "
                f"and the batch's last offset delta {last_delta}"
            )
        previous = delta
        yield record
    if pos != end:
        raise CorruptRecordBatch(f"{end - pos} bytes follow the batch's {count} declared records")
