"""The sparse time index of one segment (``<base offset>.timeindex``).

Disk format: 12-byte big-endian entries ``(timestamp: int64,
relative_offset: int32)``: the largest batch max-timestamp seen so far in
the segment and the (last) offset of the batch that first reached it. Added
with the offset index entry every ``index.interval.bytes``, and once more
when the segment stops being active (so its last entry is the segment's
largest timestamp, which retention by time reads: seed 002 §5.4.1).

Invariants: timestamps strictly increase and offsets do not decrease (the
index is monotonic); one slot stays free for the final entry written at
roll time (so ``is_full`` reports full one entry early, as Kafka does).

Owned by a ``LogSegment``; guarded by its ``Log``'s lock.
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from kavka.storage.index.index_file import IndexFile
from kavka.storage.index.offset_index import INT32_MAX, IndexOffsetError

ENTRY = struct.Struct(">qi")
ENTRY_SIZE = ENTRY.size  # 12
NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    """A timestamp and the offset where the segment first reached it (a
    named tuple: an append with a new largest timestamp makes one)."""

    timestamp: int
    offset: int


class TimeIndex(IndexFile):
    """Maps timestamps to offsets; binary search over the mmap."""

    __slots__ = ("_last",)

    def __init__(self, path: Path, base_offset: int, max_index_size: int, *, keep_descriptor: bool = True) -> None:
        super().__init__(path, base_offset, max_index_size, ENTRY_SIZE, keep_descriptor=keep_descriptor)
        self._last = self.entry(self.entries - 1) if self.entries else TimestampOffset(NO_TIMESTAMP, base_offset)

    def entry(self, n: int) -> TimestampOffset:
        ts, rel = ENTRY.unpack_from(self.view(), n * ENTRY_SIZE)
        return TimestampOffset(ts, self.base_offset + rel)

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry, or (-1, base offset) when empty."""
        return self._last

    def is_full(self) -> bool:
        return self._entries >= self._length // self.entry_size - 1

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> bool:
        """Append when ``timestamp`` is larger than the last entry's."""
        if not skip_full_check and self.is_full():
            raise IndexError(f"time index {self.path} is full")
        last = self._last
        if self._entries:
            if offset < last.offset:
                raise IndexOffsetError(f"offset {offset} is below the last offset {last.offset} in {self.path}")
            if timestamp < last.timestamp:
                raise IndexOffsetError(f"timestamp {timestamp} is below the last timestamp {last.timestamp} in {self.path}")
        if timestamp <= last.timestamp:
            return False
        rel = offset - self.base_offset
        if not 0 <= rel <= INT32_MAX:
            raise IndexOffsetError(f"offset {offset} does not fit {self.path}")
        self.write_entry(ENTRY.pack(timestamp, rel))
        self._last = TimestampOffset(timestamp, offset)
        return True

    def _slot_for(self, key: Callable[[tuple[int, int]], int], value: int) -> int:
        view = self.view()
        lo, hi = 0, self.entries - 1
        found = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            if key(ENTRY.unpack_from(view, mid * ENTRY_SIZE)) <= value:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The largest entry with timestamp <= target, else (-1, base offset)."""
        slot = self._slot_for(lambda e: e[0], target_timestamp)
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(slot)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry with offset >= ``offset``."""
        slot = self._slot_for(lambda e: e[1] + 1, offset - self.base_offset)  # entries with rel < target
        keep = slot + 1
        self.truncate_to_entries(keep)
        self._last = self.entry(keep - 1) if keep else TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def reset(self) -> None:
        super().reset()
        self._last = TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def restore(self, entries: int, last: TimestampOffset) -> None:
        """Undo appends after a failed write (best effort on disk)."""
        with contextlib.suppress(OSError):
            self.truncate_to_entries(entries)
        self._last = last

    def entries_list(self) -> list[TimestampOffset]:
        return [self.entry(i) for i in range(self.entries)]
