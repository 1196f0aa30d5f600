"""One record inside a v2 batch: the input type, the decoded type, and the
codec between them and bytes.

Wire format (protocol guide, "Record"; all varints zigzag)::

    length          varint   bytes of everything after this field
    attributes      int8     unused, written as 0
    timestampDelta  varlong  timestamp - batch base timestamp
    offsetDelta     varint   offset - batch base offset
    keyLength       varint   -1 = null key
    key             bytes
    valueLength     varint   -1 = null value
    value           bytes
    headerCount     varint
    headers         [headerKeyLength varint, headerKey utf8,
                     headerValueLength varint (-1 = null), headerValue bytes]

Decoding trusts no length: each is checked against the bytes left in the
record before anything is sliced, a header count larger than the bytes
could hold is refused before the loop (CVE-2022-34917 is the same mistake
with arrays), and the declared record length must equal what the fields
consumed. Every failure is a ``CorruptRecord`` naming the field and byte,
or for a malformed varint a ``VarintError`` (the codec's error restated once
per record; see ``kavka.protocol.records.varint``). Pure functions; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from kavka.protocol.buffers import Buffer
from kavka.protocol.records.batch import CorruptRecordBatch
from kavka.protocol.records.varint import VarintError, write_varint, write_varlong
from kavka.protocol.varint import VarintDecodeError, read_varint, read_varlong


class CorruptRecord(CorruptRecordBatch):
    """A record whose bytes do not follow the v2 record layout."""


@dataclass(frozen=True, slots=True)
class SimpleRecord:
    """A record to be written: the producer's view (no offset yet).

    ``timestamp`` is milliseconds since the epoch; header keys are text,
    header values bytes or None."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Record:
    """A record decoded from a batch.

    ``offset`` = batch base offset + ``offset_delta``. ``timestamp`` is the
    effective one: base timestamp + ``timestamp_delta`` for CreateTime, the
    batch's max timestamp for LogAppendTime (as Kafka's consumers see it).
    ``attributes`` is the record's own int8 (unused by Kafka, kept for tools)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    offset_delta: int
    timestamp_delta: int
    attributes: int = 0

    def to_simple(self) -> SimpleRecord:
        return SimpleRecord(self.key, self.value, self.timestamp, self.headers)


def encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: tuple[tuple[str, bytes | None], ...] = (),
    attributes: int = 0,
) -> int:
    """Append one record (length prefix included) to ``out``; return the
    number of bytes appended."""
    body = bytearray()
    body.append(attributes & 0xFF)
    write_varlong(timestamp_delta, body)
    write_varint(offset_delta, body)
    if key is None:
        body.append(1)  # zigzag(-1)
    else:
        write_varint(len(key), body)
        body += key
    if value is None:
        body.append(1)
    else:
        write_varint(len(value), body)
        body += value
    write_varint(len(headers), body)
    for h_key, h_value in headers:
        if not isinstance(h_key, str):
            raise TypeError(f"record header key must be str, got {type(h_key).__name__}")
        raw = h_key.encode("utf-8")
        write_varint(len(raw), body)
        body += raw
        if h_value is None:
            body.append(1)
        else:
            write_varint(len(h_value), body)
            body += h_value
    before = len(out)
    write_varint(len(body), out)
    out += body
    return len(out) - before


def _read_bytes(buf: Buffer, pos: int, end: int, field: str) -> tuple[bytes | None, int]:
    try:
        b = buf[pos]
    except IndexError:
        raise CorruptRecord(f"record {field} length runs past the end of the buffer", pos) from None
    if b == 1:
        return None, pos + 1
    if b < 0x80:
        n = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        n, pos = read_varint(buf, pos)
    if n < 0:
        if n == -1:
            return None, pos
        raise CorruptRecord(f"record {field} length {n} is negative", pos)
    if n > end - pos:
        raise CorruptRecord(f"record {field} length {n} exceeds the {max(end - pos, 0)} bytes left in the record", pos)
    return bytes(buf[pos : pos + n]), pos + n


def decode_record(
    buf: Buffer,
    pos: int,
    end: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None = None,
) -> tuple[Record, int]:
    """Decode the record at ``pos`` that must lie within ``buf[:end]``.

    Returns ``(record, next_pos)``. ``log_append_time`` is the batch's max
    timestamp when its timestamp type is LogAppendTime, else None."""
    # One-byte varints (the common case for deltas, null markers, header
    # counts) are decoded inline: a function call per field would cost more
    # than the rest of the record. Longer ones go to the checked readers.
    start = pos
    try:
        b = buf[pos]
        if b < 0x80:
            length, pos = (b >> 1) ^ -(b & 1), pos + 1
        else:
            length, pos = read_varint(buf, pos)
        if length < 1:
            # At least the attributes byte; Kafka rejects the same.
            raise CorruptRecord(f"record length {length} is too small", start)
        record_end = pos + length
        if record_end > end:
            raise CorruptRecord(f"record declares {length} bytes but only {end - pos} remain", start)
        attributes = buf[pos]
        if attributes >= 0x80:
            attributes -= 0x100
        b = buf[pos + 1]
        if b < 0x80:
            ts_delta, p = (b >> 1) ^ -(b & 1), pos + 2
        else:
            ts_delta, p = read_varlong(buf, pos + 1)
        b = buf[p]
        if b < 0x80:
            off_delta, p = (b >> 1) ^ -(b & 1), p + 1
        else:
            off_delta, p = read_varint(buf, p)
        key, p = _read_bytes(buf, p, record_end, "key")
        value, p = _read_bytes(buf, p, record_end, "value")
        b = buf[p]
        if b == 0:
            count, p = 0, p + 1
        else:
            count, p = read_varint(buf, p)
        if count:
            if count < 0:
                raise CorruptRecord(f"record header count {count} is negative", p)
            # Each header takes at least two bytes (two one-byte lengths).
            if count * 2 > record_end - p:
                raise CorruptRecord(
                    f"record header count {count} cannot fit in the {max(record_end - p, 0)} bytes left", p
                )
            headers = []
            for _ in range(count):
                raw_key, p = _read_bytes(buf, p, record_end, "header key")
                if raw_key is None:
                    raise CorruptRecord("record header key is null", p)
                try:
                    h_key = raw_key.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise CorruptRecord(f"record header key is not UTF-8: {exc.reason}", p) from None
                h_value, p = _read_bytes(buf, p, record_end, "header value")
                headers.append((h_key, h_value))
            header_tuple = tuple(headers)
        else:
            header_tuple = ()
    except IndexError:
        raise CorruptRecord("record fields run past the end of the buffer", start) from None
    except VarintDecodeError as e:
        # The codec's error in this layer's terms, restated once per record
        # rather than around each varint call.
        raise VarintError.restating(e) from None
    if p != record_end:
        raise CorruptRecord(f"record declares {length} bytes but its fields take {p - (record_end - length)}", start)
    timestamp = base_timestamp + ts_delta if log_append_time is None else log_append_time
    return (
        Record(base_offset + off_delta, timestamp, key, value, header_tuple, off_delta, ts_delta, attributes),
        p,
    )
