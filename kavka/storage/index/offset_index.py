"""The sparse offset index of one segment (``<base offset>.index``).

Disk format: 8-byte big-endian entries ``(relative_offset: int32,
position: int32)`` where ``relative_offset = offset - base_offset`` and
``position`` is the byte position in the ``.log`` of the batch whose last
offset is ``offset``. An entry is added every ``index.interval.bytes`` of
appended log (seed 002 §5.3 (3)), so lookups land at most one interval
before the target and finish with a short scan of batch headers.

Invariants: relative offsets strictly increase; positions increase; the
relative offset fits an int32 (the log rolls before it would not).

Owned by a ``LogSegment``; guarded by its ``Log``'s lock.
"""

from __future__ import annotations

import contextlib
import struct
from dataclasses import dataclass
from pathlib import Path

from kavka.storage.index.index_file import IndexFile

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size  # 8
INT32_MAX = 2**31 - 1


class IndexOffsetError(ValueError):
    """An index entry out of order or not representable."""


@dataclass(frozen=True, slots=True)
class OffsetPosition:
    """An offset and the byte position of a batch at or before it."""

    offset: int
    position: int


class OffsetIndex(IndexFile):
    """Maps offsets to ``.log`` positions; binary search over the mmap."""

    __slots__ = ("_last_offset",)

    def __init__(self, path: Path, base_offset: int, max_index_size: int, *, keep_descriptor: bool = True) -> None:
        super().__init__(path, base_offset, max_index_size, ENTRY_SIZE, keep_descriptor=keep_descriptor)
        self._last_offset = self.entry(self.entries - 1).offset if self.entries else base_offset

    def entry(self, n: int) -> OffsetPosition:
        rel, pos = ENTRY.unpack_from(self.view(), n * ENTRY_SIZE)
        return OffsetPosition(self.base_offset + rel, pos)

    @property
    def last_offset(self) -> int:
        """Offset of the last entry, or the base offset when empty."""
        return self._last_offset

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def append(self, offset: int, position: int) -> None:
        if self._entries and offset <= self._last_offset:
            raise IndexOffsetError(
                f"offset {offset} is not larger than the last offset {self._last_offset} in {self.path}"
            )
        rel = offset - self.base_offset
        if not 0 <= rel <= INT32_MAX or not 0 <= position <= INT32_MAX:
            raise IndexOffsetError(f"entry ({offset}, {position}) does not fit {self.path}")
        self.write_entry(ENTRY.pack(rel, position))
        self._last_offset = offset

    def _slot_for(self, target: int) -> int:
        """Largest slot whose offset <= target, or -1."""
        view = self.view()
        rel_target = target - self.base_offset
        lo, hi = 0, self.entries - 1
        found = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            rel = ENTRY.unpack_from(view, mid * ENTRY_SIZE)[0]
            if rel <= rel_target:
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry with offset <= target, else (base offset, 0)."""
        slot = self._slot_for(target_offset)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(slot)

    def last_position_at_or_below(self, position: int) -> int | None:
        """The largest indexed batch position <= ``position`` (positions
        increase with offsets, so the same binary search works), else None.
        Lets a read find the last whole batch of a window by scanning at most
        ``index.interval.bytes`` of headers instead of the whole window."""
        view = self.view()
        lo, hi = 0, self.entries - 1
        found = None
        while lo <= hi:
            mid = (lo + hi) // 2
            pos = ENTRY.unpack_from(view, mid * ENTRY_SIZE)[1]
            if pos <= position:
                found = pos
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def truncate_to(self, offset: int) -> None:
        """Drop every entry with offset >= ``offset``."""
        slot = self._slot_for(offset)
        keep = slot + 1
        if keep > 0 and self.entry(slot).offset == offset:
            keep = slot
        self.truncate_to_entries(keep)
        self._last_offset = self.entry(keep - 1).offset if keep else self.base_offset

    def reset(self) -> None:
        super().reset()
        self._last_offset = self.base_offset

    def restore(self, entries: int, last_offset: int) -> None:
        """Undo appends after a failed write (best effort on disk)."""
        with contextlib.suppress(OSError):
            self.truncate_to_entries(entries)
        self._last_offset = last_offset

    def entries_list(self) -> list[OffsetPosition]:
        return [self.entry(i) for i in range(self.entries)]
