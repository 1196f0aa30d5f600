"""The Metadata handler's topic auto-creation when ZooKeeper hangs: the
answer comes within the admin manager's bounded wait, encodes at the
request's version, and carries a retriable LEADER_NOT_AVAILABLE for the
topic (before, the exception closed the client's connection and stalled
the requests queued behind it)."""

from __future__ import annotations

import asyncio

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.headers import RequestHeader, decode_response, encode_response
from kavka.protocol.messages import MetadataRequest
from kavka.server.admin_manager import AdminManager
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.metadata import API_KEY, INT32_MIN, MetadataHandler
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import RequestContext
from kavka.zk.client import KavkaZkClient
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper


class HungZkStore(InMemoryZkStore):
    """Every read and write waits for ever (a hung ZooKeeper)."""

    calls = 0

    async def _hang(self) -> None:
        self.calls += 1
        await asyncio.Event().wait()

    async def get(self, path, watch=None):
        await self._hang()

    async def create(self, path, data=b"", **kwargs):
        await self._hang()


def _context(version: int) -> RequestContext:
    return RequestContext(RequestHeader(API_KEY, version, 7, "client"), "conn-1", "127.0.0.1", 40000, "PLAINTEXT", 0)


def _request(version: int, topic: str) -> MetadataRequest:
    request = MetadataRequest(topics=[MetadataRequest.Topics(name=topic)])
    if version >= 4:
        request.allow_auto_topic_creation = True
    return request


@pytest.mark.parametrize("version", [1, 4, 9, 12, 13])
async def test_auto_creation_with_a_hung_zookeeper_answers_leader_not_available(version):
    store = HungZkStore(InMemoryZooKeeper())
    await store.start()
    admin = AdminManager(KavkaZkClient(store), lambda: {}, lambda: {1: None}, num_partitions=1,
                         default_replication_factor=1, auto_create_timeout_s=0.2)
    cache = MetadataCache(1)
    cache.controller_id = 1  # as after the first UpdateMetadata
    handler = MetadataHandler(cache, lambda: "cluster", admin.auto_create, AuthHelper(None))
    # The outer bound only stops this test from hanging if the fix regresses.
    response = await asyncio.wait_for(handler(_context(version), _request(version, "fresh")), 6.0)
    _, decoded = decode_response(API_KEY, version, encode_response(API_KEY, version, 7, response))
    assert [(t.name, t.error_code) for t in decoded.topics] == [("fresh", int(ErrorCode.LEADER_NOT_AVAILABLE))]
    assert store.calls >= 1


@pytest.mark.parametrize("version", [5, 12])
async def test_offline_replicas_name_dead_brokers_and_replicas_in_failed_log_dirs(version):
    """KIP-112: the controller's UpdateMetadata lists a live broker's replica
    whose log directory failed in offline_replicas; Metadata v5+ answers it
    beside the replicas of dead brokers."""
    from kavka.server.metadata_cache import BrokerEndpoint, LiveBroker, PartitionMetadata

    cache = MetadataCache(1)
    cache.controller_id = 1
    cache.brokers = {b: LiveBroker(b, (BrokerEndpoint("h", 9000 + b, "PLAINTEXT"),)) for b in (1, 2)}  # 3 is dead
    cache.partitions["t"] = {0: PartitionMetadata("t", 0, 1, 4, (1,), (1, 2, 3), (2,), 0, 1)}
    handler = MetadataHandler(cache, lambda: "cluster", None, AuthHelper(None))
    request = MetadataRequest(topics=[MetadataRequest.Topics(name="t")])
    response = await handler(_context(version), request)
    _, decoded = decode_response(API_KEY, version, encode_response(API_KEY, version, 7, response))
    (p,) = decoded.topics[0].partitions
    assert (p.leader_id, p.replica_nodes, p.isr_nodes, p.offline_replicas) == (1, [1, 2, 3], [1], [2, 3])


def _update(cache: MetadataCache, leader: int, leader_epoch: int) -> None:
    """An UpdateMetadata v7 naming brokers 1 and 2 and t-0's leader."""
    from kavka.protocol.messages import UpdateMetadataRequest as U

    cache.update(U(controller_id=1, controller_epoch=1, broker_epoch=-1, topic_states=[U.TopicStates(
        topic_name="t", partition_states=[U.TopicStates.PartitionStates(
            partition_index=0, controller_epoch=1, leader=leader, leader_epoch=leader_epoch, isr=[leader],
            zk_version=leader_epoch, replicas=[1, 2], offline_replicas=[])])],
        live_brokers=[U.LiveBrokers(id=b, endpoints=[U.LiveBrokers.Endpoints(port=9000 + b, host="h",
                                                                             listener="PLAINTEXT", security_protocol=0)])
                      for b in (1, 2)]), 7)


