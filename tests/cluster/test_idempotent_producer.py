"""End to end with real broker processes (issue 6, seed 004 leader-failure
case 2): an idempotent producer keeps producing through a SIGKILL of the
partition leader (3 brokers, RF=3, min.insync.replicas=2, acks=all).
Retries of batches the old leader had already replicated reach the new
leader, which learnt the producer's sequences as a follower, and are
answered with their original offsets instead of being written again.

Checked for confluent-kafka (``enable.idempotence=true``) and kafka-python
(idempotent by default): every acknowledged record is in the log exactly
once at the offset it was acknowledged at, no record appears twice, and the
records are in send order."""

from __future__ import annotations

import time

from .replication_helpers import REPLICATION_CONFIG, consume_all, create_topic, wait_state

RECORDS = 6_000


def _check(cluster, topic: str, acked: dict[bytes, int]) -> None:
    consumed = consume_all(cluster, topic)
    values = [v for _, v in consumed]
    assert len(values) == len(set(values)), f"{len(values) - len(set(values))} records written twice"
    assert values == sorted(values), "records out of send order"
    at = dict(consumed)
    wrong = [(v, o, at.get(o)) for v, o in acked.items() if at.get(o) != v]
    assert not wrong, f"{len(wrong)} acknowledged records not at their offset, e.g. {wrong[:3]}"
    assert len(acked) == RECORDS


def _start(make_cluster, topic: str):
    cluster = make_cluster(brokers=3, config=REPLICATION_CONFIG)
    create_topic(cluster, topic, config={"min.insync.replicas": "2"})
    first = wait_state(cluster, topic, lambda s: len(s["isr"]) == 3, "an ISR of 3")
    return cluster, first["leader"]


def test_confluent_idempotent_producer_through_leader_kill(make_cluster):
    from confluent_kafka import Producer

    topic = "idem-confluent"
    cluster, victim = _start(make_cluster, topic)
    producer = Producer({
        "bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 2,
        "batch.num.messages": 100, "message.timeout.ms": 60_000, "retry.backoff.ms": 200,
        "topic.metadata.refresh.interval.ms": 1000,
    })
    acked: dict[bytes, int] = {}
    failed: list[str] = []

    def delivered(err, msg) -> None:
        if err is None:
            acked[msg.value()] = msg.offset()
        else:
            failed.append(str(err))

    for i in range(RECORDS):
        while True:
            try:
                producer.produce(topic, b"record-%06d" % i, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
        if i == RECORDS // 2:
            deadline = time.monotonic() + 30
            while len(acked) < RECORDS // 4 and time.monotonic() < deadline:
                producer.poll(0.01)
            cluster.kill_broker(victim)  # batches still in flight
    assert producer.flush(90) == 0, "records still unanswered after 90 s"
    assert not failed, failed[:5]
    _check(cluster, topic, acked)


def test_kafka_python_default_producer_through_leader_kill(make_cluster):
    from kafka import KafkaProducer

    topic = "idem-kafka-python"
    cluster, victim = _start(make_cluster, topic)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap.split(","), acks="all", linger_ms=2,
                             retry_backoff_ms=200, metadata_max_age_ms=1000, request_timeout_ms=10_000,
                             delivery_timeout_ms=90_000)
    assert producer.config["enable_idempotence"], "kafka-python 3 is idempotent by default"
    acked: dict[bytes, int] = {}
    failed: list[str] = []
    futures = []
    for i in range(RECORDS):
        value = b"record-%06d" % i
        f = producer.send(topic, value=value, partition=0)
        f.add_callback(lambda md, v=value: acked.__setitem__(v, md.offset))
        f.add_errback(lambda e: failed.append(repr(e)))
        futures.append(f)
        if i == RECORDS // 2:
            deadline = time.monotonic() + 30
            while len(acked) < RECORDS // 4 and time.monotonic() < deadline:
                time.sleep(0.01)
            cluster.kill_broker(victim)
    producer.flush(90)
    producer.close(10)
    assert not failed, failed[:5]
    _check(cluster, topic, acked)
