"""Values returned by log reads and offset lookups.

``LogOffsetMetadata`` locates an offset physically (segment base offset and
byte position) so replication can bound a consumer fetch at the high
watermark without another index lookup. ``FetchDataInfo`` carries whole
batches as stored. ``TimestampAndOffset`` answers ListOffsets.

Frozen values; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN_OFFSET = -1

# ListOffsets special timestamps (Kafka's protocol)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


@dataclass(frozen=True, slots=True)
class LogOffsetMetadata:
    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = UNKNOWN_OFFSET


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """``records``: whole v2 batches (the first may start before the
    requested offset, as in Kafka). ``first_entry_incomplete``: the first
    batch did not fit ``max_bytes`` and ``min_one_message`` was false."""

    fetch_offset_metadata: LogOffsetMetadata
    records: bytes
    first_entry_incomplete: bool = False


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """ListOffsets answer: the first offset whose record timestamp is >= the
    target, with that record's timestamp and the batch's leader epoch (-1
    when unknown)."""

    timestamp: int
    offset: int
    leader_epoch: int = -1
