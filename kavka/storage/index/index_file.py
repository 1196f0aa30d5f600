"""The file, mmap and binary search shared by the offset and time indexes.

An index file is an array of fixed-size big-endian entries. While its
segment is active the file is preallocated to ``segment.index.bytes``
(rounded down to a whole number of entries) and the unused tail is zeros;
when the segment rolls or closes the file is trimmed to the entries in use
(seed 002 §5.3 (5): the active segment's indexes are sized back up to
``segment.index.bytes`` on load).

Entries are written into the mapping, as Kafka does, by an index opened
for writes (``keep_descriptor``: the active segment's): a store into memory
where a ``pwrite`` was a system call per entry, a third of the Python-side
cost of a 16 KiB append beside its ``pwritev`` (bench/append_cost.py). A
store into a page of the sparse preallocated file that the disk has no room
for would be a SIGBUS, so the blocks under an entry are reserved first:
``os.posix_fallocate`` of the page it falls in, once per page (512 offset
entries), which turns a full disk into an ``OSError`` the log reports as
KAFKA_STORAGE_ERROR, before anything is stored. Only the pages written so
far are allocated, so the preallocated tail stays sparse. An index mapped
read-only (opened for lookups, then written again) writes with ``pwrite``;
lookups read the mapping either way (Linux shares the page cache between
the mapping and the descriptor; an fsync of the file writes back the pages
dirtied through the mapping too).

Descriptors: a mapping needs no descriptor once made, but Python's ``mmap``
keeps a duplicate of the one it was made from, so a mapped index costs one
descriptor, and one more while its own is open for writes. An index opened
with ``keep_descriptor=False`` (a segment that is no longer written) closes
its own right after mapping; a write, truncation or resize opens it again.
``flush`` fsyncs through a descriptor of its own, opened by path, so a flush
on a background thread never races a close on the event loop.

Entry counting on open: valid entries are strictly increasing, so an all-zero
entry can only be the first one; the first all-zero entry after slot 0 marks
the end of the used part (a preallocated file left behind by a crash).
Truncation zeroes the dropped entries so stale ones never reappear.

Not thread-safe by itself: the owning ``LogSegment`` is guarded by its
``Log``'s lock.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path


class IndexFile:
    """A preallocatable file of ``entry_size``-byte entries with an mmap view."""

    __slots__ = (
        "path", "base_offset", "entry_size", "_fd", "_mmap", "_length", "_entries", "_zero", "_closed", "_dirty",
        "_map_writes", "_allocated",
    )

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int, entry_size: int, *, keep_descriptor: bool = True
    ) -> None:
        self.path = path
        self.base_offset = base_offset
        self.entry_size = entry_size
        self._zero = bytes(entry_size)
        self._closed = False
        self._dirty = False
        # entries are stored through a writable mapping (see the module docstring)
        self._map_writes = keep_descriptor
        # bytes from 0 whose blocks are known reserved (posix_fallocate), so
        # that a store through the mapping below it cannot fault
        self._allocated = 0
        existed = path.exists() and path.stat().st_size > 0
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._mmap: mmap.mmap | None = None
        try:
            if existed:
                length = os.fstat(self._fd).st_size
                self._length = length - length % entry_size
                self._map()
                self._entries = self._count_entries(length // entry_size)
            else:
                self._length = 0
                self._entries = 0
                self.resize(max_index_size)
            if not keep_descriptor:
                self.release_descriptor()
        except BaseException:
            self.close_quietly()
            raise

    # ---- mapping -------------------------------------------------------------
    def _map(self) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        self._allocated = min(self._allocated, self._length)
        if self._length > 0:
            access = mmap.ACCESS_WRITE if self._map_writes else mmap.ACCESS_READ
            self._mmap = mmap.mmap(self._descriptor(), self._length, access=access)

    def _descriptor(self) -> int:
        """The index's own descriptor, opened again if it was released."""
        if self._closed:
            raise ValueError(f"index {self.path} is closed")
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR)
        return self._fd

    def release_descriptor(self) -> None:
        """Close the index's own descriptor; lookups go on through the
        mapping (which holds Python's duplicate of it), the next write opens
        it again."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def holds_descriptor(self) -> bool:
        return self._fd >= 0

    def _count_entries(self, slots: int) -> int:
        """Entries in use: up to the first all-zero entry after slot 0. A
        lone all-zero slot 0 counts as unused: dropping a (0, 0) entry is
        harmless because lookups fall back to (base offset, position 0)."""
        if slots == 0:
            return 0
        lo, hi = 1, slots  # the first zero slot in [1, slots), or slots
        while lo < hi:
            mid = (lo + hi) // 2
            if self._slot_bytes(mid) == self._zero:
                hi = mid
            else:
                lo = mid + 1
        if lo == 1 and self._slot_bytes(0) == self._zero:
            return 0
        return lo

    def _slot_bytes(self, n: int) -> bytes:
        assert self._mmap is not None
        start = n * self.entry_size
        return self._mmap[start : start + self.entry_size]

    # ---- state ----------------------------------------------------------------
    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._length // self.entry_size

    @property
    def length(self) -> int:
        """Bytes of the file (preallocated or trimmed)."""
        return self._length

    @property
    def size_in_bytes(self) -> int:
        """Bytes of entries in use."""
        return self._entries * self.entry_size

    def is_full(self) -> bool:
        return self._entries >= self._length // self.entry_size

    def view(self) -> memoryview:
        """The mapped bytes (entries in use first); empty when unmapped."""
        if self._mmap is None:
            return memoryview(b"")
        return memoryview(self._mmap)

    # ---- mutation ---------------------------------------------------------------
    def write_entry(self, raw: bytes) -> None:
        """Append one encoded entry. The caller checks ordering and fullness."""
        entries = self._entries
        size = self.entry_size
        if entries >= self._length // size:
            raise IndexError(f"index {self.path} is full ({entries} entries)")
        start = entries * size
        mapped = self._mmap
        if self._map_writes and mapped is not None:
            end = start + size
            if end > self._allocated:
                self._allocate(start, end)
            mapped[start:end] = raw
        else:
            fd = self._fd
            os.pwrite(fd if fd >= 0 else self._descriptor(), raw, start)
        self._dirty = True
        self._entries = entries + 1

    def _allocate(self, start: int, end: int) -> None:
        """Reserve the blocks of the pages holding [start, end) (raises
        ``OSError``, ENOSPC on a full disk, instead of a later SIGBUS)."""
        first = start - start % mmap.PAGESIZE
        last = min(self._length, -(-end // mmap.PAGESIZE) * mmap.PAGESIZE)
        os.posix_fallocate(self._descriptor(), first, last - first)
        self._allocated = last

    def truncate_to_entries(self, n: int) -> None:
        """Keep the first ``n`` entries; zero the dropped ones on disk."""
        if n >= self._entries:
            return
        dropped = (self._entries - n) * self.entry_size
        try:
            self._dirty = True
            os.pwrite(self._descriptor(), bytes(dropped), n * self.entry_size)
        finally:
            self._entries = n  # in memory at least; a crash re-checks the file on load

    def reset(self) -> None:
        self.truncate_to_entries(0)

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down to whole entries
        (never below the entries in use). Returns whether it changed."""
        rounded = max(new_size - new_size % self.entry_size, self._entries * self.entry_size)
        if rounded == self._length and self._file_size() == rounded:
            return False
        fd = self._descriptor()
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        os.ftruncate(fd, rounded)
        self._dirty = True
        self._length = rounded
        self._map()
        return True

    def _file_size(self) -> int:
        if self._fd >= 0:
            return os.fstat(self._fd).st_size
        return os.stat(self.path).st_size

    def trim_to_valid_size(self) -> None:
        self.resize(self._entries * self.entry_size)

    @property
    def dirty(self) -> bool:
        """Written (entries, truncation, size) since the last ``flush``."""
        return self._dirty

    def flush(self) -> None:
        """fsync what was written since the last flush (nothing: no syscall)."""
        if not self._dirty:
            return
        self._dirty = False
        fsync_index_file(self.path)

    def close(self) -> None:
        """Trim and release the file."""
        if self._closed:
            return
        try:
            self.trim_to_valid_size()
        finally:
            self.close_quietly()

    def close_quietly(self) -> None:
        """Release the mapping and descriptor without trimming (crash-like)."""
        self._closed = True
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def closed(self) -> bool:
        return self._closed

    def rename_to(self, new_path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, new_path)
        self.path = new_path

    def delete_file(self) -> bool:
        self.close_quietly()
        self._dirty = False
        try:
            self.path.unlink()
            return True
        except FileNotFoundError:
            return False


def fsync_index_file(path: Path) -> None:
    """fsync an index file through a descriptor of its own. A file gone
    meanwhile (its segment deleted or renamed away) has nothing to keep."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class IndexEnds:
    """What a load-time check reads of an index: the file's length, the
    entries in use, and the first and last entry's bytes (empty when none)."""

    length: int
    entries: int
    first: bytes
    last: bytes


def read_index_ends(path: Path, entry_size: int) -> IndexEnds | None:
    """The ends of an index file read with two ``pread``s, without mapping
    it (the check of a segment that shut down cleanly, whose index was
    trimmed to its entries when the segment rolled). None when its last
    whole slot is zeros: a preallocated file, whose entries only a load
    (the binary search for the first zero slot) can count."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return IndexEnds(0, 0, b"", b"")
    try:
        length = os.fstat(fd).st_size
        slots = length // entry_size
        if slots == 0:
            return IndexEnds(length, 0, b"", b"")
        last = os.pread(fd, entry_size, (slots - 1) * entry_size)
        if last == bytes(entry_size):
            return None
        first = os.pread(fd, entry_size, 0) if slots > 1 else last
        return IndexEnds(length, slots, first, last)
    finally:
        os.close(fd)
