"""The file, mmap and binary search shared by the offset and time indexes.

An index file is an array of fixed-size big-endian entries. While its
segment is active the file is preallocated to ``segment.index.bytes``
(rounded down to a whole number of entries) and the unused tail is zeros;
when the segment rolls or closes the file is trimmed to the entries in use
(seed 002 §5.3 (5): the active segment's indexes are sized back up to
``segment.index.bytes`` on load).

Writes go through ``os.pwrite`` and lookups through a read-only ``mmap`` of
the same file (Linux shares the page cache between the two). Writing through
the mapping would turn a full disk into SIGBUS on a page of the sparse
preallocated file; ``pwrite`` turns it into an ``OSError`` the log reports
as KAFKA_STORAGE_ERROR. (Stores into a writable mapping were measured too:
once writeback runs, each store into a cleaned page faults, and 1 MiB
appends paid ~25 µs each for it; bench/README.md, storage.py.)

Appended entries are held in memory (``pending``) and written together, in
one ``pwrite`` per ``PENDING_ENTRIES`` entries instead of one per entry (an
entry per append for batches above ``index.interval.bytes``), and before
anything reads or changes the file: a lookup (``view``), a truncation, a
resize or trim (so a roll or close writes them). ``write_pending`` is
called under the owning log's lock, which every writer and reader holds;
``flush`` (which may run on another thread, outside that lock) fsyncs only
what was written, so the log writes the pending entries under its lock
before it flushes (``LocalLog.flush``). Entries lost in a crash before
they were written are entries above the recovery point, rebuilt by
recovery as the bytes they point at are.

Descriptors: a mapping needs no descriptor once made, but Python's ``mmap``
keeps a duplicate of the one it was made from, so a mapped index costs one
descriptor, and one more while its own is open for writes. An index opened
with ``keep_descriptor=False`` (a segment that is no longer written) closes
its own right after mapping; a write, truncation or resize opens it again.
``flush`` fsyncs through a descriptor of its own, opened by path, so a flush
on a background thread never races a close on the event loop.

Entry counting on open: valid entries are strictly increasing, so an all-zero
entry can only be the first one; the first all-zero entry after slot 0 marks
the end of the used part (a preallocated file left behind by a crash). The
binary search for it reads with ``pread``: lookups through the mapping only
ever touch written entries, but the search probes the sparse tail.
Truncation zeroes the dropped entries so stale ones never reappear.

Not thread-safe by itself: the owning ``LogSegment`` is guarded by its
``Log``'s lock.
"""

from __future__ import annotations

import errno
import mmap
import os
from dataclasses import dataclass
from pathlib import Path

# Entries held before one pwrite writes them (see the module docstring): 512
# bytes of the offset index, 768 of the time index.
PENDING_ENTRIES = 64


class IndexFile:
    """A preallocatable file of ``entry_size``-byte entries with an mmap view."""

    __slots__ = (
        "path", "base_offset", "entry_size", "_fd", "_mmap", "_length", "_entries", "_zero", "_closed", "_dirty",
        "_pending", "_written",
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
        self._pending = bytearray()  # entries [_written, _entries), not yet written
        self._written = 0
        existed = path.exists() and path.stat().st_size > 0
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._mmap: mmap.mmap | None = None
        try:
            if existed:
                length = os.fstat(self._fd).st_size
                self._length = length - length % entry_size
                self._map()
                self._entries = self._count_entries(length // entry_size)
                self._written = self._entries
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
        if self._length > 0:
            self._mmap = mmap.mmap(self._descriptor(), self._length, access=mmap.ACCESS_READ)

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
        # Read from the file, not the mapping: the search probes the
        # preallocated tail, and on tmpfs a read through a mapping of a hole
        # allocates a page, which a full tmpfs answers with SIGBUS (a read()
        # of the hole copies zeros without allocating).
        return os.pread(self._descriptor(), self.entry_size, n * self.entry_size)

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
        """The mapped bytes (entries in use first, pending ones written
        first); empty when unmapped."""
        if self._pending:
            self.write_pending()
        if self._mmap is None:
            return memoryview(b"")
        return memoryview(self._mmap)

    # ---- mutation ---------------------------------------------------------------
    def write_entry(self, raw: bytes) -> None:
        """Append one encoded entry. The caller checks ordering and fullness."""
        entries = self._entries
        if entries >= self._length // self.entry_size:
            raise IndexError(f"index {self.path} is full ({entries} entries)")
        pending = self._pending
        pending += raw
        self._entries = entries + 1
        if len(pending) >= PENDING_ENTRIES * self.entry_size:
            self.write_pending()

    @property
    def pending_entries(self) -> int:
        """Entries appended but not yet written to the file."""
        return self._entries - self._written

    def write_pending(self) -> None:
        """Write the pending entries (one ``pwrite``). Raises ``OSError``
        (then they stay pending: the log goes offline, and recovery rebuilds
        the index). Called under the owning log's lock."""
        pending = self._pending
        if not pending:
            return
        start = self._written * self.entry_size
        written = os.pwrite(self._descriptor(), pending, start)
        if written != len(pending):  # a regular file writes short only when the disk is full
            raise OSError(errno.ENOSPC, f"short write of {written} of {len(pending)} bytes")
        self._dirty = True
        self._written = self._entries
        pending.clear()

    def truncate_to_entries(self, n: int) -> None:
        """Keep the first ``n`` entries; zero the dropped ones on disk."""
        if n >= self._entries:
            return
        written = self._written
        if n >= written:  # only pending entries go: nothing of them is on the file
            del self._pending[(n - written) * self.entry_size:]
            self._entries = n
            return
        self._pending.clear()
        dropped = (written - n) * self.entry_size
        try:
            self._dirty = True
            os.pwrite(self._descriptor(), bytes(dropped), n * self.entry_size)
        finally:
            self._entries = self._written = n  # in memory at least; a crash re-checks the file on load

    def reset(self) -> None:
        self.truncate_to_entries(0)

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down to whole entries
        (never below the entries in use). Returns whether it changed."""
        self.write_pending()
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
        """fsync what was written since the last flush (nothing: no syscall).
        Pending entries are not written here (this may run outside the
        owning log's lock): the caller wrote them first (``write_pending``)."""
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
        """Release the mapping and descriptor without trimming (crash-like:
        pending entries are dropped, as a crash drops them)."""
        self._closed = True
        self._pending.clear()
        self._entries = self._written
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
