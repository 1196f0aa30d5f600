"""Transaction coordinator failover, end to end (3 broker processes, RF=3,
``transaction.state.log.min.isr`` 2): a librdkafka transactional producer
has a transaction open when its coordinator's broker is killed (SIGKILL).
The new leader of the id's ``__transaction_state`` partition loads the id
(state Ongoing, its partitions) and the producer's commit goes through it:
the records become visible to read_committed consumers exactly once, and
later transactions keep working."""

from __future__ import annotations

import time

from kavka.protocol.messages import FindCoordinatorRequest

from .cluster_zk import request
from .replication_helpers import REPLICATION_CONFIG, create_topic, wait_state

TOPIC = "txn-failover"
TID = "failover-app"
CONFIG = {**REPLICATION_CONFIG, "transaction.state.log.replication.factor": "3",
          "transaction.state.log.min.isr": "2", "transaction.state.log.num.partitions": "3",
          "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3"}


def _coordinator(cluster, alive: int) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = request(cluster, alive, FindCoordinatorRequest(key=TID, key_type=1), version=1)
        if answer.error_code == 0:
            return answer.node_id
        time.sleep(0.2)
    raise AssertionError("no transaction coordinator found")


def _committed_values(cluster) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "failover-read", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    got: list[bytes] = []
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        end = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10, cached=False)[1]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None:
                if c.position([TopicPartition(TOPIC, 0)])[0].offset >= end:
                    break
                continue
            got.append(m.value())
    finally:
        c.close()
    return got


def test_commit_survives_a_kill_of_the_coordinator(make_cluster):
    from confluent_kafka import Producer

    cluster = make_cluster(brokers=3, config=CONFIG)
    create_topic(cluster, TOPIC, config={"min.insync.replicas": "2"})
    wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 3, "an ISR of 3")
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": TID, "linger.ms": 5,
                  "transaction.timeout.ms": 60_000, "topic.metadata.refresh.interval.ms": 1000})
    p.init_transactions(60)
    p.begin_transaction()
    p.produce(TOPIC, b"first", partition=0)
    p.commit_transaction(60)
    victim = _coordinator(cluster, 0)
    p.begin_transaction()
    for i in range(5):
        p.produce(TOPIC, b"during-%d" % i, partition=0)
    p.flush(30)
    cluster.kill_broker(victim)
    p.commit_transaction(90)
    survivor = next(b for b in cluster.brokers if b != victim)
    assert _coordinator(cluster, survivor) != victim
    p.begin_transaction()
    p.produce(TOPIC, b"after", partition=0)
    p.commit_transaction(60)
    assert _committed_values(cluster) == [b"first", *(b"during-%d" % i for i in range(5)), b"after"]
