"""The ``__consumer_offsets`` records of consumer-protocol groups (KIP-848;
Kafka 4's group-coordinator record types), next to the classic offset and
group records of ``kavka.group.records``.

Each record's key starts with an int16 record type, which doubles as the
key version the classic records use (0-1 offsets, 2 group metadata), so
both kinds share the partitions and a loader tells them apart by that
first field. Written from Kafka's message definitions (facts only):

====  ==============================================  ===================
type  key (int16 type, then int16-length strings)     value (version 0)
====  ==============================================  ===================
3     ConsumerGroupMetadata: group                    group epoch
4     ConsumerGroupPartitionMetadata: group           subscribed topics:
                                                      id, name, partitions
5     ConsumerGroupMemberMetadata: group, member      instance id, rack,
                                                      client id and host,
                                                      topic names, regex,
                                                      rebalance timeout,
                                                      server assignor
6     ConsumerGroupTargetAssignmentMetadata: group    assignment epoch
7     ConsumerGroupTargetAssignmentMember: group,     target partitions
      member
8     ConsumerGroupCurrentMemberAssignment: group,    member epoch,
      member                                          previous epoch,
                                                      state, assigned,
                                                      pending revocation
====  ==============================================  ===================

Values are an int16 version (0) then a flexible message (KIP-482): compact
strings and arrays, uuids as 16 bytes, a tagged-field block after every
struct. Tagged fields are skipped when read (Kafka 4.1 adds the group's
metadata hash as tag 0 of type 3, a classic member's protocols as tag 0 of
type 5: neither is state this broker keeps) and none are written. The
per-partition racks of type 4 are written empty (Kafka 4 no longer reads
them). A null value is a tombstone. Member states are Kafka's bytes:
0 stable, 1 unrevoked partitions, 2 unreleased partitions.

Decoding anything else raises ``InvalidGroupRecord`` naming the field.
Pure functions; anyone may call them.
"""

from __future__ import annotations

import enum
import struct
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from kavka.group.reconciliation import MemberState
from kavka.group.records import InvalidGroupRecord
from kavka.protocol.errors import DecodeError, EncodeError
from kavka.protocol.primitives import (
    read_compact_array_len,
    read_compact_nullable_string,
    read_compact_string,
    read_int8,
    read_int16,
    read_int32,
    read_string,
    read_tagged_fields,
    read_uuid,
)
from kavka.protocol.writers import (
    EMPTY_TAGGED_FIELDS,
    write_compact_array_len,
    write_compact_nullable_string,
    write_string,
)

__all__ = ["CONSUMER_RECORD_TYPES", "ConsumerKey", "ConsumerRecordType", "ConsumerValue", "CurrentAssignmentValue",
           "GroupEpochValue", "MemberMetadataValue", "SubscribedTopic", "SubscriptionMetadataValue",
           "TargetAssignmentEpochValue", "TargetMemberValue", "decode_consumer_key", "decode_consumer_value",
           "encode_consumer_key", "encode_consumer_value", "is_consumer_key", "member_state_byte", "record_type_of"]

Partitions = Mapping[uuid.UUID, frozenset[int]]


class ConsumerRecordType(enum.IntEnum):
    """The record types (key versions) of consumer-protocol groups."""
    GROUP_METADATA = 3
    PARTITION_METADATA = 4
    MEMBER_METADATA = 5
    TARGET_ASSIGNMENT_METADATA = 6
    TARGET_ASSIGNMENT_MEMBER = 7
    CURRENT_MEMBER_ASSIGNMENT = 8


CONSUMER_RECORD_TYPES = frozenset(int(t) for t in ConsumerRecordType)
_MEMBER_TYPES = frozenset({ConsumerRecordType.MEMBER_METADATA, ConsumerRecordType.TARGET_ASSIGNMENT_MEMBER,
                           ConsumerRecordType.CURRENT_MEMBER_ASSIGNMENT})
VALUE_VERSION = 0
_MEMBER_STATE_BYTES = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1,
                       MemberState.UNRELEASED_PARTITIONS: 2}
_MEMBER_STATES = {v: k for k, v in _MEMBER_STATE_BYTES.items()}


def member_state_byte(state: MemberState) -> int:
    """The byte Kafka stores for a member state (its MemberState values)."""
    return _MEMBER_STATE_BYTES[state]


class ConsumerKey(NamedTuple):
    """One key; ``member_id`` is set exactly for the per-member types (5, 7,
    8). A tuple: hashed in C, as every heartbeat looks keys up."""
    type: ConsumerRecordType
    group_id: str
    member_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupEpochValue:  # type 3
    epoch: int


@dataclass(frozen=True, slots=True)
class SubscribedTopic:
    topic_id: uuid.UUID
    name: str
    partitions: int


