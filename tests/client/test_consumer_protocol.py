"""ConsumerProtocol assignment and subscription bytes, as Kafka's
ConsumerProtocol writes them (checked against kafka-python's encoder)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.client.consumer_protocol import decode_assignment, decode_subscription_topics, encode_assignment
from kavka.common.topic_partition import TopicPartition


def test_matches_kafka_python():
    from kafka.protocol.old.consumer_protocol import (
        ConsumerProtocolMemberAssignment_v0,
        ConsumerProtocolMemberMetadata_v0,
    )

    blob = ConsumerProtocolMemberAssignment_v0(0, [("a", [0, 2]), ("b", [1])], b"ud").encode()
    assert decode_assignment(blob) == (TopicPartition("a", 0), TopicPartition("a", 2), TopicPartition("b", 1))
    assert encode_assignment(decode_assignment(blob)) == ConsumerProtocolMemberAssignment_v0(
        0, [("a", [0, 2]), ("b", [1])], None).encode()
    sub = ConsumerProtocolMemberMetadata_v0(0, ["a", "b"], b"").encode()
    assert decode_subscription_topics(sub) == ("a", "b")


def test_empty_and_malformed():
    assert decode_assignment(b"") == () and decode_subscription_topics(None) == ()
    with pytest.raises(ValueError, match="truncated"):
        decode_assignment(encode_assignment([TopicPartition("a", 1)])[:-6])
    with pytest.raises(ValueError, match="claims"):
        decode_assignment(struct.pack(">hi", 0, 1 << 30))


@given(st.lists(st.tuples(st.text(min_size=1, max_size=20), st.integers(0, 1 << 20)), max_size=20))
def test_round_trip(pairs):
    tps = [TopicPartition(t, p) for t, p in pairs]
    by_topic_order = sorted(tps, key=lambda tp: [t for t, _ in pairs].index(tp.topic))
    assert list(decode_assignment(encode_assignment(tps))) == by_topic_order


@given(st.binary(max_size=100))
def test_garbage_is_refused_or_read(data):
    try:
        decode_assignment(data)
    except ValueError as e:
        assert "member assignment" in str(e)
