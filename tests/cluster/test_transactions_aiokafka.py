"""End to end with a real broker process and aiokafka 0.14's transactional
producer (KIP-98; aiokafka sends InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn and TxnOffsetCommit at v0): consume-transform-
produce with the offsets committed in the transaction gives exactly-once
output, an aborted round is invisible to read_committed and visible to
read_uncommitted consumers; a second producer with the same transactional
id fences the first; and a transaction left open past its
``transaction.timeout.ms`` is aborted by the coordinator: its records never
reach read_committed consumers, the last stable offset moves past them,
and the fenced producer's commit is refused."""

from __future__ import annotations

import asyncio

import pytest

from .cluster_helpers import create_topic, produce

IN, OUT = "aio-txn-in", "aio-txn-out"
TXN_CONFIG = {"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
              "transaction.state.log.num.partitions": "4", "offsets.topic.replication.factor": "1",
              "offsets.topic.num.partitions": "4",
              "transaction.abort.timed.out.transaction.cleanup.interval.ms": "300"}
LIMIT = 120.0
pytestmark = pytest.mark.async_timeout(LIMIT)


async def _producer(cluster, tid: str, **kw):
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id=tid, request_timeout_ms=20_000, **kw)
    await p.start()
    return p


async def _read_all(cluster, topic: str, isolation: str) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    c = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, isolation_level=isolation, enable_auto_commit=False)
    await c.start()
    try:
        c.assign([tp])
        await c.seek_to_beginning(tp)
        end = (await c.end_offsets([tp]))[tp]  # the LSO for read_committed
        got: list[bytes] = []
        for _ in range(100):  # bounded
            if await c.position(tp) >= end:
                break
            batch = await c.getmany(tp, timeout_ms=1000)
            got += [m.value for m in batch.get(tp, [])]
        return got
    finally:
        await c.stop()


@pytest.fixture
def cluster(make_cluster):
    c = make_cluster(brokers=1, config=TXN_CONFIG)
    create_topic(c, IN)
    create_topic(c, OUT)
    return c


async def test_consume_transform_produce_exactly_once(cluster):
    inputs = [b"in-%03d" % i for i in range(30)]
    produce(cluster, IN, {0: inputs})

    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    tp = TopicPartition(IN, 0)
    consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="aio-ctp",
                                enable_auto_commit=False, auto_offset_reset="earliest",
                                isolation_level="read_committed")
    await consumer.start()
    producer = await _producer(cluster, "aio-app")
    rounds = 0
    try:
        consumer.assign([tp])
        for _ in range(40):  # bounded: three committed rounds and one aborted
            batch = (await consumer.getmany(tp, timeout_ms=2000, max_records=10)).get(tp, [])
            if not batch:
                break
            async with producer.transaction():
                for m in batch:
                    await producer.send(OUT, m.value.replace(b"in", b"out"), partition=0)
                await producer.send_offsets_to_transaction(
                    {tp: OffsetAndMetadata(batch[-1].offset + 1, "")}, "aio-ctp")
            rounds += 1
            if rounds == 1:  # one aborted round: written, then thrown away
                await producer.begin_transaction()
                await producer.send_and_wait(OUT, b"aborted", partition=0)
                await producer.abort_transaction()
    finally:
        await producer.stop()
        await consumer.stop()
    assert rounds == 3
    assert await _read_all(cluster, OUT, "read_committed") == [i.replace(b"in", b"out") for i in inputs]
    raw = await _read_all(cluster, OUT, "read_uncommitted")
    assert raw.count(b"aborted") == 1 and len(raw) == len(inputs) + 1
    committed = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="aio-ctp")
    await committed.start()
    try:
        assert await committed.committed(tp) == len(inputs)  # offsets committed with the transactions
    finally:
        await committed.stop()


async def test_zombie_is_fenced(cluster):
    from aiokafka.errors import ProducerFenced

    old = await _producer(cluster, "aio-zombie")
    try:
        async with old.transaction():
            await old.send_and_wait(OUT, b"old-committed", partition=0)
        new = await _producer(cluster, "aio-zombie")  # bumps the epoch
        try:
            with pytest.raises(ProducerFenced):
                async with old.transaction():
                    await old.send_and_wait(OUT, b"zombie", partition=0)
            async with new.transaction():
                await new.send_and_wait(OUT, b"new-committed", partition=0)
        finally:
            await new.stop()
    finally:
        await old.stop()
    assert await _read_all(cluster, OUT, "read_committed") == [b"old-committed", b"new-committed"]


async def test_transaction_past_its_timeout_is_aborted(cluster):
    from aiokafka.errors import KafkaError

    slow = await _producer(cluster, "aio-slow", transaction_timeout_ms=1500)
    try:
        await slow.begin_transaction()
        await slow.send_and_wait(OUT, b"timed-out-0", partition=0)
        await slow.send_and_wait(OUT, b"timed-out-1", partition=0)
        # the coordinator aborts it (and bumps the epoch) once 1.5 s have passed
        for _ in range(100):  # bounded wait for the abort marker: the LSO reaches the log end
            raw = await _read_all(cluster, OUT, "read_uncommitted")
            committed = await _read_all(cluster, OUT, "read_committed")
            if raw and committed == [] and await _lso_at_end(cluster):
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("the timed-out transaction was never aborted")
        with pytest.raises(KafkaError):
            await slow.commit_transaction()  # fenced: its epoch is gone
    finally:
        await slow.stop()
    fresh = await _producer(cluster, "aio-slow")
    try:
        async with fresh.transaction():
            await fresh.send_and_wait(OUT, b"after", partition=0)
    finally:
        await fresh.stop()
    assert await _read_all(cluster, OUT, "read_committed") == [b"after"]
    assert (await _read_all(cluster, OUT, "read_uncommitted"))[:2] == [b"timed-out-0", b"timed-out-1"]


async def _lso_at_end(cluster) -> bool:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    tp = TopicPartition(OUT, 0)
    ends = {}
    for isolation in ("read_committed", "read_uncommitted"):
        c = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, isolation_level=isolation)
        await c.start()
        try:
            ends[isolation] = (await c.end_offsets([tp]))[tp]
        finally:
            await c.stop()
    return ends["read_committed"] == ends["read_uncommitted"]
