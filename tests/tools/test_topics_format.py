"""``kavka.tools.topics_format``: the ``--replica-assignment`` syntax (round
trip and every refusal), ``--topic`` pattern selection, Kafka's Uuid text
and the ``--describe`` lines."""

from __future__ import annotations

import base64
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.client.metadata import PartitionMetadata, TopicMetadata
from kavka.common.errors import ErrorCode
from kavka.tools.topics_format import (
    AssignmentError,
    DescribeFilter,
    describe_topic,
    format_replica_assignment,
    parse_replica_assignment,
    select_topics,
    topic_id_text,
)


@st.composite
def assignments(draw):
    rf = draw(st.integers(1, 5))
    n = draw(st.integers(1, 20))
    return [tuple(draw(st.lists(st.integers(0, 1000), min_size=rf, max_size=rf, unique=True))) for _ in range(n)]


@settings(max_examples=100)
@given(assignments())
def test_assignment_round_trip(a):
    text = format_replica_assignment(a)
    assert parse_replica_assignment(text) == a


def test_assignment_kafka_topics_example():
    assert parse_replica_assignment("0:1,1:2,2:0") == [(0, 1), (1, 2), (2, 0)]
    assert parse_replica_assignment(" 3 , 4 ") == [(3,), (4,)]


@pytest.mark.parametrize("text, words", [
    ("", "empty"),
    ("0:1,1:x", "partition 1"),
    ("0:1,,2:0", "partition 1"),
    ("0:0", "twice"),
    ("0:1,2", "same number"),
    ("0:-1", "negative"),
    ("0;1", "partition 0"),
])
def test_assignment_refusals_name_the_partition(text, words):
    with pytest.raises(AssignmentError, match=words):
        parse_replica_assignment(text)


def test_select_topics_is_a_full_match_regex():
    names = ["a.b", "axb", "orders", "orders-eu", "__consumer_offsets"]
    assert select_topics(names, None) == sorted(names)
    assert select_topics(names, "orders") == ["orders"]
    assert select_topics(names, "orders.*") == ["orders", "orders-eu"]
    assert select_topics(names, "a.b") == ["a.b", "axb"]  # '.' is a regex dot, as in kafka-topics.sh
    assert select_topics(names, "nothing") == []
    with pytest.raises(ValueError, match="regular expression"):
        select_topics(names, "(")


@settings(max_examples=50)
@given(st.uuids())
def test_topic_id_is_urlsafe_base64_without_padding(u):
    text = topic_id_text(u)
    assert len(text) == 22 and "=" not in text and "+" not in text and "/" not in text
    assert uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")) == u


def test_zero_topic_id():
    assert topic_id_text(None) == "AAAAAAAAAAAAAAAAAAAAAA"


def _topic() -> TopicMetadata:
    return TopicMetadata("t", ErrorCode.NONE, False, (
        PartitionMetadata("t", 0, 1, 0, (1, 2), (1, 2)),
        PartitionMetadata("t", 1, 2, 0, (2, 0), (2,)),                     # under-replicated
        PartitionMetadata("t", 2, -1, 3, (0, 1), (0,), offline_replicas=(0,)),  # no leader
        PartitionMetadata("t", 3, 0, 0, (0, 1), (0, 1)),                   # leader 0 not live
    ))


def test_describe_lines_match_kafka_topics():
    u = uuid.UUID(int=1)
    lines = describe_topic(_topic(), u, {"retention.ms": "1000", "cleanup.policy": "compact"},
                           frozenset({1, 2}))
    assert lines == [
        f"Topic: t\tTopicId: {topic_id_text(u)}\tPartitionCount: 4\tReplicationFactor: 2\t"
        "Configs: cleanup.policy=compact,retention.ms=1000",
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2",
        "\tTopic: t\tPartition: 1\tLeader: 2\tReplicas: 2,0\tIsr: 2",
        "\tTopic: t\tPartition: 2\tLeader: none\tReplicas: 0,1\tIsr: 0\tOffline: 0",
        "\tTopic: t\tPartition: 3\tLeader: 0\tReplicas: 0,1\tIsr: 0,1",
    ]


def test_describe_filters_print_only_matching_partitions():
    live = frozenset({1, 2})
    under = describe_topic(_topic(), None, {}, live, DescribeFilter(under_replicated=True))
    assert [line.split("\t")[2] for line in under] == ["Partition: 1", "Partition: 2"]
    unavailable = describe_topic(_topic(), None, {}, live, DescribeFilter(unavailable=True))
    assert [line.split("\t")[2] for line in unavailable] == ["Partition: 2", "Partition: 3"]
    both = describe_topic(_topic(), None, {}, live, DescribeFilter(True, True))
    assert len(both) == 3


def test_min_isr_filters_use_the_topics_min_insync_replicas():
    live = frozenset({0, 1, 2})
    partitions = [line.split("\t")[2] for line in
                  describe_topic(_topic(), None, {}, live, DescribeFilter(under_min_isr=True), min_isr=2)]
    assert partitions == ["Partition: 1", "Partition: 2"]  # ISR of 1 < 2
    partitions = [line.split("\t")[2] for line in
                  describe_topic(_topic(), None, {}, live, DescribeFilter(at_min_isr=True), min_isr=2)]
    assert partitions == ["Partition: 0", "Partition: 3"]  # ISR of exactly 2
    assert describe_topic(_topic(), None, {}, live, DescribeFilter(under_min_isr=True), min_isr=1) == []
