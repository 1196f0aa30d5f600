"""``BufferPool``: large ``bytearray``s kept for reuse, bounded in bytes,
each free again once nothing but the pool refers to it.

Why: a new multi-MiB buffer costs the kernel a page fault per 4 KiB on its
first touch, as much CPU as the copy into it (bench/README.md, the Spark
section); the broker's Fetch reads (``kavka.storage.read_buffers``) and a
client's large responses (``kavka.protocol.frame_buffers``) keep theirs
here instead.

Free: the pool's list holds one reference to a buffer, and every
memoryview of it, and every slice of one, holds another (through the view's
exporter); a buffer whose reference count is the pool's alone (plus
``sys.getrefcount``'s argument) has nothing left that could see it change,
so it may be written again. A buffer ``find`` returns is referenced by the
caller from then on, so no other thread finds it free meanwhile.

Bounds: at most ``max_bytes`` of buffers. ``keep`` of a buffer that would
exceed it drops free buffers smaller than it (smallest first) when that
makes room, else does not keep it (it is freed with its last reference).

Thread-safe: a lock around the list.
"""

from __future__ import annotations

import sys
import threading

# sys.getrefcount(self._buffers[i]) of a free buffer: the pool's list and
# getrefcount's own argument.
_FREE_REFS = 2


class BufferPool:
    """See the module docstring."""

    __slots__ = ("max_bytes", "_buffers", "_lock")

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"a buffer pool needs max_bytes >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self._buffers: list[bytearray] = []
        self._lock = threading.Lock()

    @property
    def pooled_bytes(self) -> int:
        return sum(len(b) for b in self._buffers)

    def find(self, size: int, *, take: bool) -> bytearray | None:
        """The smallest free buffer of at least ``size`` bytes, or None;
        ``take``: removed from the pool (the caller owns it), else it stays
        pooled and is free again once the caller's views of it are gone."""
        with self._lock:
            best = None
            for i in range(len(self._buffers)):
                if len(self._buffers[i]) >= size and self._is_free(i) and (
                        best is None or len(self._buffers[i]) < len(self._buffers[best])):
                    best = i
            if best is None:
                return None
            return self._buffers.pop(best) if take else self._buffers[best]

    def keep(self, buf: bytearray) -> bool:
        """Pool ``buf`` within ``max_bytes`` (see the module docstring);
        whether it is pooled."""
        with self._lock:
            if any(b is buf for b in self._buffers):
                return True
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
                    return False
                self._buffers[:] = [b for i, b in enumerate(self._buffers) if i not in drop]
            self._buffers.append(buf)
            return True

    def _is_free(self, i: int) -> bool:
        return sys.getrefcount(self._buffers[i]) == _FREE_REFS
