"""The consumer protocol's embedded formats: what a classic group's
members put in JoinGroup metadata (the Subscription) and what the leader
hands out in SyncGroup (the Assignment), as Kafka's ConsumerProtocol
serializes them (KIP-429 added owned partitions, KIP-792 the generation,
KIP-881 the rack; the fields this module reads are in every version).

DescribeGroups returns these bytes opaque; ``decode_assignment`` and
``decode_subscription_topics`` read them for the console's and tools' group
views. The bytes come from another client: every length is checked against
what is left before anything is built, and a malformed blob raises
``ValueError`` saying where. Pure functions; any thread.
"""

from __future__ import annotations

import struct

from kavka.common.topic_partition import TopicPartition

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.what = what

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"{self.what} is truncated at byte {self.pos} (needs {n} more of {len(self.data)})")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def string(self) -> str:
        n = self.i16()
        if n < 0:
            raise ValueError(f"{self.what} has a null topic name at byte {self.pos - 2}")
        try:
            return bytes(self._take(n)).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{self.what} has a topic name that is not UTF-8: {e.reason}") from None

    def count(self) -> int:
        """An array length: each element takes at least 2 bytes, so a count
        larger than half of what is left cannot be honest."""
        n = self.i32()
        if n < -1 or n > (len(self.data) - self.pos) // 2:
            raise ValueError(f"{self.what} claims {n} elements with {len(self.data) - self.pos} bytes left")
        return max(n, 0)


def decode_assignment(data: bytes | None) -> tuple[TopicPartition, ...]:
    """ConsumerProtocolAssignment -> its partitions (empty bytes: none)."""
    if not data:
        return ()
    r = _Reader(data, "the member assignment")
    r.i16()  # version: the topic-partitions layout is the same in v0-v3
    out: list[TopicPartition] = []
    for _ in range(r.count()):
        topic = r.string()
        for _ in range(r.count()):
            out.append(TopicPartition(topic, r.i32()))
    return tuple(out)


def decode_subscription_topics(data: bytes | None) -> tuple[str, ...]:
    """ConsumerProtocolSubscription -> the topics the member subscribed to."""
    if not data:
        return ()
    r = _Reader(data, "the member subscription")
    r.i16()
    return tuple(r.string() for _ in range(r.count()))


def encode_assignment(partitions: tuple[TopicPartition, ...] | list[TopicPartition], version: int = 0) -> bytes:
    """The inverse of ``decode_assignment`` (null user data); for tests and
    for a client that leads a group."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = bytearray(_I16.pack(version))
    out += _I32.pack(len(by_topic))
    for topic, ps in by_topic.items():
        name = topic.encode("utf-8")
        out += _I16.pack(len(name)) + name + _I32.pack(len(ps))
        for p in ps:
            out += _I32.pack(p)
    out += _I32.pack(-1)
    return bytes(out)
