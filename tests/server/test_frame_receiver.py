"""``FrameReceiver`` driven as a transport drives a BufferedProtocol: the
frames of any byte stream come out whole and in order however the reads
split it; nothing of a frame is read past one staging read before its
admission; a refusal stops it, ``resume`` carries on; an oversized or
negative size fails the stream."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.protocol.errors import FrameSizeError
from kavka.protocol.framing import frame
from kavka.server.frame_receiver import MAPPED_BODY, MAX_BODY_READ, STAGING_SIZE, FrameReceiver


class Feeder:
    """Plays the transport: writes ``data`` into the receiver's buffers,
    at most ``chunk`` bytes a read, stopping while the receiver is
    blocked (a paused transport)."""

    def __init__(self, receiver: FrameReceiver, data: bytes) -> None:
        self.receiver, self.data, self.pos = receiver, data, 0
        self.frames: list[bytes] = []
        self.largest_read = 0

    def run(self, chunks) -> None:
        chunks = iter(chunks)
        while self.pos < len(self.data) and not self.receiver.blocked:
            buf = self.receiver.buffer()
            n = min(len(buf), len(self.data) - self.pos, next(chunks, 1 << 30))
            buf[:n] = self.data[self.pos : self.pos + n]
            self.pos += n
            self.largest_read = max(self.largest_read, n)
            self.frames.extend(bytes(f) for f in self.receiver.received(n))

    def resume(self) -> None:
        self.frames.extend(bytes(f) for f in self.receiver.resume())


class Receiver(FrameReceiver):
    """A receiver with its admission policy at hand, as a connection has."""

    __slots__ = ("admit",)

    def __init__(self, admit, max_frame_size: int) -> None:
        super().__init__(max_frame_size, memoryview(bytearray(STAGING_SIZE)))
        self.admit = admit

    def received(self, n, admit=None):
        return super().received(n, admit or self.admit)

    def resume(self, admit=None):
        return super().resume(admit or self.admit)


def receiver(admit=lambda size, whole: True, max_frame_size: int = 1 << 30) -> Receiver:
    return Receiver(admit, max_frame_size)


PATTERN = bytes(range(251)) * (3 * STAGING_SIZE // 251 + 2)
# Small frames, frames around one staging read, and frames of several
# reads (large ones as slices of a pattern: generating them byte by byte
# would be slow); each distinct, so that a mix-up shows.
payloads = st.lists(st.one_of(st.binary(max_size=40),
                              st.integers(STAGING_SIZE - 10, STAGING_SIZE + 10).map(lambda n: PATTERN[n % 7 : n % 7 + n]),
                              st.integers(0, 3 * STAGING_SIZE).map(lambda n: PATTERN[n % 5 : n % 5 + n])), max_size=12)


@settings(max_examples=100, deadline=None)
@given(payloads=payloads, chunks=st.lists(st.integers(1, 3 * STAGING_SIZE), max_size=200))
def test_frames_come_out_whole_and_in_order_however_the_reads_split_them(payloads, chunks):
    r = receiver()
    feeder = Feeder(r, b"".join(frame(p) for p in payloads))
    feeder.run(chunks)
    assert feeder.frames == payloads
    assert r.buffered == 0


@settings(max_examples=100, deadline=None)
@given(payloads=payloads, chunks=st.lists(st.integers(1, 3 * STAGING_SIZE), max_size=200),
       refusals=st.lists(st.booleans(), max_size=40))
def test_a_refused_frame_waits_and_nothing_is_lost_or_admitted_twice(payloads, chunks, refusals):
    admitted: list[int] = []
    answers = iter(refusals)

    def admit(size: int, whole: bool) -> bool:
        if next(answers, True):
            admitted.append(size)
            return True
        return False

    r = receiver(admit)
    feeder = Feeder(r, b"".join(frame(p) for p in payloads))
    for _ in range(100):
        feeder.run(chunks)
        if not r.blocked:
            break
        # While blocked, at most one staging read is held beyond the frames.
        assert r.buffered <= STAGING_SIZE
        feeder.resume()
    assert feeder.frames == payloads
    assert admitted == [len(p) for p in payloads]


def test_no_byte_of_a_refused_frame_is_read_beyond_one_read():
    """A 100 MiB frame declared while the pool says no: the receiver holds
    the bytes of that one read and asks for none until resumed."""
    asked: list[int] = []
    r = receiver(lambda size, whole: asked.append(size) or False)
    buf = r.buffer()
    assert len(buf) == STAGING_SIZE
    head = struct.pack(">i", 100 << 20) + b"x" * (STAGING_SIZE - 4)
    buf[:] = head
    assert r.received(len(head)) == []
    assert r.blocked and asked == [100 << 20] and r.buffered == STAGING_SIZE


def test_a_large_frame_is_read_into_its_own_buffer_in_bounded_slices():
    r = receiver()
    payload = bytes(range(256)) * (MAPPED_BODY // 256 + 1)
    feeder = Feeder(r, frame(payload))
    feeder.run([])
    assert feeder.frames == [payload]
    assert feeder.largest_read == MAX_BODY_READ


@pytest.mark.parametrize("size", [-1, -(2**31), 1001])
def test_a_size_out_of_bounds_fails_the_stream_before_anything_is_admitted(size):
    asked: list[int] = []
    r = receiver(lambda n, whole: asked.append(n) or True, max_frame_size=1000)
    buf = r.buffer()
    buf[:4] = struct.pack(">i", size)
    with pytest.raises(FrameSizeError, match="socket.request.max.bytes"):
        r.received(4)
    with pytest.raises(FrameSizeError):  # and it stays failed
        r.received(0)
    assert asked == [] and r.buffered == 0


def test_bytes_delivered_while_blocked_are_kept():
    """A transport may still deliver a read after pause_reading (TLS
    records already decrypted): those bytes are kept in order."""
    answers = iter([True, False, True, True])
    r = receiver(lambda size, whole: next(answers))
    data = frame(b"one") + frame(b"two") + frame(b"three")
    feeder = Feeder(r, data)
    feeder.run([len(frame(b"one")) + 5])  # the first frame and a piece of the second
    assert feeder.frames == [b"one"] and r.blocked
    buf = r.buffer()
    rest = data[feeder.pos :]
    buf[: len(rest)] = rest
    assert r.received(len(rest)) == []
    feeder.pos = len(data)
    feeder.resume()
    assert feeder.frames == [b"one", b"two", b"three"]


def test_admit_is_told_whether_the_frame_is_already_read_whole():
    seen: list[tuple[int, bool]] = []
    r = receiver(lambda size, whole: seen.append((size, whole)) or True)
    data = frame(b"a" * 10) + frame(b"b" * 100_000)
    feeder = Feeder(r, data)
    feeder.run([])
    assert seen == [(10, True), (100_000, False)]
    assert feeder.frames == [b"a" * 10, b"b" * 100_000]
