"""Write v2 record batches: new ones from producer records, and the log
cleaner's rewrite of a batch's surviving records.

The layout written is the one ``batch`` documents (61-byte header, records
as ``record`` documents, the records section compressed as a whole when a
codec is set). Offsets are ``base_offset + offset_delta``; timestamps are
``base_timestamp + timestamp_delta`` where the base timestamp is the first
record's (or the KIP-534 delete horizon); the CRC32C is computed last, over
attributes onward.

Who calls: producers in ``kavka.client`` and tests (``build_batch``), the
group coordinator and transaction markers (``control``), the log cleaner
(``rebuild_batch``). Pure functions; any thread.
"""

from __future__ import annotations

from collections.abc import Iterable

from kavka.protocol.records.batch import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Compression,
    RecordBatchHeader,
    TimestampType,
    write_crc,
)
from kavka.protocol.records.compression import compress
from kavka.protocol.records.record import Record, SimpleRecord, encode_record
from kavka.protocol.records.varint import INT32_MAX, INT64_MAX, INT64_MIN

_INT16 = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), INT32_MAX)
_INT64 = (INT64_MIN, INT64_MAX)


def _check_range(name: str, value: int, bounds: tuple[int, int]) -> None:
    if not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{name} {value!r} is outside [{bounds[0]}, {bounds[1]}]")


def _attributes(
    compression: Compression,
    timestamp_type: TimestampType,
    is_transactional: bool,
    is_control: bool,
    has_delete_horizon: bool,
) -> int:
    attributes = int(compression)
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    if is_control:
        attributes |= ATTR_CONTROL
    if has_delete_horizon:
        attributes |= ATTR_DELETE_HORIZON
    return attributes


def assemble_batch(
    records_section: bytes | bytearray | memoryview,
    *,
    base_offset: int,
    last_offset_delta: int,
    record_count: int,
    base_timestamp: int,
    max_timestamp: int,
    attributes: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    partition_leader_epoch: int,
) -> bytes:
    """Header + (already encoded) records section -> one batch with its CRC.

    The section is compressed here with the codec in ``attributes``."""
    _check_range("base_offset", base_offset, _INT64)
    _check_range("last_offset_delta", last_offset_delta, _INT32)
    _check_range("base offset + last offset delta", base_offset + last_offset_delta, _INT64)
    _check_range("partition_leader_epoch", partition_leader_epoch, _INT32)
    _check_range("producer_id", producer_id, _INT64)
    _check_range("producer_epoch", producer_epoch, _INT16)
    _check_range("base_sequence", base_sequence, _INT32)
    _check_range("base_timestamp", base_timestamp, _INT64)
    _check_range("max_timestamp", max_timestamp, _INT64)
    payload = compress(Compression(attributes & 0x07), records_section)
    size = HEADER_SIZE + len(payload)
    _check_range("batch size", size - LOG_OVERHEAD, (0, INT32_MAX))
    buf = bytearray(HEADER_SIZE)
    buf += payload
    HEADER_STRUCT.pack_into(
        buf,
        0,
        base_offset,
        size - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_V2,
        0,  # CRC, written below once every covered byte is in place
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    write_crc(buf)
    return bytes(buf)


def build_batch(
    records: Iterable[SimpleRecord],
    *,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A new batch holding ``records`` at consecutive offsets from
    ``base_offset``. At least one record (Kafka refuses empty batches from
    producers). LogAppendTime needs ``log_append_time``, which becomes the
    max timestamp (the time every consumer sees); CreateTime takes the
    largest record timestamp."""
    compression = Compression(compression)
    timestamp_type = TimestampType(timestamp_type)
    items = list(records)
    if not items:
        raise ValueError("a record batch needs at least one record")
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        if log_append_time is None:
            raise ValueError("timestamp_type LOG_APPEND_TIME needs log_append_time")
    elif log_append_time is not None:
        raise ValueError("log_append_time is only meaningful with timestamp_type LOG_APPEND_TIME")
    if is_transactional and producer_id < 0:
        raise ValueError("a transactional batch needs a producer id >= 0")
    base_timestamp = items[0].timestamp
    section = bytearray()
    max_timestamp = base_timestamp
    for delta, rec in enumerate(items):
        ts = rec.timestamp
        if ts > max_timestamp:
            max_timestamp = ts
        encode_record(section, delta, ts - base_timestamp, rec.key, rec.value, rec.headers)
    if log_append_time is not None:
        max_timestamp = log_append_time
    return assemble_batch(
        section,
        base_offset=base_offset,
        last_offset_delta=len(items) - 1,
        record_count=len(items),
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        attributes=_attributes(compression, timestamp_type, is_transactional, False, False),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
    )


def rebuild_batch(
    header: RecordBatchHeader,
    records: list[Record],
    *,
    delete_horizon: int | None = None,
) -> bytes:
    """The log cleaner's rewrite of one batch keeping only ``records``.

    As Kafka's cleaner does (MemoryRecords.filterTo): the base offset, the
    last offset delta (so the batch's last offset and last sequence do not
    move back and an idempotent producer sees no gap), producer id, epoch,
    base sequence, partition leader epoch, transactional and control flags
    and the codec are kept; each record keeps its offset. LogAppendTime
    batches keep their max timestamp; CreateTime ones take the survivors'
    largest. ``delete_horizon`` (KIP-534) sets attribute bit 6 and becomes the
    base timestamp; the caller passes ``header.delete_horizon_ms`` to keep an
    existing one.

    With no survivors the result is Kafka's retained empty batch: header
    only, zero records, uncompressed, both timestamps the old max timestamp,
    kept so the producer's last sequence survives compaction."""
    log_append = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    if not records:
        return assemble_batch(
            b"",
            base_offset=header.base_offset,
            last_offset_delta=header.last_offset_delta,
            record_count=0,
            base_timestamp=header.max_timestamp,
            max_timestamp=header.max_timestamp,
            attributes=_attributes(
                Compression.NONE, header.timestamp_type, header.is_transactional, header.is_control, False
            ),
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence,
            partition_leader_epoch=header.partition_leader_epoch,
        )
    base_timestamp = records[0].timestamp if delete_horizon is None else delete_horizon
    max_timestamp = header.max_timestamp if log_append else max(r.timestamp for r in records)
    section = bytearray()
    previous = -1
    for rec in records:
        delta = rec.offset - header.base_offset
        if not previous < delta <= header.last_offset_delta:
            raise ValueError(
                f"record offset {rec.offset} is not after the previous one inside batch "
                f"[{header.base_offset}, {header.last_offset}]"
            )
        previous = delta
        encode_record(section, delta, rec.timestamp - base_timestamp, rec.key, rec.value, rec.headers)
    return assemble_batch(
        section,
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        record_count=len(records),
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        attributes=_attributes(
            header.compression, header.timestamp_type, header.is_transactional, header.is_control,
            delete_horizon is not None,
        ),
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
    )
