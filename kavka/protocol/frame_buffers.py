"""``FrameBuffers``: large-frame buffers handed from one ``FrameReader``
to the next, so a new connection starts with memory the process has
already touched.

Why: a ``FrameReader`` keeps the buffer of its last large frame and
receives the next one into it (kavka.protocol.framing), but a connection
lives only as long as its user: a Spark task opens its own connections
and closes them when its range is read, and the next task in the same
worker process would allocate, zero and page-fault in a new buffer of
about 9 MiB (one page fault per 4 KiB, as much CPU as receiving the
bytes; bench/README.md, the Spark section). A reader given a
``FrameBuffers`` returns its kept buffer here when its connection closes
(``FrameReader.release``), and hands over a kept buffer it replaces by a
larger one; a reader needing a new buffer takes one from here first.

Ownership moves: ``take`` removes the buffer from the pool and the reader
owns it from then on. A buffer may be given back while a frame it held is
still referenced (a caller decoding the last response of a closed
connection): it is handed out again only once no view of it is left (every
memoryview, and every slice of one, holds a reference to it, so its
reference count says so), so nothing handed out earlier ever changes.

Bounds: the pool keeps at most ``max_bytes`` of buffers. A buffer given
when that would be exceeded replaces smaller free ones (smallest first)
if that makes room, else is dropped (freed with its last reference).

Thread-safe (a lock around the list): one process may run event loops in
several threads, each with its own connections.
"""

from __future__ import annotations

import sys
import threading

# Two Spark-sized fetch buffers (8 MiB responses with an eighth of room):
# what one worker process's task holds per broker it reads from.
MAX_POOL_BYTES = 32 * 1024 * 1024

# sys.getrefcount(self._buffers[i]) of a free buffer: the pool's list and
# getrefcount's own argument.
_FREE_REFS = 2


class FrameBuffers:
    """See the module docstring."""

    __slots__ = ("max_bytes", "_buffers", "_lock")

    def __init__(self, max_bytes: int = MAX_POOL_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"FrameBuffers needs max_bytes >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._buffers: list[bytearray] = []
        self._lock = threading.Lock()

    @property
    def pooled_bytes(self) -> int:
        return sum(len(b) for b in self._buffers)

    def take(self, size: int) -> bytearray | None:
        """The smallest free pooled buffer of at least ``size`` bytes,
        removed from the pool (the caller owns it), or None."""
        with self._lock:
            best = None
            for i in range(len(self._buffers)):
                if len(self._buffers[i]) >= size and self._is_free(i) and (
                        best is None or len(self._buffers[i]) < len(self._buffers[best])):
                    best = i
            return None if best is None else self._buffers.pop(best)

    def give(self, buf: bytearray) -> None:
        """Keep ``buf`` (which the caller no longer writes to) for a later
        ``take``, within ``max_bytes``: free buffers smaller than it are
        dropped (smallest first) when that makes room, else ``buf`` is."""
        with self._lock:
            if any(b is buf for b in self._buffers):
                return
            total = self.pooled_bytes
            if total + len(buf) > self.max_bytes:
                smaller = sorted((i for i in range(len(self._buffers))
                                  if len(self._buffers[i]) < len(buf) and self._is_free(i)),
                                 key=lambda i: len(self._buffers[i]))
                drop = set()
                for i in smaller:
                    if total + len(buf) <= self.max_bytes:
                        break
                    drop.add(i)
                    total -= len(self._buffers[i])
                if total + len(buf) > self.max_bytes:
                    return
                self._buffers[:] = [b for i, b in enumerate(self._buffers) if i not in drop]
            self._buffers.append(buf)

    def _is_free(self, i: int) -> bool:
        return sys.getrefcount(self._buffers[i]) == _FREE_REFS
