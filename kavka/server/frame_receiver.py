"""Reading request frames into memory granted before it is used (Kafka's
``NetworkReceive`` with its ``MemoryPool``).

A connection is an ``asyncio.BufferedProtocol``: the transport asks it
where to put the next bytes (``buffer()``) and tells it how many came
(``received(n, admit)``). The receiver answers with:

- the shared ``staging`` buffer of its server while it waits for a size
  prefix; complete frames found there are copied out at once, so nothing
  in it outlives the call;
- once a frame's size is read and checked (negative or over
  ``max_frame_size``, i.e. ``socket.request.max.bytes``: ``FrameSizeError``,
  and the connection is closed) and ``admit(size, whole)`` granted it, a buffer of
  exactly that size that the socket fills directly (a 1 MB produce request
  is copied once, from the kernel; a frame of ``MAPPED_BODY`` or more gets
  its own anonymous mapping), in slices of at most ``MAX_BODY_READ``
  (the connection also gives the loop a turn after a large read, so one
  connection's large frame does not keep the others waiting).

When ``admit`` refuses (no memory in the pool, no request slot, or the
connection busy with an earlier request), the receiver sets ``blocked`` and keeps what it
had already read (at most one read of ``STAGING_SIZE``) without reading
more: the connection pauses the transport, and the rest of the frame waits
in the kernel. ``resume(admit)`` — called when the connection may admit again —
asks again and returns the frames then complete. No byte of a declared
frame is buffered beyond that one read before ``admit`` grants its size.

Frames come out as ``bytes`` or read-only ``memoryview`` objects (the
decoders take either); each one admitted exactly once.

One receiver per connection, on the event loop; not thread-safe.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable

from kavka.protocol.errors import FrameSizeError

STAGING_SIZE = 64 * 1024  # one read while waiting for a size prefix
MAX_BODY_READ = 1024 * 1024  # one read into a frame's own buffer
# Frames from this size on get their own anonymous mapping: its pages are
# touched as the socket fills them (no zero-fill pause of the loop) and go
# back to the system when the frame is dropped, whatever malloc would keep.
MAPPED_BODY = 4 * 1024 * 1024
_unpack_size = struct.Struct(">i").unpack_from

Frame = bytes | memoryview
Admit = Callable[[int, bool], bool]


class FrameReceiver:
    """See the module docstring. The ``admit(size, whole)`` given to
    ``received`` and ``resume`` returns whether a frame of ``size`` bytes
    may be read now (and takes what it needs if so); ``whole`` says whether
    its bytes are all read already. (Passed per call, not kept: a
    connection and its receiver hold no reference cycle, so a connection
    closed at once is freed at once.)"""

    __slots__ = ("max_frame_size", "blocked", "_staging", "_rest", "_rest_pos", "_in_staging",
                 "_body", "_filled", "_failed")

    def __init__(self, max_frame_size: int, staging: memoryview) -> None:
        self.max_frame_size = max_frame_size
        self.blocked = False
        self._staging = staging  # a writable view, never resized
        self._rest = b""  # bytes read and not yet cut: a partial size prefix, or all after a refusal
        self._rest_pos = 0
        self._in_staging = 0  # how much of ``_rest`` buffer() copied to the start of the staging buffer
        self._body: bytearray | mmap.mmap | None = None
        self._filled = 0
        self._failed: FrameSizeError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held for frames not yet complete or not yet admitted."""
        return len(self._rest) - self._rest_pos + self._filled

    @property
    def has_pending(self) -> bool:
        """Whether bytes already read wait to be cut into frames."""
        return len(self._rest) - self._rest_pos >= 4

    def buffer(self) -> memoryview:
        """Where the next bytes from the socket go."""
        body = self._body
        if body is not None:
            end = min(len(body), self._filled + MAX_BODY_READ)
            return memoryview(body)[self._filled : end]
        staging = self._staging
        rest = len(self._rest) - self._rest_pos
        if not rest:
            self._in_staging = 0
            return staging
        if not self.blocked:
            # At most three bytes of a size prefix (or, if the transport
            # did not stop in time after a refusal, nothing: see received).
            staging[:rest] = self._rest[self._rest_pos :]
            self._rest, self._rest_pos = b"", 0
        self._in_staging = 0 if self.blocked else rest
        return staging[self._in_staging :]

    def received(self, n: int, admit: Admit) -> list[Frame]:
        """``n`` bytes were written into the last ``buffer()``; the frames
        now complete, in order (possibly none)."""
        if self._failed is not None:
            raise FrameSizeError(self._failed.reason)
        body = self._body
        if body is not None:
            self._filled += n
            if self._filled < len(body):
                return []
            self._body, self._filled = None, 0
            return [memoryview(body).toreadonly()]
        staging = self._staging
        if self.blocked:
            # The transport delivered after it was paused: keep the bytes.
            self._rest = self._rest[self._rest_pos :] + bytes(staging[:n])
            self._rest_pos = 0
            return []
        view = staging[: self._in_staging + n]
        frames: list[Frame] = []
        pos = self._cut(view, frames, admit)
        if pos < len(view):
            self._rest, self._rest_pos = bytes(view[pos:]), 0
        return frames

    def resume(self, admit: Admit) -> list[Frame]:
        """Try again after a refusal; the frames then complete."""
        self.blocked = False
        frames: list[Frame] = []
        if self._body is None and len(self._rest) - self._rest_pos >= 4:
            view = memoryview(self._rest)[self._rest_pos :]
            self._rest_pos += self._cut(view, frames, admit)
            if self._rest_pos == len(self._rest):
                self._rest, self._rest_pos = b"", 0
        return frames

    def _cut(self, view: memoryview, frames: list[Frame], admit: Admit) -> int:
        """Cut the frames of ``view`` into ``frames``; how many bytes were
        consumed (into frames, or into a new frame buffer). Stops before a
        frame that is refused (``blocked``) or at a partial size prefix."""
        end = len(view)
        pos = 0
        while end - pos >= 4:
            size = _unpack_size(view, pos)[0]
            if size < 0 or size > self.max_frame_size:
                self._fail(size)
            start = pos + 4
            if not admit(size, end - start >= size):
                self.blocked = True
                return pos
            if end - start >= size:
                frames.append(bytes(view[start : start + size]))
                pos = start + size
            else:
                body = mmap.mmap(-1, size) if size >= MAPPED_BODY else bytearray(size)
                got = end - start
                body[:got] = view[start:end]
                self._body, self._filled = body, got
                return end
        return pos

    def _fail(self, size: int) -> None:
        what = "negative" if size < 0 else f"larger than the maximum {self.max_frame_size}"
        self._failed = FrameSizeError(
            f"frame size {size} is {what} (socket.request.max.bytes); "
            "is the client speaking TLS or another protocol to a plaintext Kafka port?")
        self._rest, self._rest_pos = b"", 0
        raise FrameSizeError(self._failed.reason)
