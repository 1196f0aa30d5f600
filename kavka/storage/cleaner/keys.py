"""Key-only reading of a v2 batch, for the cleaner's offset-map pass.

Building the map needs each record's offset and key; deciding what a batch
keeps needs also whether the value is null (a tombstone). Neither needs the
value bytes or the headers. This walks the record layout (see
``kavka.protocol.records.record``) reading only ``length``, ``offsetDelta``,
the key and the value's length, and jumps to the next record by
``length`` — several times faster than decoding whole records, which the cleaner
then does only for batches it must rebuild. Every length is checked against the bytes left, so a
damaged section raises ``CorruptRecordBatch`` (the caller marks the
partition uncleanable), never an IndexError or a huge slice.

The batch header is validated (CRC32C) first; compressed sections are
inflated with the reader's bounded ``records_section``. Pure; any thread.
"""

from __future__ import annotations

from collections.abc import Iterator

from kavka.protocol.records.batch import HEADER_SIZE, Compression, CorruptRecordBatch, validate_batch
from kavka.protocol.records.reader import DEFAULT_MAX_DECOMPRESSED, records_section
from kavka.protocol.records.varint import VarintError
from kavka.protocol.varint import VarintDecodeError, read_varint, read_varlong


def iter_keys(
    batch: bytes, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
) -> Iterator[tuple[int, bytes | None, bool]]:
    """``(offset, key, is_tombstone)`` of each record of the batch at the
    start of ``batch`` (``is_tombstone``: the value is null)."""
    header = validate_batch(batch)
    if header.attributes & 0x07 == Compression.NONE:
        buf, pos, end = batch, HEADER_SIZE, header.size
    else:
        buf = bytes(records_section(batch, header, max_decompressed=max_decompressed))
        pos, end = 0, len(buf)
    base = header.base_offset
    last_delta = header.last_offset_delta
    previous = -1
    for _ in range(header.record_count):
        start = pos
        try:
            b = buf[pos]
            if b < 0x80:
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            else:
                length, pos = read_varint(buf, pos)
            record_end = pos + length
            if length < 1 or record_end > end:
                raise CorruptRecordBatch(f"record length {length} does not fit the {end - pos} bytes left", start)
            # attributes (1 byte), then timestampDelta (varlong)
            b = buf[pos + 1]
            p = pos + 2 if b < 0x80 else read_varlong(buf, pos + 1)[1]
            b = buf[p]
            if b < 0x80:
                delta, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                delta, p = read_varint(buf, p)
            b = buf[p]
            if b < 0x80:
                key_len, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                key_len, p = read_varint(buf, p)
        except IndexError:
            raise CorruptRecordBatch("record fields run past the end of the records section", start) from None
        except VarintDecodeError as e:
            # Restated once per record, not per varint (kavka.protocol.records.varint).
            raise VarintError.restating(e) from None
        if not previous < delta <= last_delta:
            raise CorruptRecordBatch(f"record offset delta {delta} out of order (previous {previous})", start)
        previous = delta
        if key_len < -1 or p + key_len > record_end:
            raise CorruptRecordBatch(f"record key length {key_len} does not fit the record", start)
        key = None if key_len < 0 else bytes(buf[p : p + key_len])
        p += max(key_len, 0)
        try:
            b = buf[p]
            value_len = (b >> 1) ^ -(b & 1) if b < 0x80 else read_varint(buf, p)[0]
        except IndexError:
            raise CorruptRecordBatch("record value length runs past the end of the record", start) from None
        except VarintDecodeError as e:
            raise VarintError.restating(e) from None
        if value_len < -1 or p + value_len > record_end:
            raise CorruptRecordBatch(f"record value length {value_len} does not fit the record", start)
        yield base + delta, key, value_len == -1
        pos = record_end
    if pos != end:
        raise CorruptRecordBatch(f"{end - pos} bytes follow the batch's {header.record_count} declared records")
