"""The ordered segments of one log (Kafka's ``LogSegments``).

The segments of a ``<topic>-<partition>`` directory in base-offset order;
the last one is the active segment. Segment ``i`` holds the offsets
[``base(i)``, ``base(i + 1)``), the active one every offset from its base on.
Lookups by offset are a binary search over the base offsets, kept beside
the segments in a parallel list.

Invariants: base offsets strictly increase; the list of bases is always
the segments' base offsets, in the same order (only this class mutates
either list).

Not thread-safe: the owning ``LocalLog`` works on it under its log's lock;
``values()`` hands out a copy that stays valid after the lock is released.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from itertools import pairwise

from kavka.storage.segment import LogSegment


class LogSegments:
    """See the module docstring."""

    __slots__ = ("_segments", "_bases")

    def __init__(self, segments: Iterable[LogSegment] = ()) -> None:
        ordered = sorted(segments, key=lambda s: s.base_offset)
        bases = [s.base_offset for s in ordered]
        if any(a >= b for a, b in pairwise(bases)):
            raise ValueError(f"segment base offsets must strictly increase: {bases}")
        self._segments: list[LogSegment] = ordered
        self._bases: list[int] = bases

    # ---- the whole list ------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._segments)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self._segments)

    def values(self) -> list[LogSegment]:
        """A copy of the segments, in order."""
        return list(self._segments)

    @property
    def active(self) -> LogSegment:
        """The last segment: the only one appended to."""
        return self._segments[-1]

    @property
    def first(self) -> LogSegment:
        return self._segments[0]

    def contains(self, segment: LogSegment) -> bool:
        """Whether this very segment object is in the log."""
        return any(s is segment for s in self._segments)

    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    # ---- lookups by offset -----------------------------------------------------------------------
    def floor(self, offset: int) -> LogSegment | None:
        """The segment whose range holds ``offset``: the last with base <= offset."""
        i = bisect_right(self._bases, offset) - 1
        return self._segments[i] if i >= 0 else None

    def from_floor(self, offset: int) -> list[LogSegment]:
        """The segment holding ``offset`` (the first when ``offset`` is below
        every base) and every later one."""
        return self._segments[max(bisect_right(self._bases, offset) - 1, 0) :]

    def overlapping(self, start: int, end: int) -> list[LogSegment]:
        """The segments holding an offset in [start, end) (Kafka's
        ``values(from, to)``)."""
        return self._segments[max(bisect_right(self._bases, start) - 1, 0) : bisect_left(self._bases, end)]

    def wholly_below(self, offset: int) -> list[LogSegment]:
        """The segments every offset of which is below ``offset`` (never the
        active one: its range is open)."""
        return self._segments[: max(bisect_right(self._bases, offset) - 1, 0)]

    def higher_than(self, offset: int) -> list[LogSegment]:
        """The segments whose base offset is above ``offset``."""
        return self._segments[bisect_right(self._bases, offset) :]

    # ---- mutation --------------------------------------------------------------------------------
    def append(self, segment: LogSegment) -> None:
        """Add a new active segment, past every base offset."""
        if self._bases and segment.base_offset <= self._bases[-1]:
            raise ValueError(f"segment {segment.base_offset} is not past the active segment {self._bases[-1]}")
        self._segments.append(segment)
        self._bases.append(segment.base_offset)

    def add(self, segment: LogSegment) -> None:
        """Put ``segment`` in its place by base offset (compaction's swap);
        the base must not be in the log already."""
        i = bisect_left(self._bases, segment.base_offset)
        if i < len(self._bases) and self._bases[i] == segment.base_offset:
            raise ValueError(f"a segment with base offset {segment.base_offset} is already in the log")
        self._segments.insert(i, segment)
        self._bases.insert(i, segment.base_offset)

    def pop_active(self) -> LogSegment:
        self._bases.pop()
        return self._segments.pop()

    def remove(self, doomed: Iterable[LogSegment]) -> None:
        """Take these segment objects out (those not in the log are ignored)."""
        ids = {id(s) for s in doomed}
        if not ids:
            return
        self._segments = [s for s in self._segments if id(s) not in ids]
        self._bases = [s.base_offset for s in self._segments]

    def clear(self) -> list[LogSegment]:
        """Remove every segment; returns them."""
        gone, self._segments, self._bases = self._segments, [], []
        return gone
