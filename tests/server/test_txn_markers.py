"""``BrokerMarkerWriter`` against real loopback listeners speaking the
Kafka protocol: a leader that refuses connections, one that never answers
(request timeout), NOT_LEADER_OR_FOLLOWER answers and a leader moved in
the metadata cache are all retried against the leader named at that
moment until the marker is written; a deleted topic ends the delivery;
``still_owner()`` false stops it; TRANSACTION_COORDINATOR_FENCED raises
``CoordinatorFencedError``."""

from __future__ import annotations

import asyncio
import socket

import pytest

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import WriteTxnMarkersResponse
from kavka.server.handlers import api_versions
from kavka.server.metadata_cache import BrokerEndpoint, LiveBroker
from kavka.server.network import Dispatcher, NetworkConfig, SocketServer
from kavka.server.txn_markers import BrokerMarkerWriter
from kavka.transaction.coordinator import CoordinatorFencedError

LIMIT = 20.0
pytestmark = pytest.mark.async_timeout(LIMIT)
TP = TopicPartition("out", 0)
R = WriteTxnMarkersResponse


class Meta:
    def __init__(self, leader: int) -> None:
        self.leader = leader


class FakeCache:
    def __init__(self) -> None:
        self.brokers: dict[int, LiveBroker] = {}
        self.leaders: dict[TopicPartition, int] = {}

    def add(self, broker_id: int, port: int) -> None:
        self.brokers[broker_id] = LiveBroker(broker_id, (BrokerEndpoint("127.0.0.1", port, "PLAINTEXT"),))

    def contains_topic(self, topic: str) -> bool:
        return any(tp.topic == topic for tp in self.leaders)

    def partition(self, topic: str, partition: int):
        leader = self.leaders.get(TopicPartition(topic, partition))
        return None if leader is None else Meta(leader)


class Leader:
    """A listener answering WriteTxnMarkers with ``codes`` in turn (then
    NONE); ``hang`` makes it never answer."""

    def __init__(self, codes: list[ErrorCode] = (), hang: bool = False) -> None:
        self.codes, self.hang, self.calls = list(codes), hang, []
        self._called = asyncio.Event()
        self.dispatcher = Dispatcher()
        api_versions.register(self.dispatcher)
        self.dispatcher.register(27, self.handle, 0, 2)
        self.server = SocketServer(self.dispatcher, NetworkConfig())

    async def handle(self, ctx, request):
        self.calls.append(request)
        self._called.set()
        if self.hang:
            await asyncio.sleep(3600)
        code = self.codes.pop(0) if self.codes else ErrorCode.NONE
        return R(markers=[R.Markers(producer_id=m.producer_id, topics=[
            R.Markers.Topics(name=t.name, partitions=[R.Markers.Topics.Partitions(partition_index=p,
                                                                                  error_code=int(code))
                                                      for p in t.partition_indexes])
            for t in m.topics]) for m in request.markers])

    async def start(self) -> int:
        return (await self.server.start("127.0.0.1", 0))[1]

    async def called(self, times: int) -> None:
        """Until ``times`` WriteTxnMarkers requests have arrived."""
        while len(self.calls) < times:
            self._called.clear()
            await self._called.wait()


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there: connections are refused
    return port


def writer(cache, **kw) -> BrokerMarkerWriter:
    return BrokerMarkerWriter(cache, "PLAINTEXT", retry_backoff_ms=5, max_retry_backoff_ms=20, **kw)


async def write(w: BrokerMarkerWriter, still_owner=lambda: True) -> None:
    await w.write_markers(42, 3, True, 7, frozenset({TP}), still_owner)


async def test_refused_connection_then_leader_moves_then_not_leader():
    cache, leader = FakeCache(), Leader([ErrorCode.NOT_LEADER_OR_FOLLOWER] * 2)
    cache.add(1, closed_port())
    cache.add(2, await leader.start())
    cache.leaders[TP] = 1
    task = asyncio.create_task(write(writer(cache)))
    await asyncio.sleep(0.1)
    assert not task.done()  # broker 1 refuses: still retrying
    cache.leaders[TP] = 2  # the controller elected broker 2
    await task
    assert len(leader.calls) == 3
    m = leader.calls[-1].markers[0]
    assert (m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch) == (42, 3, True, 7)


async def test_leader_not_answering_times_out_and_is_retried():
    cache, silent, good = FakeCache(), Leader(hang=True), Leader()
    cache.add(1, await silent.start())
    cache.add(2, await good.start())
    cache.leaders[TP] = 1
    task = asyncio.create_task(write(writer(cache, request_timeout_ms=100)))
    await silent.called(2)  # timed out once at least, and asked again
    cache.leaders[TP] = 2
    await task
    assert len(good.calls) == 1


async def test_no_leader_or_dead_leader_waits_for_one():
    cache, leader = FakeCache(), Leader()
    port = await leader.start()
    cache.leaders[TP] = -1
    task = asyncio.create_task(write(writer(cache)))
    await asyncio.sleep(0.05)
    cache.leaders[TP] = 3  # not among the live brokers yet
    await asyncio.sleep(0.05)
    assert not task.done() and leader.calls == []
    cache.add(3, port)
    await task
    assert len(leader.calls) == 1


async def test_deleted_topic_ends_delivery_and_losing_ownership_stops_it():
    cache = FakeCache()
    cache.add(1, closed_port())
    cache.leaders[TP] = 1
    owner = [True]
    task = asyncio.create_task(write(writer(cache), lambda: owner[0]))
    await asyncio.sleep(0.05)
    owner[0] = False
    await task  # returns: the next coordinator takes over
    task = asyncio.create_task(write(writer(cache)))
    await asyncio.sleep(0.05)
    del cache.leaders[TP]  # topic deleted
    await task


async def test_fenced_coordinator_raises():
    cache, leader = FakeCache(), Leader([ErrorCode.TRANSACTION_COORDINATOR_FENCED])
    cache.add(1, await leader.start())
    cache.leaders[TP] = 1
    with pytest.raises(CoordinatorFencedError):
        await write(writer(cache))
