"""The OffsetCommit handler against a real ``GroupCoordinator``: a partition
the broker's metadata does not know is answered UNKNOWN_TOPIC_OR_PARTITION
and nothing is stored for it, as Kafka's ``handleOffsetCommitRequest``
(librdkafka's suite, 0030 and 0112, commits to partitions that do not exist
and expects that error); known partitions in the same request are stored."""

from __future__ import annotations

import asyncio

import pytest

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupConfig, GroupCoordinator
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import OffsetCommitRequest
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.offset_commit import API_KEY, MAX_VERSION, MIN_VERSION, OffsetCommitHandler
from kavka.server.metadata_cache import MetadataCache, PartitionMetadata
from kavka.server.network import RequestContext


class MemoryGroupLog:
    def __init__(self) -> None:
        self.batches: list[bytes] = []

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        self.batches.append(batch)
        return ErrorCode.NONE

    def read_all(self, partition: int):
        yield from self.batches

    async def wait_committed(self, partition, still_wanted) -> bool:
        return still_wanted()  # every append here is committed at once


async def _coordinator() -> GroupCoordinator:
    coordinator = GroupCoordinator(1, GroupConfig(num_partitions=1, initial_rebalance_delay_ms=0), MemoryGroupLog())
    coordinator.on_elected(0, 1)
    for _ in range(200):
        if 0 in coordinator.owned:
            break
        await asyncio.sleep(0.01)
    assert 0 in coordinator.owned
    return coordinator


def _cache_with(topic: str, partitions: int) -> MetadataCache:
    cache = MetadataCache(1)
    cache.partitions[topic] = {p: PartitionMetadata(topic, p, 1, 0, (1,), (1,), (), 0, 1) for p in range(partitions)}
    return cache


def _request(version: int, commits: dict[str, list[int]]) -> OffsetCommitRequest:
    R = OffsetCommitRequest
    request = R(group_id="g", topics=[
        R.Topics(name=t, partitions=[R.Topics.Partitions(partition_index=p, committed_offset=42) for p in ps])
        for t, ps in commits.items()])
    if version >= 1:
        request.generation_id_or_member_epoch = -1
        request.member_id = ""
    return request


def _context(version: int) -> RequestContext:
    return RequestContext(RequestHeader(API_KEY, version, 7, "c"), "conn-1", "127.0.0.1", 40000, "PLAINTEXT", 0)


@pytest.mark.parametrize("version", [MIN_VERSION, 2, 7, MAX_VERSION])
async def test_unknown_partitions_are_refused_and_not_stored(version):
    coordinator = await _coordinator()
    handler = OffsetCommitHandler(coordinator, _cache_with("known", 2), AuthHelper(None))
    response = await handler(_context(version), _request(version, {"known": [0, 5], "missing": [0]}))
    _, decoded = decode_response(API_KEY, version, encode_response(API_KEY, version, 7, response))
    answers = {(t.name, p.partition_index): p.error_code for t in decoded.topics for p in t.partitions}
    assert answers == {("known", 0): 0, ("known", 5): int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                       ("missing", 0): int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)}
    code, stored = coordinator.fetch_offsets("g", None)
    assert code is ErrorCode.NONE
    assert {tp: o.offset for tp, o in stored.items() if o is not None} == {("known", 0): 42}


async def test_only_unknown_partitions_do_not_reach_the_group():
    coordinator = await _coordinator()
    handler = OffsetCommitHandler(coordinator, _cache_with("known", 1), AuthHelper(None))
    response = await handler(_context(MAX_VERSION), _request(MAX_VERSION, {"missing": [3]}))
    assert [(p.partition_index, p.error_code) for t in response.topics for p in t.partitions] == [
        (3, int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))]
    assert "g" not in coordinator.groups


@pytest.mark.parametrize("version", [0, 3])
async def test_txn_offset_commit_refuses_unknown_partitions(version):
    from kavka.protocol.messages import TxnOffsetCommitRequest as T
    from kavka.server.handlers import txn_offset_commit

    coordinator = await _coordinator()
    handler = txn_offset_commit.TxnOffsetCommitHandler(coordinator, _cache_with("known", 1), AuthHelper(None))
    request = T(transactional_id="tx", group_id="g", producer_id=7, producer_epoch=0, topics=[
        T.Topics(name="known", partitions=[T.Topics.Partitions(partition_index=0, committed_offset=5),
                                           T.Topics.Partitions(partition_index=1, committed_offset=5)]),
        T.Topics(name="missing", partitions=[T.Topics.Partitions(partition_index=0, committed_offset=5)])])
    ctx = RequestContext(RequestHeader(txn_offset_commit.API_KEY, version, 7, "c"), "conn-1", "127.0.0.1", 40000,
                         "PLAINTEXT", 0)
    response = await handler(ctx, request)
    answers = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
    unknown = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert answers[("known", 1)] == unknown and answers[("missing", 0)] == unknown
    assert answers[("known", 0)] == 0
    assert coordinator.has_pending_txn_offset("g", ("known", 0))
    assert not coordinator.has_pending_txn_offset("g", ("known", 1))
    assert not coordinator.has_pending_txn_offset("g", ("missing", 0))
