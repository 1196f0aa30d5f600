"""End to end with real broker processes, after Kafka's replication
acceptance test: rounds of (bounce a follower, bounce the leader) while
acks=all writes go on with the other two (RF=3, min.insync.replicas=2).
Every acknowledged record stays at its offset, and at the end every replica
holds the same batches — each bounce made a new leader epoch that the
returning broker truncated against."""

from __future__ import annotations

import time

from .replication_helpers import (
    REPLICATION_CONFIG,
    consume_all,
    create_topic,
    partition_state,
    replica_batches,
    wait_state,
)

TOPIC = "bounce"
ROUNDS = 3
PER_PHASE = 1500


def test_bounced_followers_and_leaders_keep_every_acknowledged_record(make_cluster):
    from confluent_kafka import Producer

    cluster = make_cluster(brokers=3, config=REPLICATION_CONFIG)
    create_topic(cluster, TOPIC, config={"min.insync.replicas": "2"})
    wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 3, "an ISR of 3")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 2,
                         "batch.num.messages": 100, "message.timeout.ms": 30_000, "enable.idempotence": False,
                         "topic.metadata.refresh.interval.ms": 1000})
    acked: dict[bytes, int] = {}
    failed: list[str] = []
    sent = [0]

    def delivered(err, msg) -> None:
        if err is None:
            acked[msg.value()] = msg.offset()
        else:
            failed.append(str(err))

    def produce() -> None:
        for _ in range(PER_PHASE):
            producer.produce(TOPIC, b"r%07d" % sent[0], partition=0, on_delivery=delivered)
            sent[0] += 1
            producer.poll(0)
        assert producer.flush(40) == 0

    def bounce(broker: int) -> None:
        cluster.stop_broker(broker)
        wait_state(cluster, TOPIC, lambda s: broker not in s["isr"] and s["leader"] != broker, f"{broker} out")
        produce()  # with the other two
        cluster.start_broker(broker)
        cluster.wait_registered({broker}, 60)
        wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 3, f"broker {broker} back in the ISR", 60)

    epochs = [partition_state(cluster, TOPIC)["leader_epoch"]]
    for _ in range(ROUNDS):
        produce()
        st = partition_state(cluster, TOPIC)
        bounce(next(b for b in st["isr"] if b != st["leader"]))
        bounce(partition_state(cluster, TOPIC)["leader"])
        epochs.append(partition_state(cluster, TOPIC)["leader_epoch"])
    assert not failed, failed[:5]
    assert len(acked) == sent[0] == ROUNDS * 3 * PER_PHASE
    assert epochs == sorted(set(epochs))  # every round moved the leader epoch on

    consumed = consume_all(cluster, TOPIC)
    at = dict(consumed)
    assert [o for o, _ in consumed] == sorted(at)
    assert all(at.get(o) == v for v, o in acked.items())
    deadline = time.monotonic() + 30
    while True:
        logs = [replica_batches(cluster, b, TOPIC) for b in sorted(cluster.brokers)]
        if logs[0] == logs[1] == logs[2] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert logs[0] == logs[1] == logs[2], [(len(x), x[-1:]) for x in logs]