@dataclass(frozen=True, slots=True)
class SubscriptionMetadataValue:  # type 4
    topics: tuple[SubscribedTopic, ...]


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:  # type 5
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class TargetAssignmentEpochValue:  # type 6
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class TargetMemberValue:  # type 7
    partitions: Partitions


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:  # type 8
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Partitions
    pending_revocation: Partitions


ConsumerValue = (GroupEpochValue | SubscriptionMetadataValue | MemberMetadataValue | TargetAssignmentEpochValue
                 | TargetMemberValue | CurrentAssignmentValue)
_VALUE_CLASSES: dict[ConsumerRecordType, type] = {
    ConsumerRecordType.GROUP_METADATA: GroupEpochValue,
    ConsumerRecordType.PARTITION_METADATA: SubscriptionMetadataValue,
    ConsumerRecordType.MEMBER_METADATA: MemberMetadataValue,
    ConsumerRecordType.TARGET_ASSIGNMENT_METADATA: TargetAssignmentEpochValue,
    ConsumerRecordType.TARGET_ASSIGNMENT_MEMBER: TargetMemberValue,
    ConsumerRecordType.CURRENT_MEMBER_ASSIGNMENT: CurrentAssignmentValue,
}


# -- keys ----------------------------------------------------------------------------------------
def record_type_of(key: bytes) -> int:
    """The int16 a ``__consumer_offsets`` key starts with (its version or
    record type); raises ``InvalidGroupRecord`` when it is shorter."""
    if len(key) < 2:
        raise InvalidGroupRecord(f"key of {len(key)} bytes has no version")
    return int(struct.unpack_from(">h", key)[0])


def is_consumer_key(key: bytes) -> bool:
    return len(key) >= 2 and record_type_of(key) in CONSUMER_RECORD_TYPES


def encode_consumer_key(key: ConsumerKey) -> bytes:
    if (key.member_id is not None) != (key.type in _MEMBER_TYPES):
        raise InvalidGroupRecord(f"a key of type {key.type.name} "
                                 f"{'needs' if key.type in _MEMBER_TYPES else 'has no'} member id")
    out = struct.pack(">h", key.type) + _classic_string(key.group_id)
    return out + _classic_string(key.member_id) if key.member_id is not None else out


def _classic_string(s: str) -> bytes:
    try:
        return write_string(s)
    except EncodeError as e:  # longer than an int16 length
        raise InvalidGroupRecord(str(e)) from None


def decode_consumer_key(buf: bytes) -> ConsumerKey:
    what = "consumer group key"
    t = record_type_of(buf)
    if t not in CONSUMER_RECORD_TYPES:
        raise InvalidGroupRecord(f"{what}: record type {t} is not one of {sorted(CONSUMER_RECORD_TYPES)}")
    kind = ConsumerRecordType(t)
    group, pos = _read(read_string, buf, 2, what, "group id")
    member = None
    if kind in _MEMBER_TYPES:
        member, pos = _read(read_string, buf, pos, what, "member id")
    if pos != len(buf):
        raise InvalidGroupRecord(f"{what}: {len(buf) - pos} bytes after the last field")
    return ConsumerKey(kind, group, member)


# -- values --------------------------------------------------------------------------------------
def _partitions(parts: Partitions) -> list[bytes]:
    out = [write_compact_array_len(len(parts))]
    for topic_id, ps in sorted(parts.items(), key=lambda kv: kv[0].bytes):
        out += [topic_id.bytes, write_compact_array_len(len(ps)), struct.pack(f">{len(ps)}i", *sorted(ps)),
                EMPTY_TAGGED_FIELDS]
    return out


def _strings(names: tuple[str, ...]) -> list[bytes]:
    return [write_compact_array_len(len(names)), *(write_compact_nullable_string(n) for n in names)]


def encode_consumer_value(value: ConsumerValue) -> bytes:
    out: list[bytes] = [struct.pack(">h", VALUE_VERSION)]
    if isinstance(value, GroupEpochValue):
        out.append(struct.pack(">i", value.epoch))
    elif isinstance(value, SubscriptionMetadataValue):
        out.append(write_compact_array_len(len(value.topics)))
        for t in value.topics:
            # no per-partition racks (empty array): Kafka 4 no longer reads them
            out += [t.topic_id.bytes, write_compact_nullable_string(t.name), struct.pack(">i", t.partitions),
                    write_compact_array_len(0), EMPTY_TAGGED_FIELDS]
    elif isinstance(value, MemberMetadataValue):
        out += [write_compact_nullable_string(value.instance_id), write_compact_nullable_string(value.rack_id),
                write_compact_nullable_string(value.client_id), write_compact_nullable_string(value.client_host),
                *_strings(value.subscribed_topic_names), write_compact_nullable_string(value.subscribed_topic_regex),
                struct.pack(">i", value.rebalance_timeout_ms), write_compact_nullable_string(value.server_assignor)]
    elif isinstance(value, TargetAssignmentEpochValue):
        out.append(struct.pack(">i", value.assignment_epoch))
    elif isinstance(value, TargetMemberValue):
        out += _partitions(value.partitions)
    else:
        out += [struct.pack(">iib", value.member_epoch, value.previous_member_epoch,
                            _MEMBER_STATE_BYTES[value.state]),
                *_partitions(value.assigned), *_partitions(value.pending_revocation)]
    out.append(EMPTY_TAGGED_FIELDS)
    return b"".join(out)


