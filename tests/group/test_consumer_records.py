"""The codec of consumer-protocol group records (KIP-848, Kafka 4's record
types 3-8 in ``__consumer_offsets``): round trips of every key and value,
Kafka's byte layout for known values, and ``InvalidGroupRecord`` (never
another exception) on damaged input."""

from __future__ import annotations

import contextlib
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.group.consumer_records import (
    ConsumerKey,
    ConsumerRecordType,
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberMetadataValue,
    SubscribedTopic,
    SubscriptionMetadataValue,
    TargetAssignmentEpochValue,
    TargetMemberValue,
    decode_consumer_key,
    decode_consumer_value,
    encode_consumer_key,
    encode_consumer_value,
    is_consumer_key,
)
from kavka.group.reconciliation import MemberState
from kavka.group.records import GroupMetadataKey, InvalidGroupRecord, OffsetKey, encode_key

SETTINGS = settings(max_examples=80, deadline=None)
T = ConsumerRecordType
text = st.text(max_size=30)
int32 = st.integers(-(2**31), 2**31 - 1)
uuids = st.uuids()
partitions = st.dictionaries(uuids, st.frozensets(st.integers(0, 2**31 - 1), max_size=6), max_size=4)
MEMBER_TYPES = [T.MEMBER_METADATA, T.TARGET_ASSIGNMENT_MEMBER, T.CURRENT_MEMBER_ASSIGNMENT]
GROUP_TYPES = [T.GROUP_METADATA, T.PARTITION_METADATA, T.TARGET_ASSIGNMENT_METADATA]

keys = st.one_of(st.builds(ConsumerKey, st.sampled_from(GROUP_TYPES), text, st.none()),
                 st.builds(ConsumerKey, st.sampled_from(MEMBER_TYPES), text, text))
values = st.one_of(
    st.tuples(st.just(T.GROUP_METADATA), st.builds(GroupEpochValue, int32)),
    st.tuples(st.just(T.PARTITION_METADATA), st.builds(SubscriptionMetadataValue, st.lists(
        st.builds(SubscribedTopic, uuids, text, int32), max_size=4).map(tuple))),
    st.tuples(st.just(T.MEMBER_METADATA), st.builds(
        MemberMetadataValue, st.none() | text, st.none() | text, text, text, st.lists(text, max_size=4).map(tuple),
        st.none() | text, int32, st.none() | text)),
    st.tuples(st.just(T.TARGET_ASSIGNMENT_METADATA), st.builds(TargetAssignmentEpochValue, int32)),
    st.tuples(st.just(T.TARGET_ASSIGNMENT_MEMBER), st.builds(TargetMemberValue, partitions)),
    st.tuples(st.just(T.CURRENT_MEMBER_ASSIGNMENT), st.builds(
        CurrentAssignmentValue, int32, int32, st.sampled_from(list(MemberState)), partitions, partitions)),
)


@SETTINGS
@given(keys)
def test_key_round_trip(key):
    raw = encode_consumer_key(key)
    assert is_consumer_key(raw)
    assert decode_consumer_key(raw) == key


@SETTINGS
@given(values)
def test_value_round_trip(typed):
    kind, value = typed
    assert decode_consumer_value(kind, encode_consumer_value(value)) == value


def test_classic_keys_are_not_consumer_keys():
    assert not is_consumer_key(encode_key(OffsetKey("g", "t", 0)))
    assert not is_consumer_key(encode_key(GroupMetadataKey("g")))
    assert not is_consumer_key(b"\x00")


