"""AddPartitionsToTxn refuses a partition the broker's metadata does not
know, as Kafka does: UNKNOWN_TOPIC_OR_PARTITION for it,
OPERATION_NOT_ATTEMPTED for the others, nothing added to the transaction
(so the marker writer can treat a partition that vanishes later as
deleted); known partitions go to the coordinator, PRODUCER_FENCED reaching
pre-v2 clients as INVALID_PRODUCER_EPOCH (KIP-588)."""

from __future__ import annotations

import asyncio

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.headers import RequestHeader
from kavka.protocol.messages import AddPartitionsToTxnRequest
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.add_partitions_to_txn import AddPartitionsToTxnHandler
from kavka.server.network import RequestContext


class Cache:
    def __init__(self, known: set[TopicPartition]) -> None:
        self.known = known

    def partition(self, topic: str, partition: int):
        return object() if TopicPartition(topic, partition) in self.known else None


class Coordinator:
    def __init__(self, answer: ErrorCode = ErrorCode.NONE) -> None:
        self.answer, self.calls = answer, []

    async def add_partitions(self, tid, pid, epoch, partitions):
        self.calls.append((tid, pid, epoch, partitions))
        return self.answer


def ask(handler, version: int, topics: dict[str, list[int]]) -> dict[tuple[str, int], ErrorCode]:
    R = AddPartitionsToTxnRequest
    request = R(v3_and_below_transactional_id="app", v3_and_below_producer_id=7, v3_and_below_producer_epoch=2,
                v3_and_below_topics=[R.V3AndBelowTopics(name=t, partitions=ps) for t, ps in topics.items()])
    ctx = RequestContext(RequestHeader(24, version, 1, "test"), "c1", "127.0.0.1", 1, "PLAINTEXT", 0)
    response = asyncio.run(handler(ctx, request))
    return {(t.name, p.partition_index): ErrorCode(p.partition_error_code)
            for t in response.results_by_topic_v3_and_below for p in t.results_by_partition}


def test_unknown_partition_fails_the_whole_request():
    coordinator = Coordinator()
    handler = AddPartitionsToTxnHandler(coordinator, Cache({TopicPartition("a", 0), TopicPartition("a", 1)}), AuthHelper(None))
    answers = ask(handler, 3, {"a": [0, 1], "gone": [0]})
    assert answers == {("a", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("a", 1): ErrorCode.OPERATION_NOT_ATTEMPTED,
                       ("gone", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert coordinator.calls == []


def test_known_partitions_reach_the_coordinator():
    coordinator = Coordinator()
    handler = AddPartitionsToTxnHandler(coordinator, Cache({TopicPartition("a", 0), TopicPartition("b", 2)}), AuthHelper(None))
    assert ask(handler, 0, {"a": [0], "b": [2]}) == {("a", 0): ErrorCode.NONE, ("b", 2): ErrorCode.NONE}
    assert coordinator.calls == [("app", 7, 2, frozenset({TopicPartition("a", 0), TopicPartition("b", 2)}))]
    fenced = AddPartitionsToTxnHandler(Coordinator(ErrorCode.PRODUCER_FENCED), Cache({TopicPartition("a", 0)}), AuthHelper(None))
    assert ask(fenced, 1, {"a": [0]}) == {("a", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    assert ask(fenced, 2, {"a": [0]}) == {("a", 0): ErrorCode.PRODUCER_FENCED}
