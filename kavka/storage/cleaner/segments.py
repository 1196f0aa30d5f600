"""Reading a segment batch by batch and grouping segments for one
cleaned output, for the cleaner (seed 002 §5.4.2 (4); Kafka's
groupSegmentsBySize). Pure functions over segments; the cleaner thread."""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kavka.protocol.records.batch import HEADER_SIZE, CorruptRecordBatch
from kavka.storage.index.offset_index import INT32_MAX
from kavka.storage.segment import LogSegment

_INT32 = struct.Struct(">i")


def iter_segment_batches(segment: LogSegment, buffer_size: int) -> Iterator[tuple[int, bytes]]:
    """``(position, batch bytes)`` of each batch of a segment, read in chunks
    of ``buffer_size`` (grown for a larger batch). A length that cannot be a
    batch raises ``CorruptRecordBatch`` with its position."""
    log = segment.log
    size = log.size
    pos = 0
    want = buffer_size
    while size - pos >= 12:
        chunk = log.read(pos, want)
        p = 0
        n = len(chunk)
        while n - p >= 12:
            batch_size = _INT32.unpack_from(chunk, p + 8)[0] + 12
            if batch_size < HEADER_SIZE or pos + p + batch_size > size:
                raise CorruptRecordBatch(f"impossible batch length {batch_size - 12} in {log.path}", pos + p)
            if p + batch_size > n:
                break
            yield pos + p, chunk[p : p + batch_size]
            p += batch_size
        if p == 0:
            want = max(want, _INT32.unpack_from(chunk, 8)[0] + 12)
            continue
        pos += p
        want = buffer_size
    if pos != size:
        raise CorruptRecordBatch(f"{size - pos} trailing bytes that are not a batch in {log.path}", pos)


def group_segments_by_size(
    segments: list[LogSegment], end_offset: int, max_size: int, max_index_size: int
) -> list[list[LogSegment]]:
    """Kafka's groupSegmentsBySize over the segments to clean (seed 002
    §5.4.2 (4)); every group holds at least one segment."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_size = segments[i].size
        index_size = segments[i].lazy_offset_index.size_in_bytes
        time_size = segments[i].lazy_time_index.size_in_bytes
        i += 1
        while i < len(segments):
            seg = segments[i]
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else end_offset
            if (
                log_size + seg.size > max_size
                or index_size + seg.lazy_offset_index.size_in_bytes > max_index_size
                or time_size + seg.lazy_time_index.size_in_bytes > max_index_size
                or upper - 1 - group[0].base_offset > INT32_MAX
            ):
                break
            group.append(seg)
            log_size += seg.size
            index_size += seg.lazy_offset_index.size_in_bytes
            time_size += seg.lazy_time_index.size_in_bytes
            i += 1
        groups.append(group)
    return groups
