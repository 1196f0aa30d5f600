"""Producer and Consumer through the fake cluster (which stores batches and
patches their base offsets): round trip, key partitioning, acks=0, and
following a leader that moved."""

from __future__ import annotations

import asyncio

import pytest
from client_fakes import FakeCluster

from kavka.client.cluster import Cluster
from kavka.client.consumer import Consumer
from kavka.client.partitioner import partition_for_key
from kavka.client.producer import Producer
from kavka.common.errors import OffsetOutOfRangeError, UnknownTopicOrPartitionError
from kavka.common.topic_partition import TopicPartition

LIMIT = 30.0
pytestmark = pytest.mark.async_timeout(LIMIT)


async def test_round_trip_keys_land_on_the_default_partitioner_partition():
    fc = await FakeCluster(3).start()
    fc.add_topic("t", 3)
    async with Cluster(fc.bootstrap) as c:
        async with Producer(c, linger_ms=2, batch_size=4096) as p:
            futs = [await p.send("t", b"value-%d" % i, b"key-%d" % (i % 17), headers=(("h", b"%d" % i),))
                    for i in range(500)]
            metas = await asyncio.gather(*futs)
        for i, md in enumerate(metas):
            assert md.partition == partition_for_key(b"key-%d" % (i % 17), 3)
        # offsets per partition are dense and in send order
        for part in range(3):
            offs = [md.offset for md in metas if md.partition == part]
            assert offs == list(range(len(offs)))
        assert sum(len(fc.topics["t"][i].batches) for i in range(3)) < 500  # records were batched
        consumer = Consumer(c, max_wait_ms=10)
        consumer.assign(TopicPartition("t", i) for i in range(3))
        got = [r async for r in consumer.records(stop_at_end=True)]
    await fc.stop()
    assert len(got) == 500
    by_value = {r.value: r for r in got}
    for i, md in enumerate(metas):
        r = by_value[b"value-%d" % i]
        assert (r.partition, r.offset, r.key, r.headers) == (md.partition, md.offset, b"key-%d" % (i % 17),
                                                             (("h", b"%d" % i),))


async def test_unkeyed_round_robin_and_acks_zero():
    fc = await FakeCluster(2).start()
    fc.add_topic("t", 2)
    async with Cluster(fc.bootstrap) as c:
        async with Producer(c, acks=0, linger_ms=0) as p:
            metas = [await (await p.send("t", b"x")) for _ in range(4)]
        assert [m.offset for m in metas] == [-1] * 4
        assert sorted(m.partition for m in metas) == [0, 0, 1, 1]
    await fc.stop()
    assert [fc.topics["t"][i].next_offset for i in range(2)] == [2, 2]


async def test_consumer_seeks_and_resets():
    fc = await FakeCluster(1).start()
    fc.add_topic("t", 1)
    tp = TopicPartition("t", 0)
    async with Cluster(fc.bootstrap) as c:
        async with Producer(c, linger_ms=0) as p:
            for i in range(10):
                await p.send_and_wait("t", b"%d" % i)
        consumer = Consumer(c, max_wait_ms=10)
        consumer.assign([tp])
        consumer.seek(tp, 7)
        assert [r.offset async for r in consumer.records(stop_at_end=True)] == [7, 8, 9]
        await consumer.seek_to_beginning()
        assert consumer.position(tp) == 0
        assert len([r async for r in consumer.records(max_records=4)]) == 4
        await consumer.seek_to_end()
        assert consumer.position(tp) == 10
        strict = Consumer(c, max_wait_ms=10, auto_offset_reset="none")
        strict.assign([tp])
        strict.seek(tp, 99)
        with pytest.raises(OffsetOutOfRangeError):
            await strict.poll()
        latest = Consumer(c, max_wait_ms=10, auto_offset_reset="latest")
        latest.assign([tp])
        assert await latest.poll() == [] and latest.position(tp) == 10
    await fc.stop()