_T = TypeVar("_T")


def _read(fn: Callable[[bytes, int], tuple[_T, int]], buf: bytes, pos: int, what: str, field: str) -> tuple[_T, int]:
    try:
        return fn(buf, pos)
    except DecodeError as e:
        raise InvalidGroupRecord(f"{what}: {field}: {e}") from None


class _Fields:
    """A position in one value, every read naming its field on failure."""

    def __init__(self, buf: bytes, what: str) -> None:
        self.buf, self.pos, self.what = buf, 0, what

    def take(self, fn: Callable[[bytes, int], tuple[_T, int]], field: str) -> _T:
        value, self.pos = _read(fn, self.buf, self.pos, self.what, field)
        return value

    def count(self, field: str, min_size: int) -> int:
        n = self.take(lambda b, p: read_compact_array_len(b, p, min_size), field)
        if n < 0:
            raise InvalidGroupRecord(f"{self.what}: {field} is null")
        return n

    def tags(self, field: str) -> None:
        self.take(read_tagged_fields, f"tagged fields of {field}")

    def partitions(self, field: str) -> dict[uuid.UUID, frozenset[int]]:
        out: dict[uuid.UUID, frozenset[int]] = {}
        for _ in range(self.count(field, 18)):
            topic_id = self.take(read_uuid, f"{field} topic id")
            ps = frozenset(self.take(read_int32, f"{field} partition") for _ in range(self.count(field, 4)))
            self.tags(field)
            if topic_id in out:
                raise InvalidGroupRecord(f"{self.what}: {field} names topic {topic_id} twice")
            out[topic_id] = ps
        return out


def decode_consumer_value(kind: ConsumerRecordType, buf: bytes) -> ConsumerValue:
    """The value of a record whose key has type ``kind``."""
    r = _Fields(buf, f"{kind.name.lower()} value")
    version = r.take(read_int16, "version")
    if version != VALUE_VERSION:
        raise InvalidGroupRecord(f"{r.what}: version {version}; this broker reads version {VALUE_VERSION}")
    value: ConsumerValue
    if kind is ConsumerRecordType.GROUP_METADATA:
        value = GroupEpochValue(r.take(read_int32, "epoch"))
    elif kind is ConsumerRecordType.PARTITION_METADATA:
        topics = []
        for _ in range(r.count("topics", 20)):
            topic_id = r.take(read_uuid, "topic id")
            name = r.take(read_compact_string, "topic name")
            partitions = r.take(read_int32, "partitions")
            for _ in range(r.count("partition racks", 3)):
                r.take(read_int32, "rack partition")
                for _ in range(r.count("racks", 1)):
                    r.take(read_compact_string, "rack")
                r.tags("partition racks")
            r.tags("topics")
            topics.append(SubscribedTopic(topic_id, name, partitions))
        value = SubscriptionMetadataValue(tuple(topics))
    elif kind is ConsumerRecordType.MEMBER_METADATA:
        instance = r.take(read_compact_nullable_string, "instance id")
        rack = r.take(read_compact_nullable_string, "rack id")
        client_id = r.take(read_compact_string, "client id")
        host = r.take(read_compact_string, "client host")
        names = tuple(r.take(read_compact_string, "subscribed topic name")
                      for _ in range(r.count("subscribed topic names", 1)))
        regex = r.take(read_compact_nullable_string, "subscribed topic regex")
        rebalance = r.take(read_int32, "rebalance timeout")
        assignor = r.take(read_compact_nullable_string, "server assignor")
        value = MemberMetadataValue(instance, rack, client_id, host, names, regex, rebalance, assignor)
    elif kind is ConsumerRecordType.TARGET_ASSIGNMENT_METADATA:
        value = TargetAssignmentEpochValue(r.take(read_int32, "assignment epoch"))
    elif kind is ConsumerRecordType.TARGET_ASSIGNMENT_MEMBER:
        value = TargetMemberValue(r.partitions("target partitions"))
    else:
        epoch = r.take(read_int32, "member epoch")
        previous = r.take(read_int32, "previous member epoch")
        state_byte = r.take(read_int8, "state")
        state = _MEMBER_STATES.get(state_byte)
        if state is None:
            raise InvalidGroupRecord(f"{r.what}: member state {state_byte} is not 0, 1 or 2")
        value = CurrentAssignmentValue(epoch, previous, state, r.partitions("assigned partitions"),
                                       r.partitions("partitions pending revocation"))
    r.tags("the value")
    if r.pos != len(buf):
        raise InvalidGroupRecord(f"{r.what}: {len(buf) - r.pos} bytes after the last field")
    return value
