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
    """An offset and where it is: the base offset of its segment and the
    byte position there of the batch holding it (the segment's end for the
    log end offset). Two of them on one segment tell how many bytes of
    whole batches lie between them without reading the log (Kafka's
    LogOffsetMetadata, used by DelayedFetch). ``message_offset_only``: the
    position is not known."""

    message_offset: int
    segment_base_offset: int = UNKNOWN_OFFSET
    relative_position_in_segment: int = UNKNOWN_OFFSET

    @property
    def message_offset_only(self) -> bool:
        return self.segment_base_offset == UNKNOWN_OFFSET or self.relative_position_in_segment == UNKNOWN_OFFSET

    def on_older_segment(self, other: LogOffsetMetadata) -> bool:
        """Whether this position is on a segment before ``other``'s."""
        self._check_known(other)
        return self.segment_base_offset < other.segment_base_offset

    def on_same_segment(self, other: LogOffsetMetadata) -> bool:
        self._check_known(other)
        return self.segment_base_offset == other.segment_base_offset

    def position_diff(self, other: LogOffsetMetadata) -> int:
        """Bytes from ``other``'s position to this one, on the same segment."""
        if not self.on_same_segment(other):
            raise ValueError(f"{self} and {other} are on different segments")
        return self.relative_position_in_segment - other.relative_position_in_segment

    def _check_known(self, other: LogOffsetMetadata) -> None:
        if self.message_offset_only or other.message_offset_only:
            raise ValueError(f"no segment position known to compare {self} and {other}")


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """``records``: whole v2 batches (the first may start before the
    requested offset, as in Kafka). ``first_entry_incomplete``: the first
    batch did not fit ``max_bytes`` and ``min_one_message`` was false."""

    fetch_offset_metadata: LogOffsetMetadata
    records: bytes | memoryview  # a read-only view of a ReadBuffers buffer when the read was given one
    first_entry_incomplete: bool = False


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """ListOffsets answer: the first offset whose record timestamp is >= the
    target, with that record's timestamp and the batch's leader epoch (-1
    when unknown)."""

    timestamp: int
    offset: int
    leader_epoch: int = -1
