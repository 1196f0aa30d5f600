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


def test_retry_answered_with_original_offsets_by_the_new_leader(make_cluster):
    """Deterministic form of the above with hand-made requests: a batch
    acknowledged by the old leader and retried to the new one after a
    SIGKILL gets its original offsets; a gap and an old epoch are refused;
    after the old leader restarts and leads (or follows) a second change,
    retries are still recognised; the log holds every record once."""
    from kavka.protocol.messages import InitProducerIdRequest, ProduceRequest
    from kavka.protocol.records.builder import build_batch
    from kavka.protocol.records.record import SimpleRecord

    from .cluster_helpers import RawConnection

    topic = "idem-raw"
    cluster, victim = _start(make_cluster, topic)
    with RawConnection(cluster.brokers[victim].address) as conn:
        init = conn.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4)
    assert init.error_code == 0 and init.producer_epoch == 0
    pid = init.producer_id

    def produce(address: str, seq: int, count: int = 3, epoch: int = 0):
        batch = build_batch([SimpleRecord(b"k", b"v%d" % (seq + i), 1000 + i) for i in range(count)],
                            producer_id=pid, producer_epoch=epoch, base_sequence=seq)
        req = ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[ProduceRequest.TopicData(
            name=topic, partition_data=[ProduceRequest.TopicData.PartitionData(index=0, records=batch)])])
        with RawConnection(address) as conn:
            p = conn.request(req, 9).responses[0].partition_responses[0]
        return p.error_code, p.base_offset

    old = cluster.brokers[victim].address
    assert produce(old, 0) == (0, 0)
    assert produce(old, 3) == (0, 3)
    assert produce(old, 0) == (0, 0)  # a retry on the same leader
    cluster.kill_broker(victim)
    state = wait_state(cluster, topic, lambda s: s["leader"] not in (victim, -1), "a new leader")
    new = cluster.brokers[state["leader"]].address
    deadline = time.monotonic() + 30
    while (answer := produce(new, 3))[0] != 0 and time.monotonic() < deadline:
        time.sleep(0.2)  # NOT_LEADER until the LeaderAndIsr arrives
    assert answer == (0, 3)
    assert produce(new, 6) == (0, 6)
    assert produce(new, 10)[0] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(new, 0, epoch=1) == (0, 9)  # a new epoch restarts at 0
    assert produce(new, 9, epoch=0)[0] == 47  # INVALID_PRODUCER_EPOCH: fenced
    # The killed broker restarts (its state from snapshots and its log),
    # catches up, and a second leader change follows: still deduplicated.
    cluster.start_broker(victim)
    cluster.wait_registered({victim}, 60)
    wait_state(cluster, topic, lambda s: len(s["isr"]) == 3, "the restarted broker back in the ISR", 60)
    cluster.kill_broker(state["leader"])
    third = wait_state(cluster, topic, lambda s: s["leader"] not in (state["leader"], -1), "a third leader")
    deadline = time.monotonic() + 30
    while (answer := produce(cluster.brokers[third["leader"]].address, 0, epoch=1))[0] != 0 \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert answer == (0, 9)
    values = [v for _, v in consume_all(cluster, topic)]
    assert values == [b"v%d" % i for i in range(9)] + [b"v0", b"v1", b"v2"]
