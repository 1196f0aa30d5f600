"""End to end with real broker processes and librdkafka's transactional
producer (KIP-98): FindCoordinator(transaction), InitProducerId,
AddPartitionsToTxn, EndTxn through Kavka's transaction coordinator, whose
markers (WriteTxnMarkers) decide what a read_committed consumer sees.

- an aborted transaction is invisible to read_committed and visible to
  read_uncommitted; a committed one visible to both;
- a zombie: a second producer with the same transactional.id fences the
  first, whose next commit fails as fenced.
"""

from __future__ import annotations

import time

import pytest

from .cluster_helpers import create_topic

TOPIC = "txn-out"
TXN_CONFIG = {"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
              "transaction.state.log.num.partitions": "4", "offsets.topic.replication.factor": "1",
              "offsets.topic.num.partitions": "4"}


def _producer(cluster, tid: str):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, "linger.ms": 5,
                  "transaction.timeout.ms": 60_000})
    p.init_transactions(30)
    return p


def _read(cluster, isolation: str, expected_end: int | None = None) -> list[bytes]:
    """The partition's records from offset 0 up to ``expected_end`` (the
    high watermark when None) as a consumer of ``isolation`` sees them."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"read-{isolation}",
                  "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True})
    got: list[bytes] = []
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        if expected_end is None:
            expected_end = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10, cached=False)[1]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                if c.position([TopicPartition(TOPIC, 0)])[0].offset >= expected_end:
                    break
                continue
            got.append(m.value())
    finally:
        c.close()
    return got


@pytest.fixture
def cluster(make_cluster):
    c = make_cluster(brokers=1, config=TXN_CONFIG)
    create_topic(c, TOPIC)
    return c


def test_abort_invisible_to_read_committed_commit_visible(cluster):
    p = _producer(cluster, "txn-app-1")
    p.begin_transaction()
    for i in range(3):
        p.produce(TOPIC, b"aborted-%d" % i, partition=0)
    p.flush(10)
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(2):
        p.produce(TOPIC, b"committed-%d" % i, partition=0)
    p.commit_transaction(30)
    # 3 aborted + marker + 2 committed + marker
    assert _read(cluster, "read_committed", 7) == [b"committed-0", b"committed-1"]
    assert _read(cluster, "read_uncommitted", 7) == [
        b"aborted-0", b"aborted-1", b"aborted-2", b"committed-0", b"committed-1"]


def test_zombie_producer_is_fenced(cluster):
    from confluent_kafka import KafkaException

    zombie = _producer(cluster, "txn-app-2")
    zombie.begin_transaction()
    zombie.produce(TOPIC, b"zombie", partition=0)
    zombie.flush(10)
    successor = _producer(cluster, "txn-app-2")  # bumps the epoch, aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce(TOPIC, b"successor", partition=0)
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as e:
        zombie.commit_transaction(10)
    assert e.value.args[0].fatal() or "fenced" in str(e.value).lower()
    assert _read(cluster, "read_committed", 4) == [b"successor"]


def test_consume_transform_produce_is_exactly_once(cluster):
    """Offsets committed in the transaction (AddOffsetsToTxn +
    TxnOffsetCommit): an aborted round is re-read from the committed offset,
    and the output holds every input exactly once."""
    from confluent_kafka import Consumer, TopicPartition

    from .cluster_helpers import produce

    create_topic(cluster, "ctp-in")
    inputs = [b"in-%03d" % i for i in range(60)]
    produce(cluster, "ctp-in", {0: inputs})
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ctp", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    consumer.assign([TopicPartition("ctp-in", 0)])
    producer = _producer(cluster, "ctp-app")
    rounds = 0
    try:
        while True:
            batch = consumer.consume(10, timeout=5)
            batch = [m for m in batch if m.error() is None]
            if not batch:
                break
            producer.begin_transaction()
            for m in batch:
                producer.produce(TOPIC, m.value().replace(b"in", b"out"), partition=0)
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 10)
            rounds += 1
            if rounds == 3:  # this round fails: abort and rewind to the committed offset
                producer.abort_transaction(30)
                committed = consumer.committed([TopicPartition("ctp-in", 0)], 10)
                consumer.seek(committed[0])
                continue
            producer.commit_transaction(30)
        final = consumer.committed([TopicPartition("ctp-in", 0)], 10)[0].offset
    finally:
        consumer.close()
    assert final == 60
    out = _read(cluster, "read_committed")
    assert out == [v.replace(b"in", b"out") for v in inputs]
