"""``ReadBuffers``: the buffers a Fetch's log reads land in, kept and used
again instead of allocated per read.

Why: a consumer's fetch reads up to ``max.partition.fetch.bytes`` (8 MiB
for Spark's Kafka source) of a segment at a time. Read into a new
``bytes`` each time, glibc hands such blocks to the kernel and back
(``mmap``/``munmap``, or a trimmed heap top), so every read first
page-faults its whole length in again: about a page fault per 4 KiB
fetched, as much CPU as the read's copy itself (bench/README.md, the Spark
section). Kafka avoids both with ``sendfile``; here the bytes still pass
through memory, but through memory that is already mapped.

A buffer is lent out as a read-only ``memoryview`` of exactly the bytes
read, and is free again once no view of it is left: every view and slice
of a view holds a reference to the buffer, so its reference count says
when the last one (the response written to the socket, a DelayedFetch
holding its result, a caller keeping the records) is gone. Until then it
is never written, so nothing handed out changes under its holder.

Bounds: reads smaller than ``min_bytes`` are not pooled (glibc keeps them
on its heap anyway); the pool keeps at most ``max_bytes`` of buffers. A
read finding no free buffer that fits gets a new one, kept when it fits
under the bound (replacing the smallest free buffer if that makes room),
else lent out once and dropped with its last view.

Thread-safe (a lock around choosing a buffer): log reads run on the
event loop and, for internal topics, in other threads.
"""

from __future__ import annotations

import os
import sys
import threading

MIN_POOLED_BYTES = 256 * 1024
MAX_POOL_BYTES = 64 * 1024 * 1024  # eight consumer fetches of 8 MiB in flight, or 64 follower fetches of 1 MiB

# sys.getrefcount(self._buffers[i]) of a free buffer: the pool's list and
# getrefcount's own argument (a view holds one more through its managed buffer).
_FREE_REFS = 2


class ReadBuffers:
    """See the module docstring."""

    __slots__ = ("min_bytes", "max_bytes", "_buffers", "_lock")

    def __init__(self, min_bytes: int = MIN_POOLED_BYTES, max_bytes: int = MAX_POOL_BYTES) -> None:
        if min_bytes < 1 or max_bytes < 0:
            raise ValueError(f"ReadBuffers needs min_bytes >= 1 and max_bytes >= 0, got {min_bytes}, {max_bytes}")
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self._buffers: list[bytearray] = []
        self._lock = threading.Lock()

    @property
    def pooled_bytes(self) -> int:
        return sum(len(b) for b in self._buffers)

    def pread(self, fd: int, size: int, position: int) -> bytes | memoryview:
        """``os.pread(fd, size, position)``, into a pooled buffer when
        ``size`` is at least ``min_bytes`` (a read-only view of the bytes
        read; shorter at the end of the file, as ``pread``)."""
        if size < self.min_bytes:
            return os.pread(fd, size, position)
        view = self._lend(size)
        n = os.preadv(fd, [view], position)
        return view[:n].toreadonly()

    def _lend(self, size: int) -> memoryview:
        with self._lock:
            i = self._free_index(size)
            if i is not None:
                return memoryview(self._buffers[i])[:size]
            buf = bytearray(size)
            self._keep(buf)
            return memoryview(buf)

    def _free_index(self, size: int) -> int | None:
        """The smallest free buffer of at least ``size`` bytes."""
        best = None
        for i in range(len(self._buffers)):
            if len(self._buffers[i]) >= size and self._is_free(i) and (
                    best is None or len(self._buffers[i]) < len(self._buffers[best])):
                best = i
        return best

    def _is_free(self, i: int) -> bool:
        return sys.getrefcount(self._buffers[i]) == _FREE_REFS

    def _keep(self, buf: bytearray) -> None:
        """Pool ``buf`` if it fits under ``max_bytes``, dropping free
        buffers smaller than it (smallest first) to make room."""
        total = self.pooled_bytes
        if total + len(buf) > self.max_bytes:
            free = sorted((i for i in range(len(self._buffers))
                           if len(self._buffers[i]) < len(buf) and self._is_free(i)),
                          key=lambda i: len(self._buffers[i]))
            drop = set()
            for i in free:
                if total + len(buf) <= self.max_bytes:
                    break
                drop.add(i)
                total -= len(self._buffers[i])
            if total + len(buf) > self.max_bytes:
                return
            self._buffers[:] = [b for i, b in enumerate(self._buffers) if i not in drop]
        self._buffers.append(buf)
