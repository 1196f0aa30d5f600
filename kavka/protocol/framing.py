"""Size-prefixed framing of Kafka requests and responses.

Every message on a Kafka connection is ``int32 size`` followed by ``size``
bytes (header and body). ``frame`` adds the prefix; ``FrameDecoder`` is the
sans-IO reader: the connection feeds it whatever bytes arrived and gets back
the complete frames (without prefix). A size that is negative or larger than
``max_frame_size`` (Kafka's ``socket.request.max.bytes``, 100 MiB by
default) is rejected with ``FrameSizeError`` as soon as its four bytes are
seen — before any of the body is buffered — so a TLS ClientHello sent to a
plaintext port (its first bytes read as a size of about 369 million) or a
hostile size costs nothing. After that error the decoder stays failed: the
connection must be closed.

``FrameReader`` is the same reader for a socket that receives into
buffers it is given (``recv_into``, asyncio's ``BufferedProtocol``; the
client's responses: the broker's requests go through
``kavka.server.frame_receiver``, which also admits each frame against its
memory pool before reading it): small
frames are read through one fixed staging buffer, and a frame larger than
that is received straight into its own buffer of exactly its size,
allocated once its size has passed the same check, so the bytes of a large
response (a Fetch of several MiB) are written once, by the kernel, and
never staged or copied. That buffer is used again for a later large frame
once nothing refers to the frame it held (no view of it is left): memory
the process has already touched costs no page faults, and faulting in fresh
pages cost more than the copy it replaced (bench/README.md, spark.py).
Given a ``kavka.protocol.frame_buffers.FrameBuffers``, a reader takes
that buffer from it instead of allocating one, and gives its kept buffer
back there when it is replaced or when the connection is done
(``release``), so the next connection of the process starts with it.

One decoder per connection; not thread-safe (one event-loop task owns it).
"""

from __future__ import annotations

import sys

from kavka.protocol.buffers import Buffer
from kavka.protocol.errors import FrameSizeError
from kavka.protocol.frame_buffers import FrameBuffers
from kavka.protocol.primitives import INT32

SOCKET_REQUEST_MAX_BYTES = 100 * 1024 * 1024  # Kafka's default
_unpack_size = INT32.unpack_from
_pack_size = INT32.pack


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """``payload`` with its int32 size prefix."""
    return _pack_size(len(payload)) + bytes(payload)


def frame_parts(parts: list[Buffer]) -> list[Buffer]:
    """Prefix a list of byte parts with their total size (for
    ``writelines``: the parts are not copied)."""
    return [_pack_size(sum(len(p) for p in parts)), *parts]


class FrameDecoder:
    """Turns a byte stream into frames. ``feed(data)`` returns the frames it
    completed (possibly none), each a read-only buffer: ``bytes``, or a
    read-only ``memoryview`` of the staging buffer for a frame that arrived
    over several reads (decoders take either); ``buffered`` is how many
    bytes wait for the rest of a frame."""

    __slots__ = ("max_frame_size", "_buf", "_failed")

    def __init__(self, max_frame_size: int = SOCKET_REQUEST_MAX_BYTES) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._failed: FrameSizeError | None = None

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes | memoryview]:
        if self._failed is not None:
            raise FrameSizeError(self._failed.reason)
        buf = self._buf
        frames: list[bytes | memoryview] = []
        if not buf and len(data) >= 4:
            # Fast path: whole frames straight from ``data`` without staging.
            view = memoryview(data)
            pos = 0
            while len(view) - pos >= 4:
                size = self._check(_unpack_size(view, pos)[0])
                if len(view) - pos - 4 < size:
                    break
                frames.append(bytes(view[pos + 4 : pos + 4 + size]))
                pos += 4 + size
            buf += view[pos:]
            return frames
        buf += data
        n = len(buf)
        pos = 0
        while n - pos >= 4:
            size = self._check(_unpack_size(buf, pos)[0])
            if n - pos - 4 < size:
                break
            pos += 4 + size
        if pos == 0:
            return frames
        # Hand out the staged bytes themselves, read-only, instead of copying
        # each frame out: a large request (a produce of 1 MB arrives in many
        # reads) is then copied once, not three times. Only the start of an
        # incomplete next frame is copied into a fresh staging buffer; the
        # old one is never resized again while views of it live.
        view = memoryview(buf).toreadonly()
        self._buf = bytearray(view[pos:])
        start = 0
        while start < pos:
            size = _unpack_size(view, start)[0]
            frames.append(view[start + 4 : start + 4 + size])
            start += 4 + size
        return frames

    def _check(self, size: int) -> int:
        if size < 0 or size > self.max_frame_size:
            self._buf.clear()
            what = "negative" if size < 0 else f"larger than the maximum {self.max_frame_size}"
            self._failed = FrameSizeError(
                f"frame size {size} is {what} (socket.request.max.bytes); "
                "is the client speaking TLS or another protocol to a plaintext Kafka port?"
            )
            raise FrameSizeError(self._failed.reason)
        return size


