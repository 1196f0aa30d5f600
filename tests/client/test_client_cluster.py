"""Cluster: bootstrap parsing, metadata, routing to leaders, retries."""

from __future__ import annotations

import asyncio

import pytest
from client_fakes import FakeCluster

from kavka.client.cluster import Cluster, parse_bootstrap
from kavka.client.errors import NoBrokersAvailable
from kavka.common.errors import KafkaError, NotLeaderOrFollowerError, UnknownTopicOrPartitionError
from kavka.common.topic_partition import TopicPartition
from kavka.tools.ports import free_port

LIMIT = 20.0
pytestmark = pytest.mark.async_timeout(LIMIT)


def test_parse_bootstrap():
    assert parse_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap(["[::1]:9092"]) == [("::1", 9092)]
    assert parse_bootstrap([("h", 3)]) == [("h", 3)]
    for bad in ("", "nohost", "h:x", "h:0", ":9"):
        with pytest.raises(ValueError):
            parse_bootstrap(bad)



async def test_bootstrap_skips_dead_addresses_and_reads_metadata():
    fc = await FakeCluster(3).start()
    fc.add_topic("t", 3)
    async with Cluster(f"127.0.0.1:{free_port()},{fc.brokers[1].address}") as c:
        md = c.metadata
        assert md.cluster_id == "fake-cluster" and md.controller_id == 0
        assert sorted(md.brokers) == [0, 1, 2]
        assert [p.leader for p in md.partitions_of("t")] == [0, 1, 2]
        assert await c.leader_for(TopicPartition("t", 2)) == 2
        conn = await c.connection(2)
        assert conn is await c.connection(2)  # pooled
        with pytest.raises(UnknownTopicOrPartitionError):
            await c.leader_for(TopicPartition("nope", 0))
    await fc.stop()


async def test_no_reachable_broker_is_typed():
    with pytest.raises(NoBrokersAvailable, match="no broker reachable"):
        await Cluster(f"127.0.0.1:{free_port()}", connect_timeout_ms=500).start()


async def test_concurrent_connection_requests_open_one_connection():
    fc = await FakeCluster(2).start()
    async with Cluster(fc.brokers[0].address) as c:
        before = fc.brokers[1].connections
        conns = await asyncio.gather(*(c.connection(1) for _ in range(10)))
        assert len({id(x) for x in conns}) == 1
        assert fc.brokers[1].connections == before + 1
    await fc.stop()


async def test_call_retries_not_leader_after_refreshing_metadata():
    fc = await FakeCluster(2).start()
    fc.add_topic("t", 1, leaders=[0])
    tp = TopicPartition("t", 0)
    async with Cluster(fc.bootstrap, retry_backoff_ms=10) as c:
        assert c.metadata.leader_for(tp) == 0
        fc.move_leader("t", 0, 1)  # the client's metadata is now stale
        attempts = []

        async def op():
            leader = c.metadata.leader_for(tp)
            attempts.append(leader)
            if leader != fc.topics["t"][0].leader:
                raise NotLeaderOrFollowerError(f"{leader} is not the leader")
            return leader

        assert await c.call(op, refresh_topics=["t"]) == 1
        assert attempts == [0, 1]
    await fc.stop()


async def test_call_gives_up_at_the_deadline_and_raises_non_retriable_at_once():
    fc = await FakeCluster(1).start()
    async with Cluster(fc.bootstrap, retry_backoff_ms=10) as c:
        n = 0

        async def retriable():
            nonlocal n
            n += 1
            raise NotLeaderOrFollowerError()

        with pytest.raises(NotLeaderOrFollowerError):
            await c.call(retriable, deadline_ms=1000)
        assert n >= 2

        async def fatal():
            nonlocal n
            n = -100
            raise KafkaError("bad", code=42)

        with pytest.raises(KafkaError, match="INVALID_REQUEST"):
            await c.call(fatal, deadline_ms=5000)
        assert n == -100
    await fc.stop()


async def test_connection_to_a_restarted_broker_is_reopened():
    fc = await FakeCluster(1).start()
    async with Cluster(fc.bootstrap, retry_backoff_ms=10) as c:
        first = await c.connection(0)
        fc.brokers[0].kill_connections()
        while first.connected:  # noqa: ASYNC110 - the connection under test has no closed event to await
            await asyncio.sleep(0.01)
        md = await c.call(lambda: c.refresh_metadata(), deadline_ms=5000)
        assert 0 in md.brokers
        assert (await c.connection(0)) is not first
    await fc.stop()
