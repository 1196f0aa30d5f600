"""Helpers of the replication cluster tests: topic creation with
confluent-kafka's admin client, the partition state read from ZooKeeper
(leader, ISR), waits, and the per-batch (offset, epoch, CRC) list of one
replica read from its segment files."""

from __future__ import annotations

import json
import time
from pathlib import Path

from kavka.protocol.records.batch import iter_batches
from kavka.tools.cluster import LocalCluster

REPLICATION_CONFIG = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    # A killed broker is noticed once its session expires: keep that short.
    "zookeeper.session.timeout.ms": "3000",
    "unclean.leader.election.enable": "false",
    "controlled.shutdown.enable": "false",
}


def create_topic(cluster: LocalCluster, topic: str, *, partitions: int = 1, rf: int = 3, config=None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # Registered in ZooKeeper is not yet known to every broker's metadata
    # cache: wait until the brokers answer with all of them.
    deadline = time.monotonic() + 30
    while len(admin.list_topics(timeout=10).brokers) < len(cluster.brokers):
        assert time.monotonic() < deadline, "the brokers never all appeared in the metadata"
        time.sleep(0.1)
    futures = admin.create_topics([NewTopic(topic, partitions, rf, config=config or {})], request_timeout=30)
    futures[topic].result(timeout=30)


def partition_state(cluster: LocalCluster, topic: str, partition: int = 0) -> dict | None:
    """The /brokers/topics/<t>/partitions/<p>/state znode (leader, isr, leader_epoch)."""
    client = cluster._zk()
    try:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        if not client.exists(path):
            return None
        return json.loads(client.get(path)[0])
    finally:
        client.stop()
        client.close()


def wait_state(cluster: LocalCluster, topic: str, predicate, what: str, timeout: float = 40.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        st = partition_state(cluster, topic)
        if st is not None and predicate(st):
            return st
        if time.monotonic() > deadline:
            raise AssertionError(f"{topic}-0: {what} not reached in {timeout:.0f} s; state {st}")
        time.sleep(0.1)


def replica_batches(cluster: LocalCluster, broker_id: int, topic: str, partition: int = 0) -> list[tuple[int, int, int]]:
    """(base offset, leader epoch, CRC) of every batch in the replica's segment files."""
    directory = Path(cluster.brokers[broker_id].directory) / "logs" / f"{topic}-{partition}"
    out = []
    for segment in sorted(directory.glob("*.log")):
        data = segment.read_bytes()
        out.extend((h.base_offset, h.partition_leader_epoch, h.crc) for _, h in iter_batches(data))
    return out


def consume_all(cluster: LocalCluster, topic: str) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of partition 0, read from the start to the HW."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"{topic}-check",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 60
        while (not out or out[-1][0] < high - 1) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 1.0):
                assert msg.error() is None, msg.error()
                out.append((msg.offset(), msg.value()))
        return out
    finally:
        consumer.close()
