"""The ``__consumer_offsets`` record codec: round trips of every key and
value, Kafka's exact byte layout for known values, and typed errors on
damaged input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    InvalidGroupRecord,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_key,
    encode_offset_value,
)

SETTINGS = settings(max_examples=60, deadline=None)
text = st.text(max_size=40)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
members = st.builds(MemberValue, text, st.none() | text, text, text, int32, int32, st.binary(max_size=64),
                    st.binary(max_size=64))


@SETTINGS
@given(text, text, int32)
def test_offset_key_round_trip(group, topic, partition):
    key = OffsetKey(group, topic, partition)
    assert decode_key(encode_key(key)) == key


@SETTINGS
@given(text)
def test_group_key_round_trip(group):
    assert decode_key(encode_key(GroupMetadataKey(group))) == GroupMetadataKey(group)


@SETTINGS
@given(int64, int32, text, int64)
def test_offset_value_round_trip(offset, epoch, metadata, ts):
    v = OffsetValue(offset, epoch, metadata, ts)
    assert decode_offset_value(encode_offset_value(v)) == v


@SETTINGS
@given(text, int32, st.none() | text, st.none() | text, int64, st.lists(members, max_size=4).map(tuple))
def test_group_value_round_trip(ptype, generation, protocol, leader, ts, ms):
    v = GroupMetadataValue(ptype, generation, protocol, leader, ts, ms)
    assert decode_group_value(encode_group_value(v)) == v


def test_offset_key_layout_is_kafkas():
    # int16 version 1, int16-length strings, int32 partition.
    assert encode_key(OffsetKey("g", "t", 3)) == b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x03"
    assert encode_key(GroupMetadataKey("g")) == b"\x00\x02\x00\x01g"
    assert encode_offset_value(OffsetValue(5, -1, "", 7)) == struct.pack(">hqihq", 3, 5, -1, 0, 7)


def test_version_0_offset_key_is_read():
    assert decode_key(b"\x00\x00\x00\x01g\x00\x01t\x00\x00\x00\x03") == OffsetKey("g", "t", 3)


@SETTINGS
@given(st.data())
def test_truncated_input_raises_typed_error(data):
    raw = encode_group_value(GroupMetadataValue("consumer", 1, "range", "m", 1,
                                                (MemberValue("m", None, "c", "h", 1, 2, b"s", b"a"),)))
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(InvalidGroupRecord):
        decode_group_value(raw[:cut])


@pytest.mark.parametrize("raw, words", [
    (b"\x00\x07\x00\x01g", "key version 7"),
    (struct.pack(">hqihq", 1, 5, -1, 0, 7), "offset value version 1"),
    (b"\x00\x03\x00\x08consumer\x00\x00\x00\x01\xff\xff\xff\xff" + struct.pack(">qi", 0, 2**30), "member count"),
])
def test_bad_records_name_the_problem(raw, words):
    decode = decode_key if words.startswith("key") else decode_offset_value if "offset" in words \
        else decode_group_value
    with pytest.raises(InvalidGroupRecord, match=words):
        decode(raw)