class FrameReader:
    """Frames from a stream received into buffers this object hands out:
    ``get_buffer()`` is where the next bytes go (writable, never empty),
    ``received(n)`` says ``n`` bytes were written there and returns the
    frames completed (possibly none). Frames of up to ``staging_bytes - 4``
    bytes come out as ``bytes`` copied from the staging buffer; larger ones
    as a read-only ``memoryview`` of their own buffer, which nothing
    writes to again. Sizes are checked as ``FrameDecoder`` checks them,
    before anything is allocated for the frame; after a ``FrameSizeError``
    the receiver stays failed. ``buffered`` is how many bytes of incomplete
    frames it holds. ``buffers``: a pool shared with other readers of the
    process, where large-frame buffers come from and go back to
    (``release`` when the stream is done)."""

    __slots__ = ("max_frame_size", "spare_bytes", "_staging", "_staged", "_frame", "_size", "_filled", "_spare",
                 "_buffers", "_failed")

    def __init__(self, max_frame_size: int = SOCKET_REQUEST_MAX_BYTES, staging_bytes: int = 64 * 1024,
                 spare_bytes: int = 16 * 1024 * 1024, buffers: FrameBuffers | None = None) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        if staging_bytes < 8:
            raise ValueError(f"staging_bytes must be >= 8, got {staging_bytes}")
        self.max_frame_size = max_frame_size
        self.spare_bytes = spare_bytes  # the largest frame buffer kept for reuse
        self._staging = bytearray(staging_bytes)
        self._staged = 0  # _staging[:_staged]: the start of the next frame
        self._frame: bytearray | None = None  # a large frame being received into _frame[:_size]
        self._size = 0
        self._filled = 0  # bytes of it received
        self._spare: bytearray | None = None  # the last large frame's buffer, reused when free
        self._buffers = buffers
        self._failed: FrameSizeError | None = None

    @property
    def buffered(self) -> int:
        return self._staged + self._filled

    @property
    def frame_remaining(self) -> int:
        """Bytes still to come of the large frame being received into its
        own buffer (0 when none is): the least the stream owes before that
        frame is complete."""
        return self._size - self._filled if self._frame is not None else 0

    def get_buffer(self) -> memoryview:
        if self._frame is not None:
            return memoryview(self._frame)[self._filled:self._size]
        return memoryview(self._staging)[self._staged:]

    def received(self, n: int) -> list[bytes | memoryview]:
        if self._failed is not None:
            raise FrameSizeError(self._failed.reason)
        if self._frame is not None:
            self._filled += n
            if self._filled < self._size:
                return []
            frame, size = self._frame, self._size
            self._frame, self._size, self._filled = None, 0, 0
            done = memoryview(frame)
            return [(done[:size] if size < len(frame) else done).toreadonly()]
        frames: list[bytes | memoryview] = []
        buf = self._staging
        view = memoryview(buf)
        end = self._staged + n
        pos = 0
        while end - pos >= 4:
            size = _unpack_size(buf, pos)[0]
            if size < 0 or size > self.max_frame_size:
                self._staged = 0
                what = "negative" if size < 0 else f"larger than the maximum {self.max_frame_size}"
                self._failed = FrameSizeError(
                    f"frame size {size} is {what} (socket.request.max.bytes); "
                    "is the peer speaking TLS or another protocol to a plaintext Kafka port?")
                raise FrameSizeError(self._failed.reason)
            if end - pos - 4 >= size:
                frames.append(bytes(view[pos + 4 : pos + 4 + size]))
                pos += 4 + size
            elif 4 + size > len(buf):
                # Too large to stage: its own buffer (its size checked
                # above) with what already arrived; the rest goes into it.
                frame = self._frame_buffer(size)
                have = end - pos - 4
                frame[:have] = view[pos + 4 : end]
                self._frame, self._size, self._filled = frame, size, have
                pos = end
            else:
                break
        # Keep the staging buffer's free space at its end: the start of the
        # next frame (shorter than the buffer) moves to the front.
        if 0 < pos < end:
            view[: end - pos] = view[pos:end]
        self._staged = end - pos
        return frames

    def release(self) -> None:
        """The stream is done: the kept buffer goes to the shared pool
        (if any), for the process's next reader. Frames handed out stay
        valid: the pool hands the buffer out again only once no view of
        them is left."""
        spare, self._spare = self._spare, None
        if spare is not None and self._buffers is not None:
            self._buffers.give(spare)

    def _frame_buffer(self, size: int) -> bytearray:
        """A buffer of at least ``size`` bytes for a large frame: the spare
        when it is big enough and free, else one taken from the shared pool,
        else a new one (either kept as the spare when at most
        ``spare_bytes``; the spare it replaces goes to the pool). Free means no reference to it is
        left but ours (``sys.getrefcount``: the attribute, the local name and
        the call's argument), so no view of a frame handed out earlier can see the new
        bytes: every memoryview of it, and every slice of those, holds a
        reference to it. A kept buffer has an eighth more room than its
        frame (within ``spare_bytes``): successive fetch responses differ
        by a few batches, and one a little larger than the last would
        otherwise need a new buffer (zeroed and page-faulted in: as much
        CPU as receiving it)."""
        spare = self._spare
        if spare is not None and len(spare) >= size and sys.getrefcount(spare) == 3:  # + the local name
            return spare
        kept: bytearray | None = None
        if size > self.spare_bytes:
            frame = bytearray(size)
        else:
            if self._buffers is not None:
                kept = self._buffers.take(size)
            if kept is None:
                kept = bytearray(min(size + size // 8, self.spare_bytes))
            frame = kept
        self._spare = kept
        if spare is not None and self._buffers is not None:
            self._buffers.give(spare)
        return frame
