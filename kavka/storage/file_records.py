"""The ``.log`` file of one segment: v2 record batches exactly as on the wire.

Disk format: batches back to back, each ``base_offset int64, batch_length
int32, ...`` (see ``kavka.protocol.records.batch``); nothing else. The
logical size is tracked in memory and every read is bounded by it, so bytes
past it (a failed write, a preallocated tail) are never served.

Appends use ``os.pwritev`` at the logical end: no copy of the batch, and a
write that fails half-way is cut off again (``ftruncate``) and in any case
overwritten by the next append. An ``OSError`` becomes ``KafkaStorageError``
naming the file.

Guarded by the owning ``Log``'s lock (reads of already-written bytes may run
concurrently: ``pread`` has no shared file position).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

from kavka.protocol.records.batch import HEADER_SIZE, LOG_OVERHEAD, InvalidRecordBatch, RecordBatchHeader, parse_header
from kavka.storage.errors import KafkaStorageError

if TYPE_CHECKING:
    from kavka.storage.read_buffers import ReadBuffers

Buffer = bytes | bytearray | memoryview
_INT32 = struct.Struct(">i")


class FileRecords:
    """Append-only batch file with positional reads."""

    __slots__ = ("path", "_fd", "_size", "_preallocated")

    def __init__(self, path: Path, *, preallocate_bytes: int = 0) -> None:
        self.path = path
        existed = path.exists()
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            self._size = os.fstat(self._fd).st_size
            self._preallocated = False
            if not existed and preallocate_bytes > 0:
                os.posix_fallocate(self._fd, 0, preallocate_bytes)
                self._preallocated = True
        except OSError as e:
            raise KafkaStorageError("cannot open segment file", path, e) from e

    @property
    def size(self) -> int:
        return self._size

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def append(self, parts: Sequence[Buffer]) -> int:
        """Write ``parts`` at the logical end; return the bytes written."""
        total = 0
        for p in parts:
            total += len(p)
        start = self._size
        try:
            written = os.pwritev(self._fd, parts, start)
            while written < total:  # a short write: go on from where it stopped
                if written <= 0:
                    raise OSError(28, "short write")
                rest = _advance([memoryview(p).cast("B") for p in parts], written)
                n = os.pwritev(self._fd, rest, start + written)
                if n <= 0:
                    raise OSError(28, "short write")
                written += n
        except OSError as e:
            self._cut_back(start)
            raise KafkaStorageError("append failed, the partial write was cut off", self.path, e) from e
        self._size = start + total
        return total

    def _cut_back(self, size: int) -> None:
        """Best effort: remove a partial write. Reads never pass the logical
        size, and the next append overwrites the tail anyway."""
        try:
            if not self._preallocated:
                os.ftruncate(self._fd, size)
        except OSError:
            pass

    @overload
    def read(self, position: int, size: int) -> bytes: ...

    @overload
    def read(self, position: int, size: int, buffers: ReadBuffers) -> bytes | memoryview: ...

    def read(self, position: int, size: int, buffers: ReadBuffers | None = None) -> bytes | memoryview:
        """Up to ``size`` bytes from ``position``, never past the logical
        end; with ``buffers``, a large read lands in one of its buffers (a
        read-only view: see ``kavka.storage.read_buffers``)."""
        end = min(self._size, position + size)
        if position >= end:
            return b""
        try:
            if buffers is not None:
                return buffers.pread(self._fd, end - position, position)
            return os.pread(self._fd, end - position, position)
        except OSError as e:
            raise KafkaStorageError("read failed", self.path, e) from e

    def read_into(self, buf: bytearray | memoryview, position: int) -> int:
        try:
            return os.preadv(self._fd, [buf], position)
        except OSError as e:
            raise KafkaStorageError("read failed", self.path, e) from e

    def headers_from(self, position: int, end: int | None = None) -> Iterator[tuple[int, RecordBatchHeader]]:
        """``(position, header)`` of each batch from ``position`` (not CRC
        checked: for lookups over bytes already validated on append or
        recovery). Stops at the logical end or at an unreadable header."""
        limit = self._size if end is None else min(end, self._size)
        pos = position
        if pos < 0:
            return
        while limit - pos >= HEADER_SIZE:
            raw = self.read(pos, HEADER_SIZE)
            try:
                header = parse_header(raw)
            except InvalidRecordBatch:
                return
            if header.size < HEADER_SIZE or pos + header.size > limit:
                return
            yield pos, header
            pos += header.size

    def batch_size_at(self, position: int) -> int | None:
        raw = self.read(position, LOG_OVERHEAD)
        if len(raw) < LOG_OVERHEAD:
            return None
        size: int = _INT32.unpack_from(raw, 8)[0]
        return size + LOG_OVERHEAD

    def truncate_to(self, size: int) -> int:
        """Cut the file to ``size`` bytes; return the bytes removed."""
        if size > self._size:
            raise ValueError(f"cannot truncate {self.path} of {self._size} bytes up to {size}")
        removed = self._size - size
        try:
            os.ftruncate(self._fd, size)
        except OSError as e:
            raise KafkaStorageError("truncate failed", self.path, e) from e
        self._size = size
        self._preallocated = False
        return removed

    def truncate_quietly(self, size: int) -> None:
        """Undo an append whose index update failed: the logical size goes
        back regardless; the file is cut when the disk lets us."""
        self._size = min(self._size, size)
        self._cut_back(self._size)

    def trim(self) -> None:
        """Drop a preallocated tail (segment roll or close)."""
        if self._preallocated:
            os.ftruncate(self._fd, self._size)
            self._preallocated = False

    def flush(self) -> None:
        if self._fd < 0:
            return
        try:
            os.fsync(self._fd)
        except OSError as e:
            raise KafkaStorageError("fsync failed", self.path, e) from e

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            self.trim()
        finally:
            self.close_quietly()

    def close_quietly(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def rename_to(self, new_path: Path) -> None:
        try:
            os.replace(self.path, new_path)
        except OSError as e:
            raise KafkaStorageError(f"rename to {new_path.name} failed", self.path, e) from e
        self.path = new_path

    def delete_file(self) -> bool:
        self.close_quietly()
        try:
            self.path.unlink()
            return True
        except FileNotFoundError:
            return False

    def last_modified_ms(self) -> int:
        return os.stat(self.path).st_mtime_ns // 1_000_000


def _advance(views: list[memoryview], n: int) -> list[memoryview]:
    """Drop the first ``n`` bytes of a list of buffers (after a short write)."""
    out: list[memoryview] = []
    for v in views:
        if n >= len(v):
            n -= len(v)
            continue
        out.append(v[n:])
        n = 0
    return out
