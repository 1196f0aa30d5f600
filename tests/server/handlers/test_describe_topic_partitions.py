"""DescribeTopicPartitions (KIP-966) against a metadata cache: the pages
of a paged walk cover every partition of every topic exactly once and in
order whatever the limit (hypothesis), the cursor arithmetic of Kafka's
describeTopicResponse at the edges, the errors of named topics, the
invalid cursors, and the authorizer's hiding of topics the session may not
DESCRIBE."""

from __future__ import annotations

import asyncio
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.errors import ErrorCode
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import ZERO_UUID, DescribeTopicPartitionsRequest
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.describe_topic_partitions import API_KEY, DescribeTopicPartitionsHandler
from kavka.server.metadata_cache import BrokerEndpoint, LiveBroker, MetadataCache, PartitionMetadata
from kavka.server.network import RequestContext

Q = DescribeTopicPartitionsRequest


def _cache(topics: dict[str, int], dead: frozenset[int] = frozenset()) -> MetadataCache:
    cache = MetadataCache(1)
    cache.brokers = {b: LiveBroker(b, (BrokerEndpoint("h", 9000 + b, "PLAINTEXT"),)) for b in (1, 2, 3) if b not in dead}
    for t, n in topics.items():
        cache.partitions[t] = {p: PartitionMetadata(t, p, 1 + p % 3, 5, (1, 2), (1, 2, 3), (), 0, 1) for p in range(n)}
        cache.topic_ids[t] = uuid.uuid5(uuid.NAMESPACE_DNS, t)
    return cache


def _ctx(listener: str = "PLAINTEXT") -> RequestContext:
    return RequestContext(RequestHeader(API_KEY, 0, 7, "c"), "conn-1", "127.0.0.1", 40000, listener, 0)


async def _ask(handler, topics=(), limit=2000, cursor=None, ctx=None):
    request = Q(topics=[Q.Topics(name=t) for t in topics], response_partition_limit=limit,
                cursor=None if cursor is None else Q.Cursor(topic_name=cursor[0], partition_index=cursor[1]))
    response = await handler(ctx or _ctx(), request)
    return decode_response(API_KEY, 0, encode_response(API_KEY, 0, 7, response))[1]


def _walk_pages(handler, topics, limit):
    async def walk():
        seen, cursor, pages = [], None, 0
        while True:
            r = await _ask(handler, topics, limit, cursor)
            pages += 1
            assert sum(len(t.partitions) for t in r.topics) <= max(limit, 1)
            seen += [(t.name, p.partition_index) for t in r.topics for p in t.partitions]
            if r.next_cursor is None:
                return seen, pages
            cursor = (r.next_cursor.topic_name, r.next_cursor.partition_index)
            assert pages < 1000
    return walk()


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 7), min_size=1, max_size=6), limit=st.integers(-3, 12), named=st.booleans())
def test_paging_covers_every_partition_once_in_order(sizes, limit, named):
    topics = {f"t{i}": n for i, n in enumerate(sizes)}
    handler = DescribeTopicPartitionsHandler(_cache(topics), AuthHelper(None), max_partitions=2000)
    seen, _ = asyncio.run(_walk_pages(handler, list(topics) if named else [], limit))
    assert seen == [(t, p) for t in sorted(topics) for p in range(topics[t])]


async def test_the_broker_limit_caps_the_request_and_the_cursor_points_inside_a_topic():
    handler = DescribeTopicPartitionsHandler(_cache({"a": 3, "b": 4}), AuthHelper(None), max_partitions=5)
    r = await _ask(handler, limit=100)
    assert [(t.name, len(t.partitions)) for t in r.topics] == [("a", 3), ("b", 2)]
    assert (r.next_cursor.topic_name, r.next_cursor.partition_index) == ("b", 2)
    r = await _ask(handler, limit=3)
    # "a" used the limit up exactly: the cursor is the next topic at 0
    assert [t.name for t in r.topics] == ["a"]
    assert (r.next_cursor.topic_name, r.next_cursor.partition_index) == ("b", 0)
    r = await _ask(handler, cursor=("b", 3))
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in r.topics] == [("b", [3])]
    assert r.next_cursor is None