def test_kafka_byte_layout():
    # key: int16 record type, then int16-length strings (not flexible)
    assert encode_consumer_key(ConsumerKey(T.CURRENT_MEMBER_ASSIGNMENT, "g", "m")) == b"\x00\x08\x00\x01g\x00\x01m"
    assert encode_consumer_key(ConsumerKey(T.GROUP_METADATA, "grp")) == b"\x00\x03\x00\x03grp"
    # value: int16 version 0, the fields, an empty tagged-field block
    assert encode_consumer_value(GroupEpochValue(5)) == b"\x00\x00\x00\x00\x00\x05\x00"
    t = uuid.UUID(int=1)
    raw = encode_consumer_value(CurrentAssignmentValue(3, 2, MemberState.UNREVOKED_PARTITIONS,
                                                       {t: frozenset({1, 0})}, {}))
    assert raw == (b"\x00\x00" + struct.pack(">iib", 3, 2, 1)
                   + b"\x02" + t.bytes + b"\x03" + struct.pack(">ii", 0, 1) + b"\x00"  # one topic, two partitions
                   + b"\x01"  # no partitions pending revocation
                   + b"\x00")
    # member metadata: compact strings, the subscribed names a compact array
    raw = encode_consumer_value(MemberMetadataValue(None, "r", "c", "h", ("a",), None, 30000, "uniform"))
    assert raw == (b"\x00\x00" + b"\x00" + b"\x02r" + b"\x02c" + b"\x02h" + b"\x02\x02a" + b"\x00"
                   + struct.pack(">i", 30000) + b"\x08uniform" + b"\x00")


def test_tagged_fields_and_racks_written_by_kafka_are_read():
    # Kafka 4.1's metadata hash (tag 0 of type 3) is skipped
    raw = b"\x00\x00" + struct.pack(">i", 7) + b"\x01\x00\x08" + struct.pack(">q", 12345)
    assert decode_consumer_value(T.GROUP_METADATA, raw) == GroupEpochValue(7)
    # partition racks of type 4 are read past
    t = uuid.UUID(int=9)
    raw = (b"\x00\x00" + b"\x02" + t.bytes + b"\x02t" + struct.pack(">i", 2)
           + b"\x02" + struct.pack(">i", 0) + b"\x02\x03r1" + b"\x00" + b"\x00" + b"\x00")
    assert decode_consumer_value(T.PARTITION_METADATA, raw) == SubscriptionMetadataValue((SubscribedTopic(t, "t", 2),))


@pytest.mark.parametrize("raw, field", [
    (b"\x00\x01" + struct.pack(">i", 1) + b"\x00", "version 1"),
    (b"\x00\x00\x00\x00", "epoch"),
    (b"\x00\x00" + struct.pack(">i", 1) + b"\x00" + b"junk", "after the last field"),
])
def test_damaged_group_epoch_values(raw, field):
    with pytest.raises(InvalidGroupRecord, match=field):
        decode_consumer_value(T.GROUP_METADATA, raw)


def test_unknown_member_state_is_refused():
    raw = b"\x00\x00" + struct.pack(">iib", 1, 0, 9) + b"\x01\x01\x00"
    with pytest.raises(InvalidGroupRecord, match="member state 9"):
        decode_consumer_value(T.CURRENT_MEMBER_ASSIGNMENT, raw)


def test_damaged_keys():
    with pytest.raises(InvalidGroupRecord, match="record type 9"):
        decode_consumer_key(b"\x00\x09\x00\x01g")
    with pytest.raises(InvalidGroupRecord, match="member id"):
        decode_consumer_key(b"\x00\x05\x00\x01g")
    with pytest.raises(InvalidGroupRecord, match="needs member id"):
        encode_consumer_key(ConsumerKey(T.MEMBER_METADATA, "g"))


@SETTINGS
@given(st.sampled_from(list(T)), st.binary(max_size=80))
def test_any_bytes_decode_or_raise_invalid_group_record(kind, raw):
    with contextlib.suppress(InvalidGroupRecord):
        decode_consumer_value(kind, raw)
    with contextlib.suppress(InvalidGroupRecord):
        decode_consumer_key(struct.pack(">h", kind) + raw)


@SETTINGS
@given(values, st.data())
def test_truncated_values_raise_invalid_group_record(typed, data):
    kind, value = typed
    raw = encode_consumer_value(value)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(InvalidGroupRecord):
        decode_consumer_value(kind, raw[:cut])
