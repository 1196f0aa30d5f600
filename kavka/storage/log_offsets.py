"""ListOffsets by timestamp over a log's segments.

``Log.fetch_offset_by_timestamp`` answers ``EARLIEST_TIMESTAMP`` (-2, the
log start offset) and ``LATEST_TIMESTAMP`` (-1, the log end offset) itself
and asks here for the two that read segments:

* ``offset_by_timestamp``, ``t >= 0``: the first offset (at or after the
  log start) whose record timestamp is >= ``t``, or None when no record is
  that recent;
* ``offset_of_max_timestamp``, ``MAX_TIMESTAMP`` (-3, KIP-734): the offset
  of the first record (at or after the log start) holding the largest
  timestamp of any segment; None when those records are all below the log
  start.

The timestamp lookup uses the segments' largest timestamps to pick the
segment, its time index and offset index to pick a position, a scan of
batch headers to pick the batch, and decodes that one batch to pick the
record (the only place records are decoded on a read path). The leader
epoch answered is the epoch cache's epoch for the offset (KIP-279), given
as ``epoch_for``.

Plain functions over segments; ``Log`` calls them under its lock.
"""

from __future__ import annotations

from collections.abc import Callable

from kavka.protocol.records.batch import ATTR_TIMESTAMP_TYPE, InvalidRecordBatch, RecordBatchHeader
from kavka.protocol.records.reader import iter_records
from kavka.storage.errors import CorruptMessageError
from kavka.storage.fetch_data_info import TimestampAndOffset
from kavka.storage.segment import LogSegment


def offset_by_timestamp(
    segments: list[LogSegment], log_start_offset: int, target: int, epoch_for: Callable[[int], int]
) -> TimestampAndOffset | None:
    """The first record at or after the log start with timestamp >= ``target``."""
    for segment in segments:
        if segment.max_timestamp_so_far.timestamp < target:
            continue
        for position, header in segment.batches_by_timestamp(target, log_start_offset):
            result = _first_record_at_or_after(segment, position, header, target, log_start_offset)
            if result is not None:
                return TimestampAndOffset(result[0], result[1], epoch_for(result[1]))
    return None


def _first_record_at_or_after(
    segment: LogSegment, position: int, header: RecordBatchHeader, target: int, starting_offset: int
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


def offset_of_max_timestamp(
    segments: list[LogSegment], log_start_offset: int, epoch_for: Callable[[int], int]
) -> TimestampAndOffset | None:
    """The first record at or after the log start holding the log's largest timestamp."""
    best = max((s.max_timestamp_so_far.timestamp for s in segments), default=-1)
    if best < 0:
        return None
    for segment in segments:
        if segment.max_timestamp_so_far.timestamp != best:
            continue
        for position, header in segment.batches_by_timestamp(best, log_start_offset):
            result = _first_record_at_or_after(segment, position, header, best, log_start_offset)
            if result is not None:
                return TimestampAndOffset(result[0], result[1], epoch_for(result[1]))
    return None
