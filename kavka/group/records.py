"""Keys and values of the records in ``__consumer_offsets`` (seed 002 §6.5:
the coordinator appends offsets and group metadata to the internal topic).

Wire format (big-endian, Kafka's own layout so Kafka's tools can read our
log; written from the documented field lists, not copied):

- key, offset commit: int16 version (0 or 1; we write 1), string group,
  string topic, int32 partition.
- key, group metadata: int16 version 2, string group.
- value, offset commit v3: int16 3, int64 offset, int32 leader epoch,
  string metadata, int64 commit timestamp (ms).
- value, group metadata v3: int16 3, string protocol type, int32
  generation, nullable string protocol, nullable string leader, int64
  current-state timestamp, array (int32 count) of members: string member
  id, nullable string group instance id, string client id, string client
  host, int32 rebalance timeout, int32 session timeout, bytes subscription,
  bytes assignment.

A null value is a tombstone (deleted offset or group); compaction keeps
only the newest record per key. Strings are int16-length UTF-8, bytes
int32-length. Decoding anything else raises ``InvalidGroupRecord``.
Pure functions; anyone may call them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Literal, overload

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


class InvalidGroupRecord(ValueError):
    """A ``__consumer_offsets`` record this codec cannot read; the message
    names the field. The loader skips such records and logs them."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberValue, ...] = ()


# -- writing ------------------------------------------------------------------------------
def _string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    raw = s.encode()
    if len(raw) > 0x7FFF:
        raise InvalidGroupRecord(f"string of {len(raw)} bytes is longer than 32767")
    return struct.pack(">h", len(raw)) + raw


def _bytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def encode_key(key: OffsetKey | GroupMetadataKey) -> bytes:
    if isinstance(key, OffsetKey):
        return (struct.pack(">h", OFFSET_KEY_VERSION) + _string(key.group) + _string(key.topic)
                + struct.pack(">i", key.partition))
    return struct.pack(">h", GROUP_KEY_VERSION) + _string(key.group)


def encode_offset_value(v: OffsetValue) -> bytes:
    return (struct.pack(">hqi", OFFSET_VALUE_VERSION, v.offset, v.leader_epoch) + _string(v.metadata)
            + struct.pack(">q", v.commit_timestamp))


def encode_group_value(v: GroupMetadataValue) -> bytes:
    out = [struct.pack(">h", GROUP_VALUE_VERSION), _string(v.protocol_type), struct.pack(">i", v.generation),
           _string(v.protocol), _string(v.leader), struct.pack(">qi", v.current_state_timestamp, len(v.members))]
    for m in v.members:
        out += [_string(m.member_id), _string(m.group_instance_id), _string(m.client_id), _string(m.client_host),
                struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms), _bytes(m.subscription),
                _bytes(m.assignment)]
    return b"".join(out)


# -- reading ------------------------------------------------------------------------------
class _Reader:
    def __init__(self, buf: bytes, what: str) -> None:
        self.buf, self.pos, self.what = buf, 0, what

    def take(self, fmt: str, field: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise InvalidGroupRecord(f"{self.what}: {field} runs past the end ({len(self.buf)} bytes)")
        values = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return values[0] if len(values) == 1 else values

    @overload
    def string(self, field: str, nullable: Literal[False] = False) -> str: ...
    @overload
    def string(self, field: str, nullable: bool) -> str | None: ...

    def string(self, field: str, nullable: bool = False) -> str | None:
        n = self.take(">h", field)
        if n < 0:
            if nullable:
                return None
            raise InvalidGroupRecord(f"{self.what}: {field} is null")
        raw = self.raw(n, field)
        try:
            return raw.decode()
        except UnicodeDecodeError:
            raise InvalidGroupRecord(f"{self.what}: {field} is not UTF-8") from None

    def raw(self, n: int, field: str) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise InvalidGroupRecord(f"{self.what}: {field} of {n} bytes runs past the end")
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out


def decode_key(buf: bytes) -> OffsetKey | GroupMetadataKey:
    r = _Reader(buf, "key")
    version = r.take(">h", "version")
    if version in (0, 1):
        return OffsetKey(r.string("group"), r.string("topic"), r.take(">i", "partition"))
    if version == 2:
        return GroupMetadataKey(r.string("group"))
    raise InvalidGroupRecord(f"key version {version} is not 0, 1 or 2 (nor 3-8, the consumer-protocol group records "
                             "of kavka.group.consumer_records)")


def decode_offset_value(buf: bytes) -> OffsetValue:
    r = _Reader(buf, "offset value")
    version = r.take(">h", "version")
    if version != OFFSET_VALUE_VERSION:
        raise InvalidGroupRecord(f"offset value version {version}; this broker reads version 3")
    offset, epoch = r.take(">qi", "offset")
    metadata = r.string("metadata")
    return OffsetValue(offset, epoch, metadata, r.take(">q", "commit timestamp"))


def decode_group_value(buf: bytes) -> GroupMetadataValue:
    r = _Reader(buf, "group metadata value")
    version = r.take(">h", "version")
    if version != GROUP_VALUE_VERSION:
        raise InvalidGroupRecord(f"group metadata value version {version}; this broker reads version 3")
    protocol_type = r.string("protocol type")
    generation = r.take(">i", "generation")
    protocol = r.string("protocol", nullable=True)
    leader = r.string("leader", nullable=True)
    ts, count = r.take(">qi", "member count")
    if count < 0 or count * 20 > len(buf):
        raise InvalidGroupRecord(f"group metadata value: member count {count} does not fit {len(buf)} bytes")
    members = []
    for _ in range(count):
        member_id = r.string("member id")
        instance = r.string("group instance id", nullable=True)
        client_id, host = r.string("client id"), r.string("client host")
        rebalance, session = r.take(">ii", "timeouts")
        subscription = r.raw(r.take(">i", "subscription"), "subscription")
        assignment = r.raw(r.take(">i", "assignment"), "assignment")
        members.append(MemberValue(member_id, instance, client_id, host, rebalance, session, subscription, assignment))
    return GroupMetadataValue(protocol_type, generation, protocol, leader, ts, tuple(members))
