"""Kafka's LogValidator for record batch v2, on the leader: every record of
a produced batch walked and checked, then the batch made ready to store
(offsets assigned, timestamps stamped, recompressed for the topic).

``log_append.validate_leader_batches`` frames the produced bytes and checks
each batch's header (size, magic, CRC32C, record count) first; for each
batch it then calls ``LogValidator.assign``, which

1. walks the records (``kavka.protocol.records.validation``, in C): the
   records section is decompressed first when the batch is compressed
   (bounded by ``MAX_DECOMPRESSED``); a record that does not follow the v2
   layout, offset deltas other than 0..count-1, a record count that
   disagrees with the records, trailing bytes: INVALID_RECORD naming the
   record. Then, per record as Kafka's ``validateRecord``: a null key on a
   compacted topic (INVALID_RECORD, "Compacted topic cannot accept message
   without key in topic partition X"), a CreateTime timestamp outside
   ``message.timestamp.before.max.ms`` / ``after.max.ms`` of the broker's
   clock (KIP-937; the deprecated ``message.timestamp.difference.max.ms``
   while those are at their defaults), a producer-set LogAppendTime
   (both INVALID_TIMESTAMP). Every bad record goes back in
   ``record_errors`` (KIP-467) and nothing of the append is stored;
2. client batches only (``AppendOrigin.CLIENT``, as Kafka's
   ``validateBatch``): an idempotent batch (producer id >= 0) must carry a
   sequence;
3. stores the batch as it came when it can: the base offset and leader
   epoch are rewritten in the 16 bytes outside the CRC (no copy). The
   61-byte header is rewritten (CRC recomputed over the untouched records,
   still no copy of them) when the topic is LogAppendTime (timestamp-type
   bit and max timestamp = now, as Kafka's ``setMaxTimestamp``) or when a
   CreateTime batch's max timestamp disagrees with its records';
4. recompresses when the topic's ``compression.type`` names a codec other
   than the producer's (``producer`` keeps it; control batches are never
   recompressed, as Kafka), from the already-decompressed records section:
   offset deltas are dense, so the records are reused byte for byte under a
   new header. ``max.message.bytes`` is checked again on the result
   (MESSAGE_TOO_LARGE), as Kafka checks after validation.

One object per log, config and origin (``Log`` keeps it, since the
messages and limits it derives from the config cost more than a small
batch's walk), set to the broker's clock before each append with
``at(now_ms)``; pure apart from that clock value; one thread at a time
(the log's lock).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records import validation as _validation
from kavka.protocol.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    Compression,
    RecordBatchHeader,
    crc32c,
)
from kavka.protocol.records.builder import assemble_batch
from kavka.protocol.records.compression import DecompressionError, decompress
from kavka.protocol.records.validation import (
    INVALID_TIMESTAMP,
    TS_ALWAYS,
    TS_NONE,
    TS_RANGE,
    RecordWalk,
    walk_records,
)
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.errors import (
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    RecordError,
)
from kavka.storage.file_records import Buffer
from kavka.storage.log_config import LogConfig

# Kafka streams a compressed batch through its validator; Kavka inflates it
# whole, so the output is bounded: 64 MiB is 64 times the default
# max.message.bytes, far beyond what a producer's batch.size yields.
MAX_DECOMPRESSED = 64 * 1024 * 1024
# Kafka lists every bad record; a batch of millions of keyless records
# would make that list (and the response) huge, so it stops here and the
# message says how many there were in all.
MAX_RECORD_ERRORS = 1000

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_PREFIX = struct.Struct(">qii")  # base_offset, batch_length, partition_leader_epoch
PREFIX_SIZE = _PREFIX.size
_ATTRS = struct.Struct(">h")
_INT64 = struct.Struct(">q")
_UINT32 = struct.Struct(">I")
_UNCOMPRESSED = int(Compression.NONE)  # an int: an IntEnum member's lookup costs more than the compare
_new_walk = _new = tuple.__new__  # named tuples (RecordWalk from the extension's) without a Python-level __new__
_CODECS = {"uncompressed": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
           "lz4": Compression.LZ4, "zstd": Compression.ZSTD}


class AssignedBatch(NamedTuple):
    """One batch ready to write: ``parts`` (for ``pwritev``) hold ``size``
    bytes; ``header`` is the producer's header with the timestamps the
    leader stored; the max timestamp and the offset of its first record."""

    parts: list[Buffer]
    size: int
    header: RecordBatchHeader
    max_timestamp: int
    offset_of_max_timestamp: int


class LogValidator:
    """See the module docstring."""

    def __init__(self, config: LogConfig, topic_partition: TopicPartition | str, now_ms: int,
                 origin: AppendOrigin = AppendOrigin.CLIENT) -> None:
        self.config = config
        self.topic_partition = topic_partition
        self.origin = origin
        self.log_append_time = config.log_append_time
        self.max_message_bytes = config.max_message_bytes
        self.compression_type = config.compression_type
        self.target = _CODECS.get(config.compression_type)  # None: "producer", keep the producer's codec
        self.key_message = (f"Compacted topic cannot accept message without key in topic partition {topic_partition}"
                            if config.compact else None)
        self._before, self._after = config.timestamp_before_max_ms, config.timestamp_after_max_ms
        self.producer_lat_message = (f"Invalid timestamp type in a record batch for {topic_partition}. Producer "
                                     f"should not set timestamp type to LogAppendTime.")
        self.at(now_ms)

    def at(self, now_ms: int) -> LogValidator:
        """Judge timestamps against ``now_ms`` (the broker's clock at this
        append) from now on; returns the validator."""
        before, after = self._before, self._after
        self.now_ms = now_ms
        # Long.MAX_VALUE is "no limit" (Kafka's default): Java's overflowing
        # subtraction never exceeds it, so no timestamp is refused then.
        self.ts_lo = _INT64_MIN if before == _INT64_MAX else max(_INT64_MIN, now_ms - before)
        self.ts_hi = _INT64_MAX if after == _INT64_MAX else min(_INT64_MAX, now_ms + after)
        self.ts_bounded = self.ts_lo != _INT64_MIN or self.ts_hi != _INT64_MAX
        return self

    # -- 1. the record walk ---------------------------------------------------------------------
    def walk(self, view: memoryview, pos: int, header: RecordBatchHeader) -> tuple[RecordWalk, Buffer]:
        """Walk the records of the batch at ``pos``; return the walk and the
        (decompressed) records section. Raises ``InvalidRecordError`` /
        ``InvalidTimestampError`` with the records at fault."""
        attributes = header.attributes
        body = view[pos + HEADER_SIZE: pos + header.batch_length + LOG_OVERHEAD]
        codec = attributes & ATTR_COMPRESSION_MASK
        section: Buffer
        if codec == _UNCOMPRESSED:
            section = body
        else:
            try:
                section = decompress(Compression(codec), body, MAX_DECOMPRESSED)
            except DecompressionError as e:
                raise InvalidRecordError(
                    f"the record batch at byte {pos} for {self.topic_partition} cannot be read: {e}"
                ) from None
        lat_batch = bool(attributes & ATTR_TIMESTAMP_TYPE)
        if self.log_append_time:
            ts_mode = TS_ALWAYS if lat_batch else TS_NONE
        elif lat_batch and header.max_timestamp == -1:
            ts_mode = TS_ALWAYS  # Kafka's else-branch: no CreateTime to check, and the producer set LogAppendTime
        else:
            ts_mode = TS_RANGE if self.ts_bounded else TS_NONE
        native = _validation.native_walk if _validation.NATIVE else None
        result: RecordWalk
        if native is not None:  # the C walk called directly: this runs for every produced batch
            result = _new_walk(RecordWalk, native(
                section, header.record_count, header.base_offset, header.base_timestamp, lat_batch,
                header.max_timestamp if lat_batch else 0, self.key_message, ts_mode, self.ts_lo, self.ts_hi,
                self.producer_lat_message, MAX_RECORD_ERRORS,
            ))
        else:
            result = walk_records(
                section, header.record_count, header.base_offset, header.base_timestamp,
                header.max_timestamp if lat_batch else None, self.key_message, ts_mode, self.ts_lo, self.ts_hi,
                self.producer_lat_message, MAX_RECORD_ERRORS, native=False,
            )
        if result.error_count:
            raise self._refusal(result, pos)
        return result, section

    def _refusal(self, result: RecordWalk, pos: int) -> InvalidRecordError | InvalidTimestampError:
        assert result.errors
        if result.structural:
            index, _code, message = result.errors[0]
            if index < 0:
                return InvalidRecordError(
                    f"the record batch at byte {pos} for {self.topic_partition} is invalid: {message}")
            return InvalidRecordError(
                f"record {index} of the record batch at byte {pos} for {self.topic_partition} is invalid: {message}",
                (RecordError(index, message),))
        errors = tuple(RecordError(i, m) for i, _code, m in result.errors)
        # As Kafka's processRecordErrors: INVALID_TIMESTAMP wins when any record has it.
        if any(code == INVALID_TIMESTAMP for _i, code, _m in result.errors):
            return InvalidTimestampError("One or more records have been rejected due to invalid timestamp", errors)
        shown = ", ".join(f"RecordError(batchIndex={e.batch_index}, message='{e.message}')" for e in errors[:3])
        return InvalidRecordError(
            f"One or more records have been rejected due to {result.error_count} record errors in total, and only "
            f"showing the first three errors at most: [{shown}]", errors)

    # -- 2. client-only batch rules -------------------------------------------------------------
    def check_batch(self, header: RecordBatchHeader) -> None:
        """Kafka's ``validateBatch`` rules for a client's batch (the record
        count and control-batch rules are checked by the caller)."""
        if self.origin is AppendOrigin.CLIENT and header.producer_id >= 0 and header.base_sequence < 0:
            raise InvalidRecordError(
                f"Invalid sequence number {header.base_sequence} in record batch with producerId "
                f"{header.producer_id} in topic partition {self.topic_partition}")

    # -- 3 and 4. offsets, timestamps, codec ----------------------------------------------------
    def assign(self, view: memoryview, pos: int, header: RecordBatchHeader, base_offset: int,
               leader_epoch: int) -> AssignedBatch:
        """Validate the batch at ``pos`` (whose header passed the framing and
        CRC checks) and make it ready to store at ``base_offset``."""
        attributes = header.attributes
        if header.producer_id >= 0 and header.base_sequence < 0:  # check_batch's rule, tested here first
            self.check_batch(header)
        result, section = self.walk(view, pos, header)
        size = header.batch_length + LOG_OVERHEAD
        if self.log_append_time:
            attributes |= ATTR_TIMESTAMP_TYPE
            max_ts, offset_of_max = self.now_ms, base_offset
        else:
            attributes &= ~ATTR_TIMESTAMP_TYPE
            max_ts, offset_of_max = result.max_timestamp, base_offset + result.offset_delta_of_max_timestamp
        stored = header if max_ts == header.max_timestamp else header._replace(max_timestamp=max_ts)
        target = self.target
        if target is not None and target != header.attributes & ATTR_COMPRESSION_MASK \
                and not header.attributes & ATTR_CONTROL:
            batch = assemble_batch(
                section, base_offset=base_offset, last_offset_delta=header.last_offset_delta,
                record_count=header.record_count, base_timestamp=header.base_timestamp, max_timestamp=max_ts,
                attributes=(attributes & ~ATTR_COMPRESSION_MASK) | int(target), producer_id=header.producer_id,
                producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
                partition_leader_epoch=leader_epoch,
            )
            if len(batch) > self.max_message_bytes:
                raise MessageTooLargeError(
                    f"record batch at byte {pos} for {self.topic_partition} is {len(batch)} bytes once stored "
                    f"with compression.type={self.compression_type}, larger than max.message.bytes="
                    f"{self.max_message_bytes}")
            return AssignedBatch([batch], len(batch), stored, max_ts, offset_of_max)
        prefix = _PREFIX.pack(base_offset, header.batch_length, leader_epoch)
        if attributes == header.attributes and max_ts == header.max_timestamp:
            return _new(AssignedBatch, ([prefix, view[pos + PREFIX_SIZE: pos + size]], size, stored, max_ts,
                                        offset_of_max))
        records = view[pos + HEADER_SIZE: pos + size]
        # Attributes or max timestamp change: a new 61-byte header whose CRC
        # continues over the untouched records (Kafka's setMaxTimestamp).
        head = bytearray(view[pos: pos + HEADER_SIZE])
        head[:PREFIX_SIZE] = prefix
        _ATTRS.pack_into(head, 21, attributes)
        _INT64.pack_into(head, 35, max_ts)
        _UINT32.pack_into(head, 17, crc32c(records, crc32c(memoryview(head)[CRC_START:])))
        return AssignedBatch([head, records], size, stored, max_ts, offset_of_max)

