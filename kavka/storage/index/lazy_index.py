"""An offset or time index opened only when it is first used (Kafka's
LazyIndex, KAFKA-7283).

A broker hosting thousands of partitions would otherwise hold every
segment's two indexes open and mapped from the moment the log is loaded,
though most are never looked at: a segment that is no longer written is
read only when a consumer or a follower asks for its offsets, and the
active segment of a partition receiving small batches writes an index
entry only every ``index.interval.bytes``. Each mapped index costs a file
descriptor (``kavka.storage.index.index_file`` says why), and the
descriptor limit (``ulimit -n``) is what bounds the partitions a broker
can host.

``get()`` opens and maps the file on first use; ``unload()`` releases the
mapping and the descriptors again (a segment that stops being written:
the next lookup maps it again). Until then the index is a path and two
facts that need no descriptor: whether the file holds no entries (absent,
or empty after a trim), so that a lookup in an empty index is answered
without opening it, and whether what was written before an unload still
awaits its fsync.

A ``writable`` index (the active segment's) keeps its descriptor for its
``pwrite``s and is sized to ``max_index_size`` when it is opened (seed 002
§5.3 (5): the active segment's indexes are preallocated); another one
closes its descriptor once mapped.

Thread-safety: loading, unloading, renaming and deleting take the index's
own lock, so two threads that ask at once open it once. Lookups are made
under the owning ``Log``'s lock, which also covers ``unload`` (a mapping
cannot be closed while a lookup reads it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from kavka.storage.index.index_file import IndexFile, fsync_index_file

T = TypeVar("T", bound=IndexFile)


class LazyIndex(Generic[T]):
    """An ``OffsetIndex`` or ``TimeIndex`` of one segment, opened by the
    first ``get()``; see the module docstring."""

    __slots__ = ("_kind", "_path", "base_offset", "max_index_size", "writable", "_index", "_lock", "_empty",
                 "_unflushed")

    def __init__(self, kind: Callable[..., T], path: Path, base_offset: int, max_index_size: int, *, writable: bool) -> None:
        self._kind = kind
        self._path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._index: T | None = None
        self._lock = threading.Lock()
        self._empty = _file_length(path) == 0
        self._unflushed = False

    # ---- facts that need no descriptor ---------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self._path

    @property
    def loaded(self) -> bool:
        return self._index is not None

    @property
    def known_empty(self) -> bool:
        """Not loaded, and the file holds no entry (absent or of length 0):
        a lookup would find nothing."""
        return self._index is None and self._empty

    @property
    def size_in_bytes(self) -> int:
        """Bytes of entries in use; when not loaded, the file's length (an
        index is trimmed to its entries when its segment stops being
        written, so that is exact for every index that is not loaded)."""
        index = self._index
        if index is not None:
            return index.size_in_bytes
        return _file_length(self._path)

    def is_full(self, min_bytes: int) -> bool:
        """No room for another entry. An index not opened that holds none
        answers without opening: what it says once opened at
        ``max_index_size`` (``min_bytes``: the smallest size with room for
        an entry)."""
        index = self._index
        if index is None:
            if self._empty:
                return self.max_index_size < min_bytes
            index = self.get()
        return index.is_full()

    # ---- loading -------------------------------------------------------------------------------------
    def get(self) -> T:
        """The index, opened and mapped on the first call."""
        index = self._index
        if index is not None:
            return index
        with self._lock:
            if self._index is None:
                opened = self._kind(self._path, self.base_offset, self.max_index_size, keep_descriptor=self.writable)
                try:
                    if self.writable:
                        opened.resize(self.max_index_size)
                except BaseException:
                    opened.close_quietly()
                    raise
                self._index = opened
            return self._index

    def resize(self, size: int) -> None:
        """Make ``size`` the index's length: now if it is loaded, else when
        it is (an index that is not loaded keeps its file untouched)."""
        self.max_index_size = size
        index = self._index
        if index is not None:
            index.resize(size)

    def unload(self) -> None:
        """Trim the file to its entries and release the mapping and the
        descriptors; the next ``get()`` opens it again."""
        with self._lock:
            index = self._index
            if index is None:
                return
            self._index = None
            try:
                index.close()
            finally:
                self._unflushed = self._unflushed or index.dirty
                self._empty = index.entries == 0

    def write_pending(self) -> None:
        """Write the entries the index holds in memory (see ``IndexFile``);
        under the owning log's lock."""
        index = self._index
        if index is not None:
            index.write_pending()

    # ---- lifecycle -----------------------------------------------------------------------------------
    def flush(self) -> None:
        """fsync what was written, also before an ``unload`` (not the
        entries still in memory: ``write_pending`` first, under the lock)."""
        index = self._index
        if index is not None:
            index.flush()
        if self._unflushed:
            self._unflushed = False
            fsync_index_file(self._path)

    def close(self) -> None:
        with self._lock:
            index, self._index = self._index, None
            if index is not None:
                try:
                    index.close()
                finally:
                    self._empty = index.entries == 0

    def close_quietly(self) -> None:
        with self._lock:
            index, self._index = self._index, None
            if index is not None:
                index.close_quietly()

    def rename_to(self, new_path: Path) -> None:
        with self._lock:
            index = self._index
            if index is not None:
                index.rename_to(new_path)
            elif self._path.exists():
                os.replace(self._path, new_path)
            self._path = new_path

    def delete_file(self) -> bool:
        with self._lock:
            index, self._index = self._index, None
            self._empty = True
            self._unflushed = False
            if index is not None:
                return index.delete_file()
            try:
                self._path.unlink()
                return True
            except FileNotFoundError:
                return False

    def __repr__(self) -> str:
        state = "loaded" if self._index is not None else "empty" if self._empty else "not loaded"
        return f"LazyIndex({self._path.name}, {state})"


def _file_length(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
