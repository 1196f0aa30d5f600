"""Validation and offset assignment for appends.

A leader append (``validate_leader_batches``) checks every batch of the
produced bytes: whole (no trailing partial batch), no larger than
``max.message.bytes`` (MESSAGE_TOO_LARGE), magic 2, CRC32C (CORRUPT_MESSAGE),
at least one record and ``last_offset_delta == record_count - 1``
(INVALID_RECORD: a producer's batch is dense). Then Kafka's LogValidator
(``log_validator``) walks every record (in C) — layout, offset deltas,
record count, keys on compacted topics, CreateTime timestamps (KIP-937) —
and assigns offsets by rewriting the 16 bytes in front of the CRC'd region
(base offset, length, partition leader epoch), written as a separate small
buffer in front of the untouched rest (``pwritev``): no copy of the batch.
With ``message.timestamp.type=LogAppendTime`` the attributes and max
timestamp (inside the CRC) change too: a new 61-byte header whose CRC is
continued over the untouched records. A topic ``compression.type`` other
than the producer's codec recompresses the batch (Kafka does the same).

A follower append (``validate_follower_batches``) keeps offsets and epochs
as the leader wrote them, checks CRCs and that offsets increase, and ignores
a trailing partial batch (a fetch response may end mid-batch); its records
are not walked again (the leader validated them, as in Kafka).

Pure functions over buffers; any thread.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.batch import (
    LOG_OVERHEAD,
    CorruptRecordBatch,
    InvalidRecordBatch,
    RecordBatchHeader,
    peek_size,
    validate_batch,
)
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.errors import (
    CorruptMessageError,
    InvalidRecordError,
    MessageTooLargeError,
    RecordListTooLargeError,
    UnexpectedAppendOffsetError,
)
from kavka.storage.file_records import Buffer
from kavka.storage.log_config import LogConfig
from kavka.storage.log_validator import LogValidator

_INT32 = struct.Struct(">i")
NO_TIMESTAMP = -1
# named tuples made on every produce are made with tuple.__new__, without
# their generated __new__'s Python call
_new = tuple.__new__


class LogAppendInfo(NamedTuple):
    """What an append did. Offsets are inclusive; ``log_append_time`` is -1
    for CreateTime topics; ``log_start_offset`` as it was after the append.
    This and ``ValidatedBatches`` are named tuples, not frozen dataclasses:
    every produce makes one of each, and a frozen dataclass pays an
    ``object.__setattr__`` call per field."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    batch_count: int
    valid_bytes: int
    last_leader_epoch: int = -1


class ValidatedBatches(NamedTuple):
    """Batches checked and ready to write: ``parts`` is what ``pwritev``
    writes (offset-assigned prefixes and untouched remainders)."""

    parts: list[Buffer]
    headers: list[RecordBatchHeader]
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    size: int


def _validate_one(view: memoryview, pos: int) -> RecordBatchHeader:
    try:
        return validate_batch(view, pos)
    except CorruptRecordBatch as e:
        raise CorruptMessageError(f"corrupt record batch: {e}") from e
    except InvalidRecordBatch as e:
        raise InvalidRecordError(f"invalid record batch: {e}") from e


