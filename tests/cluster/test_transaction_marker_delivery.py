"""Marker delivery never stalls a transaction, end to end (3 broker
processes, RF=3): a librdkafka transactional producer has its records
acknowledged by the ISR of a partition led by a broker that is not the
transaction's coordinator; that leader is killed (SIGKILL) before the
commit, so the coordinator's first WriteTxnMarkers attempts meet a refused
connection. The coordinator retries against whichever leader the metadata
names, the controller elects a survivor, and the marker lands there: the
transaction completes (the next one starts), a read_committed consumer
sees every committed record exactly once, and the aborted ones never."""

from __future__ import annotations

from .cluster_zk import controller_id, create_topic
from .fault_helpers import grep_logs
from .replication_helpers import REPLICATION_CONFIG, wait_state
from .test_transaction_failover import _committed_values, _coordinator

TOPIC = "txn-failover"  # the name _committed_values reads
TID = "failover-app"
CONFIG = {**REPLICATION_CONFIG, "transaction.state.log.replication.factor": "3",
          "transaction.state.log.min.isr": "2", "transaction.state.log.num.partitions": "3",
          "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3"}


def _read_uncommitted_count(cluster) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "delivery-raw", "enable.auto.commit": False,
                  "isolation.level": "read_uncommitted"})
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10, cached=False)[1]
    finally:
        c.close()


def test_commit_completes_after_the_data_leader_is_killed(make_cluster):
    from confluent_kafka import Producer

    cluster = make_cluster(brokers=3, config=CONFIG)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": TID, "linger.ms": 5,
                  "transaction.timeout.ms": 60_000, "topic.metadata.refresh.interval.ms": 1000})
    p.init_transactions(60)
    coordinator = _coordinator(cluster, 0)
    controller = controller_id(cluster)
    victim = next(b for b in sorted(cluster.brokers) if b not in (coordinator, controller))
    others = [b for b in sorted(cluster.brokers) if b != victim]
    create_topic(cluster, TOPIC, {0: [victim, *others]})
    wait_state(cluster, TOPIC, lambda s: s["leader"] == victim and len(s["isr"]) == 3, "leader and an ISR of 3")

    p.begin_transaction()
    p.produce(TOPIC, b"aborted", partition=0)
    p.abort_transaction(60)
    p.begin_transaction()
    for i in range(5):
        p.produce(TOPIC, b"committed-%d" % i, partition=0)
    p.flush(30)  # acknowledged by the ISR (acks=all)
    cluster.kill_broker(victim)
    p.commit_transaction(90)  # Prepare written; markers first meet a refused connection
    wait_state(cluster, TOPIC, lambda s: s["leader"] in others, "a surviving leader")
    # The transaction reached CompleteCommit: the next one may begin and commit.
    p.begin_transaction()
    p.produce(TOPIC, b"after", partition=0)
    p.commit_transaction(90)
    assert _committed_values(cluster) == [*(b"committed-%d" % i for i in range(5)), b"after"]
    assert _read_uncommitted_count(cluster) >= 7  # markers occupy offsets too
    # the first attempts did go to the dead leader, and were retried
    assert grep_logs(cluster, f"to broker {victim}: ").get(coordinator)