async def test_producer_and_consumer_follow_a_moved_leader():
    fc = await FakeCluster(2).start()
    fc.add_topic("t", 1, leaders=[0])
    tp = TopicPartition("t", 0)
    async with Cluster(fc.bootstrap, retry_backoff_ms=10) as c:
        async with Producer(c, linger_ms=0) as p:
            await p.send_and_wait("t", b"a")
            fc.move_leader("t", 0, 1)  # producer's metadata is stale: NOT_LEADER then retry
            md = await p.send_and_wait("t", b"b")
        assert md.offset == 1
        produced_at = [(b.node_id, h.api_key) for b in fc.brokers for h in b.received if h.api_key == 0]
        assert produced_at == [(0, 0), (0, 0), (1, 0)]
        consumer = Consumer(c, max_wait_ms=10)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        assert [r.value for r in await consumer.poll()] == [b"a", b"b"]
        async with Producer(c, linger_ms=0) as p:
            await p.send_and_wait("t", b"c")
            fc.move_leader("t", 0, 0)  # the leader moves back: node 1 answers NOT_LEADER_OR_FOLLOWER
            assert await consumer.poll() == []
            assert [r.value for r in await consumer.poll()] == [b"c"]  # metadata was refreshed
            fc.move_leader("t", 0, 0)  # same leader, new epoch: FENCED_LEADER_EPOCH (KIP-320)
            await p.send_and_wait("t", b"d")
            assert await consumer.poll() == []
            got = [r.value async for r in consumer.records(stop_at_end=True)]
        assert got == [b"d"]
        fetched_at = [b.node_id for b in fc.brokers for h in b.received if h.api_key == 1]
        assert sorted(fetched_at) == [0, 0, 0, 1, 1]
    await fc.stop()


async def test_producer_reports_non_retriable_errors_on_futures():
    fc = await FakeCluster(1).start()
    fc.add_topic("t", 1)
    fc.brokers[0].handlers[0] = _reject
    async with Cluster(fc.bootstrap) as c:
        p = Producer(c, linger_ms=0)
        fut = await p.send("t", b"x")
        with pytest.raises(Exception, match="MESSAGE_TOO_LARGE"):
            await fut
        with pytest.raises(Exception, match="has 1 partitions, not 5"):
            await p.send("t", b"x", partition=5)
    await fc.stop()


def _reject(broker, header, req):
    from kavka.protocol.messages import ProduceResponse as R
    return R(responses=[R.Responses(name=t.name, partition_responses=[
        R.Responses.PartitionResponses(index=pd.index, error_code=10, base_offset=-1)
        for pd in t.partition_data]) for t in req.topic_data])


async def test_a_batch_that_cannot_be_built_fails_its_futures_instead_of_hanging():
    fc = await FakeCluster(1).start()
    fc.add_topic("t", 1)
    async with Cluster(fc.bootstrap) as c:
        p = Producer(c, linger_ms=50)
        good = await p.send("t", b"x")
        bad = await p.send("t", b"y", headers=((b"not-text", b"v"),))
        await p.flush()
        for fut in (good, bad):
            with pytest.raises(TypeError, match="header key must be str"):
                fut.result()
        with pytest.raises(ValueError, match="assign"):
            await Consumer(c).poll()
    await fc.stop()


async def test_send_to_a_missing_topic_waits_at_most_max_block_ms_then_raises():
    fc = await FakeCluster(1).start()
    async with Cluster(fc.bootstrap, retry_backoff_ms=10) as c:
        p = Producer(c, max_block_ms=300)
        with pytest.raises(UnknownTopicOrPartitionError):
            await p.send("missing", b"x")
        # a topic that appears while send() waits (e.g. just after a create)
        asyncio.get_running_loop().call_later(0.1, fc.add_topic, "late", 1)
        p.max_block_ms = 10_000
        assert (await p.send_and_wait("late", b"x")).offset == 0
        metadata_requests = sum(h.api_key == 3 for h in fc.brokers[0].received)
        assert metadata_requests >= 3  # it kept asking until the topic existed
    await fc.stop()