async def test_partition_fields_and_a_dead_leader():
    cache = _cache({"a": 2}, dead=frozenset({2}))
    handler = DescribeTopicPartitionsHandler(cache, AuthHelper(None), max_partitions=2000)
    r = await _ask(handler, ["a"])
    (t,) = r.topics
    assert (t.error_code, t.topic_id, t.is_internal) == (0, cache.topic_ids["a"], False)
    p0, p1 = t.partitions
    assert (p0.error_code, p0.leader_id, p0.leader_epoch, p0.replica_nodes, p0.isr_nodes, p0.offline_replicas) == (
        0, 1, 5, [1, 2, 3], [1, 2], [2])
    assert (p0.eligible_leader_replicas, p0.last_known_elr) == ([], [])
    assert (p1.error_code, p1.leader_id) == (int(ErrorCode.LEADER_NOT_AVAILABLE), -1)
    r = await _ask(handler, ["a"], ctx=_ctx("OTHER"))
    assert r.topics[0].partitions[0].error_code == int(ErrorCode.LISTENER_NOT_FOUND)
    # no authorizer: every topic operation is allowed (KIP-430 bits)
    assert t.topic_authorized_operations > 0


async def test_named_topics_that_are_missing_or_illegal():
    handler = DescribeTopicPartitionsHandler(_cache({"a": 1}), AuthHelper(None), max_partitions=2000)
    r = await _ask(handler, ["zz", "a", "bad name", "a", "__consumer_offsets"])
    assert [(t.name, t.error_code, t.topic_id, t.is_internal) for t in r.topics] == [
        ("__consumer_offsets", int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ZERO_UUID, True),
        ("a", 0, uuid.uuid5(uuid.NAMESPACE_DNS, "a"), False),
        ("bad name", int(ErrorCode.INVALID_TOPIC_EXCEPTION), ZERO_UUID, False),
        ("zz", int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ZERO_UUID, False),
    ]


async def test_invalid_cursors_answer_invalid_request_for_every_topic():
    handler = DescribeTopicPartitionsHandler(_cache({"a": 1, "b": 1}), AuthHelper(None), max_partitions=2000)
    for topics, cursor in ((["a"], ("b", 0)), (["a", "b"], ("a", -1)), ([], ("a", -1))):
        r = await _ask(handler, topics, cursor=cursor)
        assert [(t.name, t.error_code, t.partitions) for t in r.topics] == [
            (n, int(ErrorCode.INVALID_REQUEST), []) for n in topics]
        assert r.next_cursor is None


class DenyTopics:
    """An authorizer that refuses every action on the named topics."""

    def __init__(self, denied: set[str]) -> None:
        self.denied = denied
        self.asked: list[str] = []

    def authorize(self, session, actions, request=None):
        self.asked += [a.name for a in actions]
        return [a.name not in self.denied for a in actions]


async def test_topics_the_session_may_not_describe():
    authorizer = DenyTopics({"b", "nope"})
    handler = DescribeTopicPartitionsHandler(_cache({"a": 1, "b": 1, "c": 1}), AuthHelper(authorizer),  # type: ignore[arg-type]
                                             max_partitions=2000)
    listing = await _ask(handler)
    assert [t.name for t in listing.topics] == ["a", "c"]  # left out of a listing
    named = await _ask(handler, ["a", "b", "nope"])
    assert [(t.name, t.error_code, t.topic_id) for t in named.topics] == [
        ("a", 0, uuid.uuid5(uuid.NAMESPACE_DNS, "a")),
        ("b", int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), ZERO_UUID),
        ("nope", int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), ZERO_UUID),  # missing and hidden alike
    ]
    # the walk stops at the limit: topics past the next cursor are not even asked about
    authorizer.asked.clear()
    page = await _ask(handler, ["a", "b", "c", "nope"], limit=1)
    assert [t.name for t in page.topics] == ["a", "b"]
    assert (page.next_cursor.topic_name, page.next_cursor.partition_index) == ("c", 0)
    assert "nope" not in authorizer.asked
