"""End to end with real broker processes: a follower that was down while
DeleteRecords moved the leader's log start past its log end comes back,
gets OFFSET_OUT_OF_RANGE, asks the leader's log end and log start
(ListOffsets as a replica), empties its log and starts again at the batch
holding the leader's log start; from there its batches equal the leader's."""

from __future__ import annotations

import time

from .replication_helpers import REPLICATION_CONFIG, create_topic, replica_batches, wait_state

TOPIC = "trimmed"


def test_follower_behind_the_leaders_log_start_starts_over_there(make_cluster):
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    cluster = make_cluster(brokers=2, config=REPLICATION_CONFIG)
    create_topic(cluster, TOPIC, rf=2)
    st = wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 2, "an ISR of 2")
    leader = st["leader"]
    follower = next(b for b in st["isr"] if b != leader)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 1,
                         "batch.num.messages": 7, "enable.idempotence": False})

    def produce(n: int, start: int) -> None:
        for i in range(start, start + n):
            producer.produce(TOPIC, b"v%d" % i, partition=0)
            producer.poll(0)
        assert producer.flush(30) == 0

    produce(40, 0)
    wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 2, "an ISR of 2")
    cluster.stop_broker(follower)
    wait_state(cluster, TOPIC, lambda s: s["isr"] == [leader], "the ISR without the stopped follower")
    produce(260, 40)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.delete_records([TopicPartition(TOPIC, 0, 250)], request_timeout=30)
    assert next(iter(futures.values())).result(timeout=30).low_watermark == 250

    cluster.start_broker(follower)
    cluster.wait_registered({follower}, 60)
    wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 2, "the follower back in the ISR", 60)
    deadline = time.monotonic() + 30
    while True:
        mine, theirs = replica_batches(cluster, follower, TOPIC), replica_batches(cluster, leader, TOPIC)
        if (mine and theirs[-1] == mine[-1]) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert mine[0][0] <= 250, mine[:2]  # the batch holding the new log start, not offset 0
    assert mine == [b for b in theirs if b[0] >= mine[0][0]]
    assert [b for b in theirs if b[0] < mine[0][0]][-1][0] < mine[0][0] and len(mine) < len(theirs)
