"""ListOffsets over a ``Log``: earliest, latest, max timestamp, by timestamp.

``fetch_offset_by_timestamp(log, t)``:
* ``EARLIEST_TIMESTAMP`` (-2): the log start offset;
* ``LATEST_TIMESTAMP`` (-1): the log end offset;
* ``MAX_TIMESTAMP`` (-3, KIP-734): the offset of the first record (at or
  after the log start) holding the largest timestamp of any segment; None
  when those records are all below the log start;
* ``t >= 0``: the first offset (at or after the log start) whose record
  timestamp is >= ``t``, or None when no record is that recent.

The timestamp lookup uses the segments' largest timestamps to pick the
segment, its time index and offset index to pick a position, a scan of
batch headers to pick the batch, and decodes that one batch to pick the
record (the only place records are decoded on a read path). The leader
epoch answered is the epoch cache's epoch for the offset (KIP-279).

Holds the log's lock while it reads; any thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kavka.protocol.records.batch import ATTR_TIMESTAMP_TYPE, InvalidRecordBatch, RecordBatchHeader
from kavka.protocol.records.reader import iter_records
from kavka.storage.errors import CorruptMessageError
from kavka.storage.fetch_data_info import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    TimestampAndOffset,
)

if TYPE_CHECKING:
    from kavka.storage.log import Log
    from kavka.storage.segment import LogSegment


def _epoch(log: "Log", offset: int) -> int:
    epoch = log.leader_epoch_cache.epoch_for_offset(offset)
    return -1 if epoch is None else epoch


def fetch_offset_by_timestamp(log: "Log", target: int) -> TimestampAndOffset | None:
    with log._lock:
        if target == EARLIEST_TIMESTAMP:
            start = log.log_start_offset
            return TimestampAndOffset(-1, start, _epoch(log, start))
        if target == LATEST_TIMESTAMP:
            end = log.log_end_offset
            latest = log.leader_epoch_cache.latest_epoch()
            return TimestampAndOffset(-1, end, -1 if latest is None else latest)
        if target == MAX_TIMESTAMP:
            return _max_timestamp(log)
        if target < 0:
            raise ValueError(f"unsupported ListOffsets timestamp {target}")
        start = log.log_start_offset
        for segment in log.segments():
            if segment.max_timestamp_so_far.timestamp < target:
                continue
            for position, header in segment.batches_by_timestamp(target, start):
                result = _first_record_at_or_after(segment, position, header, target, start)
                if result is not None:
                    return TimestampAndOffset(result[0], result[1], _epoch(log, result[1]))
        return None


def _first_record_at_or_after(
    segment: "LogSegment", position: int, header: RecordBatchHeader, target: int, starting_offset: int
) -> tuple[int, int] | None:
    """(timestamp, offset) of the first record in the batch with timestamp
    >= target and offset >= starting_offset."""
    if header.attributes & ATTR_TIMESTAMP_TYPE:  # LogAppendTime: one timestamp for all
        return header.max_timestamp, max(header.base_offset, starting_offset)
    batch = segment.read_batch(position, header.size)
    try:
        for record in iter_records(batch):
            if record.timestamp >= target and record.offset >= starting_offset:
                return record.timestamp, record.offset
    except InvalidRecordBatch as e:
        raise CorruptMessageError(f"cannot decode the batch at {position} of {segment.log.path}: {e}") from e
    return None


def _max_timestamp(log: "Log") -> TimestampAndOffset | None:
    best = max((s.max_timestamp_so_far.timestamp for s in log.segments()), default=-1)
    if best < 0:
        return None
    start = log.log_start_offset
    for segment in log.segments():
        if segment.max_timestamp_so_far.timestamp != best:
            continue
        for position, header in segment.batches_by_timestamp(best, start):
            result = _first_record_at_or_after(segment, position, header, best, start)
            if result is not None:
                return TimestampAndOffset(result[0], result[1], _epoch(log, result[1]))
    return None
