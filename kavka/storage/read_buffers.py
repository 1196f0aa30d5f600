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
on its heap anyway); the pool (``kavka.common.buffer_pool``) keeps at most
``max_bytes`` of buffers. A read finding no free buffer that fits gets a
new one, kept when it fits under the bound (replacing smaller free buffers
if that makes room), else lent out once and dropped with its last view.

Thread-safe (a lock around choosing a buffer): log reads run on the
event loop and, for internal topics, in other threads.
"""

from __future__ import annotations

import os

from kavka.common.buffer_pool import BufferPool

MIN_POOLED_BYTES = 256 * 1024
MAX_POOL_BYTES = 64 * 1024 * 1024  # eight consumer fetches of 8 MiB in flight, or 64 follower fetches of 1 MiB


class ReadBuffers(BufferPool):
    """See the module docstring: a ``BufferPool`` lending views of its
    buffers to log reads."""

    __slots__ = ("min_bytes",)

    def __init__(self, min_bytes: int = MIN_POOLED_BYTES, max_bytes: int = MAX_POOL_BYTES) -> None:
        if min_bytes < 1:
            raise ValueError(f"ReadBuffers needs min_bytes >= 1, got {min_bytes}")
        super().__init__(max_bytes)
        self.min_bytes = min_bytes

    def pread(self, fd: int, size: int, position: int) -> bytes | memoryview:
        """``os.pread(fd, size, position)``, into a pooled buffer when
        ``size`` is at least ``min_bytes`` (a read-only view of the bytes
        read; shorter at the end of the file, as ``pread``)."""
        if size < self.min_bytes:
            return os.pread(fd, size, position)
        buf = self.find(size, take=False)
        if buf is None:
            buf = bytearray(size)
            self.keep(buf)
        view = memoryview(buf)[:size]
        n = os.preadv(fd, [view], position)
        return view[:n].toreadonly()