async def test_a_topic_entry_is_built_once_per_cache_update_and_shared_until_the_next():
    """A client's refresh (and a listing of every topic) reuses each topic's
    entry while the cache has not changed: at 10,000 partitions building
    them was most of a Metadata answer's cost, and so is encoding them: the
    first answer's encoding of an entry is appended by the next. An update
    is seen at once, and a request for authorized operations gets its own
    copy."""
    cache = MetadataCache(1)
    _update(cache, leader=1, leader_epoch=3)
    handler = MetadataHandler(cache, lambda: "cluster", None, AuthHelper(None))
    first = await handler(_context(12), MetadataRequest(topics=None))
    again = await handler(_context(12), MetadataRequest(topics=[MetadataRequest.Topics(name="t")]))
    assert again.topics[0] is first.topics[0]
    assert (first.topics[0].partitions[0].leader_id, first.topics[0].partitions[0].leader_epoch) == (1, 3)
    older = await handler(_context(1), MetadataRequest(topics=None))  # per version: v1 has no leader epoch
    assert older.topics[0] is not first.topics[0] and older.topics[0].partitions[0].leader_epoch == -1
    _update(cache, leader=2, leader_epoch=4)
    moved = await handler(_context(12), MetadataRequest(topics=None))
    assert (moved.topics[0].partitions[0].leader_id, moved.topics[0].partitions[0].leader_epoch) == (2, 4)
    with_ops = MetadataRequest(topics=None, include_topic_authorized_operations=True)
    asked = await handler(_context(12), with_ops)
    assert asked.topics[0] is not moved.topics[0]
    assert moved.topics[0].topic_authorized_operations == INT32_MIN != asked.topics[0].topic_authorized_operations
    for version, response in ((12, moved), (12, asked), (1, older)):
        _, decoded = decode_response(API_KEY, version, encode_response(API_KEY, version, 7, response))
        assert [t.name for t in decoded.topics] == ["t"]
    # the shared entry is encoded by the first answer, the next appends its bytes
    again = await handler(_context(12), MetadataRequest(topics=None))
    assert again.topics[0] is moved.topics[0]
    assert moved.topics[0]._memo is not None
    encoded = moved.topics[0]._memo[1]
    assert encode_response(API_KEY, 12, 7, again) == encode_response(API_KEY, 12, 7, moved)
    assert moved.topics[0]._memo[1] is encoded


@pytest.mark.parametrize("version", [1, 4, 9, 12, 13])
@pytest.mark.parametrize("allow_creation", [False, True])
async def test_a_broker_without_its_first_update_answers_with_no_brokers_and_no_topics(
        monkeypatch, version, allow_creation):
    """Restarted while cut off from the controller, a broker knows neither
    the brokers nor the topics: it names none of either, an answer every
    client discards (librdkafka drops each broker an answer leaves out, and
    takes UNKNOWN_TOPIC_OR_PARTITION for a deletion), and creates nothing;
    once the update came, a topic the cluster does not have is
    UNKNOWN_TOPIC_OR_PARTITION (or created) again."""
    from kavka.server.handlers import metadata

    monkeypatch.setattr(metadata, "FIRST_UPDATE_WAIT_S", 0.05)
    created: list[list[str]] = []

    async def auto_create(names: list[str]) -> dict[str, ErrorCode]:
        created.append(names)
        return {n: ErrorCode.LEADER_NOT_AVAILABLE for n in names}

    cache = MetadataCache(1)
    handler = MetadataHandler(cache, lambda: "cluster", auto_create, AuthHelper(None))
    request = _request(version, "queue")
    if version >= 4:
        request.allow_auto_topic_creation = allow_creation
    answer = await handler(_context(version), request)
    _, before = decode_response(API_KEY, version, encode_response(API_KEY, version, 7, answer))
    assert before.brokers == [] and before.topics == [] and before.controller_id == -1 and created == []
    listing = await handler(_context(version), MetadataRequest(topics=None if version >= 1 else []))
    assert listing.brokers == [] and listing.topics == []
    _update(cache, leader=1, leader_epoch=1)
    after = await handler(_context(version), request)
    creates = allow_creation or version < 4
    expected = ErrorCode.LEADER_NOT_AVAILABLE if creates else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert [(t.name, t.error_code) for t in after.topics] == [("queue", int(expected))]
    assert [b.node_id for b in after.brokers] == [1, 2] and after.controller_id == 1
    assert created == ([["queue"]] if creates else [])