def validate_leader_batches(
    records: Buffer,
    config: LogConfig,
    *,
    next_offset: int,
    leader_epoch: int,
    now_ms: int,
    topic_partition: TopicPartition | str = "",
    origin: AppendOrigin = AppendOrigin.CLIENT,
    validator: LogValidator | None = None,
) -> ValidatedBatches:
    """Check produced batches and assign offsets from ``next_offset``.

    The hot path of a produce: per batch one header parse and one CRC pass
    (in C) over the batch, then the record walk (in C, ``LogValidator``),
    no copy of an uncompressed batch's bytes; the config values are read
    once (``validator``: one made earlier for this topic partition, kept by
    the caller, used when it was made for this config and origin). Nothing is returned
    (so nothing appended) unless every batch passes."""
    view = records if type(records) is memoryview else memoryview(records)
    if view.format != "B":
        view = view.cast("B")
    n = len(view)
    if n == 0:
        raise InvalidRecordError("the produce request holds no record batch")
    if n > config.segment_bytes:
        raise RecordListTooLargeError(
            f"{n} bytes of records can never fit a segment of segment.bytes={config.segment_bytes}"
        )
    if validator is None or validator.config is not config or validator.origin is not origin:
        validator = LogValidator(config, topic_partition, now_ms, origin)
    else:
        validator.at(now_ms)
    parts: list[Buffer] = []
    headers: list[RecordBatchHeader] = []
    offset = next_offset
    max_ts, offset_of_max_ts, count, total = NO_TIMESTAMP, next_offset, 0, 0
    max_message_bytes = config.max_message_bytes
    pos = 0
    while pos < n:
        size = _INT32.unpack_from(view, pos + 8)[0] + LOG_OVERHEAD if n - pos >= LOG_OVERHEAD else None
        if size is None or size > n - pos:
            raise CorruptMessageError(f"the records end with a partial batch at byte {pos} of {n}")
        if size > max_message_bytes:
            raise MessageTooLargeError(
                f"record batch of {size} bytes at byte {pos} is larger than max.message.bytes="
                f"{max_message_bytes}; split it or raise the topic's max.message.bytes"
            )
        try:
            header = validate_batch(view, pos)
        except CorruptRecordBatch as e:
            raise CorruptMessageError(f"corrupt record batch: {e}") from e
        except InvalidRecordBatch as e:
            raise InvalidRecordError(f"invalid record batch: {e}") from e
        delta = header.last_offset_delta
        if header.record_count < 1 or delta != header.record_count - 1:
            raise InvalidRecordError(
                f"batch at byte {pos} has record count {header.record_count} but last offset delta "
                f"{delta}; a producer's batch must hold count-1 as its delta"
            )
        batch = validator.assign(view, pos, header, offset, leader_epoch)
        parts += batch.parts
        if batch.max_timestamp > max_ts:
            max_ts, offset_of_max_ts = batch.max_timestamp, batch.offset_of_max_timestamp
        headers.append(batch.header)
        offset += delta + 1
        count += header.record_count
        total += batch.size
        pos += size
    return _new(ValidatedBatches, (parts, headers, next_offset, offset - 1, max_ts, offset_of_max_ts, count, total))


def validate_follower_batches(records: Buffer, *, log_end_offset: int) -> ValidatedBatches | None:
    """Check replicated batches (offsets kept). None when there is no whole
    batch. Raises ``CorruptMessageError`` or ``UnexpectedAppendOffsetError``."""
    view = memoryview(records).cast("B")
    n = len(view)
    headers: list[RecordBatchHeader] = []
    pos = 0
    prev_next = log_end_offset
    max_ts, offset_of_max_ts, count = NO_TIMESTAMP, -1, 0
    while n - pos >= LOG_OVERHEAD:
        size = peek_size(view, pos)
        assert size is not None
        if size >= LOG_OVERHEAD and size > n - pos:
            break  # trailing partial batch of a fetch response
        header = _validate_one(view, pos)
        if header.base_offset < prev_next:
            first = headers[0].base_offset if headers else header.base_offset
            raise UnexpectedAppendOffsetError(
                f"replicated batch at byte {pos} starts at offset {header.base_offset}, below the expected "
                f"{prev_next} (log end offset {log_end_offset}); offsets must increase",
                first,
                header.last_offset,
            )
        if header.max_timestamp > max_ts:
            max_ts, offset_of_max_ts = header.max_timestamp, header.last_offset
        headers.append(header)
        prev_next = header.next_offset
        count += header.record_count
        pos += size
    if not headers:
        return None
    return ValidatedBatches(
        [view[:pos]],
        headers,
        headers[0].base_offset,
        headers[-1].last_offset,
        max_ts,
        offset_of_max_ts if offset_of_max_ts >= 0 else headers[0].base_offset,
        count,
        pos,
    )


def split_follower_batches(batches: ValidatedBatches) -> tuple[ValidatedBatches, ValidatedBatches]:
    """Split in two halves by batch (when offsets span more than a segment's
    int32 relative range)."""
    view = batches.parts[0]
    half = len(batches.headers) // 2
    cut = sum(h.size for h in batches.headers[:half])
    return _from_headers(view[:cut], batches.headers[:half]), _from_headers(view[cut:], batches.headers[half:])


def _from_headers(view: Buffer, headers: list[RecordBatchHeader]) -> ValidatedBatches:
    best = max(headers, key=lambda h: h.max_timestamp)
    return ValidatedBatches(
        [view],
        headers,
        headers[0].base_offset,
        headers[-1].last_offset,
        best.max_timestamp,
        best.last_offset,
        sum(h.record_count for h in headers),
        len(view),
    )
