"""End to end with real broker processes and kafka-python 3.0's
transactional producer (KIP-98): consume-transform-produce with the
offsets committed in the transaction gives exactly-once output; an aborted
round is invisible to read_committed consumers, visible to
read_uncommitted ones; a second producer with the same transactional id
fences the first."""

from __future__ import annotations

import pytest

from .cluster_helpers import create_topic, produce

OUT = "kp-txn-out"
TXN_CONFIG = {"transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
              "transaction.state.log.num.partitions": "4", "offsets.topic.replication.factor": "1",
              "offsets.topic.num.partitions": "4"}


def _producer(cluster, tid: str):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id=tid, request_timeout_ms=20_000)
    p.init_transactions()
    return p


def _read_all(cluster, isolation: str) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=cluster.bootstrap, isolation_level=isolation, enable_auto_commit=False,
                      consumer_timeout_ms=3000)
    tp = TopicPartition(OUT, 0)
    try:
        c.assign([tp])
        c.seek_to_beginning(tp)
        return [m.value for m in c]
    finally:
        c.close()


@pytest.fixture
def cluster(make_cluster):
    c = make_cluster(brokers=1, config=TXN_CONFIG)
    create_topic(c, OUT)
    create_topic(c, "kp-in")
    return c


def test_consume_transform_produce_exactly_once(cluster):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    inputs = [b"in-%03d" % i for i in range(40)]
    produce(cluster, "kp-in", {0: inputs})
    tp = TopicPartition("kp-in", 0)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="kp-ctp", enable_auto_commit=False,
                             auto_offset_reset="earliest", isolation_level="read_committed")
    consumer.assign([tp])
    producer = _producer(cluster, "kp-app")
    rounds = 0
    try:
        for _ in range(50):  # bounded: 4 committed rounds and one aborted are enough
            batch = consumer.poll(timeout_ms=3000, max_records=10).get(tp, [])
            if not batch:
                break
            producer.begin_transaction()
            for m in batch:
                producer.send(OUT, m.value.replace(b"in", b"out"), partition=0)
            position = consumer.position(tp)
            producer.send_offsets_to_transaction({tp: OffsetAndMetadata(position, "", -1)},
                                                 consumer.group_metadata())
            rounds += 1
            if rounds == 2:
                # Sent before the abort, so the log holds the aborted round:
                # unsent records would just be dropped from the client's buffer.
                producer.flush()
                producer.abort_transaction()
                consumer.seek(tp, consumer.committed(tp) or 0)
                continue
            producer.commit_transaction()
        assert consumer.committed(tp) == 40
    finally:
        consumer.close()
        producer.close()
    want = [v.replace(b"in", b"out") for v in inputs]
    assert _read_all(cluster, "read_committed") == want
    uncommitted = _read_all(cluster, "read_uncommitted")
    assert len(uncommitted) > len(want) and set(uncommitted) == set(want)  # the aborted round is there too


def test_zombie_is_fenced(cluster):
    from kafka.errors import KafkaError

    zombie = _producer(cluster, "kp-zombie")
    zombie.begin_transaction()
    zombie.send(OUT, b"zombie", partition=0).get(10)
    successor = _producer(cluster, "kp-zombie")
    successor.begin_transaction()
    successor.send(OUT, b"successor", partition=0).get(10)
    successor.commit_transaction()
    with pytest.raises(KafkaError):
        zombie.commit_transaction()
    successor.close()
    zombie.close(timeout=1)
    assert _read_all(cluster, "read_committed") == [b"successor"]
