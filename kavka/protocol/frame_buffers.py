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

Bounds and the free test: ``kavka.common.buffer_pool`` (at most
``max_bytes`` of buffers; a buffer given when that would be exceeded
replaces smaller free ones, smallest first, if that makes room, else is
dropped and freed with its last reference).

Thread-safe (a lock around the list): one process may run event loops in
several threads, each with its own connections.
"""

from __future__ import annotations

from kavka.common.buffer_pool import BufferPool

# Two Spark-sized fetch buffers (8 MiB responses with an eighth of room):
# what one worker process's task holds per broker it reads from.
MAX_POOL_BYTES = 32 * 1024 * 1024


class FrameBuffers(BufferPool):
    """See the module docstring: a ``BufferPool`` whose buffers change
    owner (``take`` removes one, ``give`` pools one again)."""

    __slots__ = ()

    def __init__(self, max_bytes: int = MAX_POOL_BYTES) -> None:
        super().__init__(max_bytes)

    def take(self, size: int) -> bytearray | None:
        """The smallest free pooled buffer of at least ``size`` bytes,
        removed from the pool (the caller owns it), or None."""
        return self.find(size, take=True)

    def give(self, buf: bytearray) -> None:
        """Keep ``buf`` (which the caller no longer writes to) for a later
        ``take``, within ``max_bytes``: free buffers smaller than it are
        dropped (smallest first) when that makes room, else ``buf`` is."""
        self.keep(buf)
