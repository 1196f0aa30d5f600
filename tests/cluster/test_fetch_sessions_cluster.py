"""End to end with real broker processes: incremental fetch sessions
(KIP-227).

Broker 0 keeps one session slot (``max.incremental.fetch.session.cache.slots=1``).
A real consumer with sessions (kafka-python, Kafka's FetchSessionHandler
ported) opens it; a follower that starts fetching from broker 0 evicts it
(a follower's session outranks a consumer's), the consumer's next
incremental fetch is answered FETCH_SESSION_ID_NOT_FOUND and it carries on
with a full fetch, reading every record. The follower replicates through
its session (the leader's metrics show it and the partitions it caches);
after the leader restarts, the follower opens a new session with it and
acks=all writes are replicated again."""

from __future__ import annotations

import logging
import time

import pytest

from tests.metrics.scrape import scrape

from .cluster_helpers import create_topic, wait_until
from .replication_helpers import partition_state, replica_batches, wait_state

pytestmark = [pytest.mark.cluster]

CONFIG = {"replica.fetch.wait.max.ms": "100", "zookeeper.session.timeout.ms": "6000",
          "controlled.shutdown.enable": "false", "auto.leader.rebalance.enable": "false"}
SESSIONS = "kafka_server_fetchsessioncache_numincrementalfetchsessions"
CACHED = "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached"
EVICTIONS = "kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total"


def metric(cluster, broker: int, name: str) -> float:
    return scrape(cluster.brokers[broker].metrics_url).value(name)


def produce(cluster, topic: str, count: int, start: int = 0) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "message.timeout.ms": 30_000})
    failed: list[str] = []
    for i in range(start, start + count):
        p.produce(topic, b"v%05d" % i, partition=0,
                  on_delivery=lambda err, msg: failed.append(str(err)) if err is not None else None)
        p.poll(0)
    assert p.flush(40) == 0 and not failed, failed[:3]


def test_sessions_between_real_brokers_and_a_real_consumer(make_cluster, caplog):
    from kafka import KafkaConsumer, TopicPartition

    cluster = make_cluster(brokers=2, config=CONFIG,
                           broker_config={0: {"max.incremental.fetch.session.cache.slots": "1"}})
    create_topic(cluster, "solo", assignment=[[0]])
    produce(cluster, "solo", 50)
    caplog.set_level(logging.INFO, logger="kafka.consumer.fetcher")
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, auto_offset_reset="earliest",
                             fetch_max_wait_ms=100, enable_auto_commit=False)
    read: list[bytes] = []

    def poll_until(n: int) -> bool:
        for records in consumer.poll(timeout_ms=200).values():
            read.extend(r.value for r in records)
        return len(read) >= n

    try:
        consumer.assign([TopicPartition("solo", 0)])
        wait_until(lambda: poll_until(50), 30, "the consumer to read 50 records")
        wait_until(lambda: poll_until(50) and metric(cluster, 0, SESSIONS) == 1, 30,
                   "the consumer's fetch session on broker 0")

        # broker 1 starts following a partition of broker 0: its session evicts the consumer's
        create_topic(cluster, "pair", assignment=[[0, 1]])
        wait_state(cluster, "pair", lambda s: sorted(s["isr"]) == [0, 1], "an ISR of 2")
        wait_until(lambda: poll_until(50) and metric(cluster, 0, EVICTIONS) == 1, 30, "an eviction on broker 0")
        assert metric(cluster, 0, SESSIONS) == 1 and metric(cluster, 0, CACHED) == 1  # the follower's: 1 partition

        produce(cluster, "solo", 50, start=50)
        wait_until(lambda: poll_until(100), 30, "the consumer to read on after losing its session")
        assert read == [b"v%05d" % i for i in range(100)]
        assert "FetchSessionIdNotFound" in caplog.text  # the consumer was told, and started over
    finally:
        consumer.close()

    produce(cluster, "pair", 200)
    wait_until(lambda: replica_batches(cluster, 1, "pair") == replica_batches(cluster, 0, "pair"), 30,
               "the follower to hold the leader's batches")
    assert len(replica_batches(cluster, 0, "pair")) > 0

    # The leader restarts: its sessions are gone; the follower (now leading) and
    # then the restarted broker (now following) replicate through new sessions.
    cluster.restart_broker(0)
    wait_state(cluster, "pair", lambda s: sorted(s["isr"]) == [0, 1], "broker 0 back in the ISR", 60)
    leader = partition_state(cluster, "pair")["leader"]
    follower = 1 - leader
    wait_until(lambda: metric(cluster, leader, SESSIONS) >= 1 and metric(cluster, leader, CACHED) >= 1, 30,
               f"the follower's session on broker {leader}")
    produce(cluster, "pair", 100, start=200)
    deadline = time.monotonic() + 30
    while replica_batches(cluster, follower, "pair") != replica_batches(cluster, leader, "pair"):
        assert time.monotonic() < deadline, "the follower never caught up after the restart"
        time.sleep(0.2)
