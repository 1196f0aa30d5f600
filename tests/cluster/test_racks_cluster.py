"""End to end: racks and fetch from follower (KIP-392) on a real 3-broker
cluster (broker processes, a real ZooKeeper) with a real client
(confluent-kafka / librdkafka), broker i in rack r<i> and
``replica.selector.class`` RackAwareReplicaSelector.

- each broker's rack is in its znode (/brokers/ids/<id> "rack", as Kafka
  writes it) and in DescribeCluster;
- a topic created without an assignment spreads each partition's replicas
  over the racks; ``kavka reassign-partitions --generate`` proposes a
  rack-spread plan;
- a consumer with client.rack=r2 reads every record from broker 2 alone
  (kafka_server_brokertopicmetrics_bytesout_total per broker), whichever
  broker leads;
- broker 2 killed (kill -9) while the consumer reads: it goes back to the
  leaders and reads the rest, nothing lost, nothing twice;
- broker 2 stalled (SIGSTOP) until it is out of every ISR, then resumed:
  the consumer still reads everything exactly once;
- a mix of brokers with and without a rack: creation and --generate
  refused as Kafka refuses them, unless given an assignment or
  --disable-rack-aware."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.metrics.scrape import scrape

from .cluster_helpers import ZkView, admin, create_topic, leaders, produce, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TOPIC = "near"
PARTITIONS = 6
RACKS = ["r0", "r1", "r2"]
CONFIG = {
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "zookeeper.session.timeout.ms": "6000",
    "offsets.topic.num.partitions": "3",
    "controlled.shutdown.enable": "false",
}
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"


def bytes_out(cluster, broker_id: int) -> float:
    return scrape(cluster.brokers[broker_id].metrics_url).total(BYTES_OUT, topic=TOPIC)


def in_sync(cluster) -> bool:
    with ZkView(cluster) as zk:
        return all(len(zk.partition_state(TOPIC, p).isr) == 3 for p in range(PARTITIONS))


class Reader:
    """A confluent-kafka consumer in rack r2 assigned every partition from
    offset 0; ``seen`` lists the offsets each (partition, value) was read
    at: a value at two offsets is in the log twice, one offset twice is
    the consumer reading again."""

    def __init__(self, cluster) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer({
            "bootstrap.servers": cluster.bootstrap, "group.id": "near-readers", "client.rack": "r2",
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 2000, "fetch.wait.max.ms": 200,
        })
        self.consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        self.seen: dict[tuple[int, bytes], list[int]] = {}

    def read(self, expected: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.seen) < expected:
            assert time.monotonic() < deadline, f"read {len(self.seen)} of {expected} distinct records"
            m = self.consumer.poll(0.2)
            if m is None or m.error() is not None:
                continue
            self.seen.setdefault((m.partition(), m.value()), []).append(m.offset())

    def repeats(self) -> list[tuple[int, bytes, list[int]]]:
        """(partition, value, offsets) of every value read more than once."""
        return [(p, v[:16], offsets) for (p, v), offsets in self.seen.items() if len(offsets) > 1]

    def close(self) -> None:
        self.consumer.close()


def values(phase: str, n: int) -> dict[int, list[bytes]]:
    return {p: [f"{phase}-{p}-{i:05d}".encode() + b"x" * 80 for i in range(n)] for p in range(PARTITIONS)}


def test_a_consumer_reads_from_the_replica_in_its_rack_and_falls_back_to_the_leaders(make_cluster, tmp_path):
    cluster = make_cluster(brokers=3, config=CONFIG, racks=RACKS)
    with ZkView(cluster) as zk:
        for b in range(3):
            data, _ = zk.client.get(f"/brokers/ids/{b}")
            assert json.loads(data)["rack"] == f"r{b}"
    client = admin(cluster)  # alive until the future settles
    described = client.describe_cluster(request_timeout=20).result(20)
    assert {n.id: n.rack for n in described.nodes} == {0: "r0", 1: "r1", 2: "r2"}

    create_topic(cluster, TOPIC, partitions=PARTITIONS, replication_factor=3)
    create_topic(cluster, "spread", partitions=6, replication_factor=2)
    with ZkView(cluster) as zk:
        data, _ = zk.client.get("/brokers/topics/spread")
        placed = json.loads(data)["partitions"]
    assert all(len({RACKS[b] for b in r}) == 2 for r in placed.values()), placed
    assert sorted(r[0] for r in placed.values()) == [0, 0, 1, 1, 2, 2]  # leaders spread evenly
    moving = tmp_path / "topics.json"
    moving.write_text('{"topics":[{"topic":"spread"}],"version":1}')
    r = subprocess.run([sys.executable, "-m", "kavka", "reassign-partitions", "--bootstrap-server", cluster.bootstrap,
                        "--generate", "--topics-to-move-json-file", str(moving), "--broker-list", "0,1,2"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    proposed = json.loads(r.stdout.strip().splitlines()[-1])["partitions"]
    assert len(proposed) == 6 and all(len({RACKS[b] for b in p["replicas"]}) == 2 for p in proposed)

    wait_until(lambda: in_sync(cluster), 60, "every replica of the topic in sync")
    produce(cluster, TOPIC, values("one", 200), idempotent=True)
    assert set(leaders(cluster, TOPIC).values()) == {0, 1, 2}  # broker 2 leads some, follows the others
    before = {b: bytes_out(cluster, b) for b in range(3)}
    reader = Reader(cluster)
    try:
        reader.read(PARTITIONS * 200, 60)
        after = {b: bytes_out(cluster, b) for b in range(3)}
        served = {b: after[b] - before[b] for b in range(3)}
        print(f"bytes served to consumers per broker while the r2 consumer read: {served}")
        assert served[0] == 0 and served[1] == 0, served
        assert served[2] >= PARTITIONS * 200 * 88, served

        # broker 2 dies while the consumer keeps reading: back to the leaders
        cluster.kill_broker(2)
        wait_until(lambda: set(leaders(cluster, TOPIC).values()) <= {0, 1}, 60, "leaders on brokers 0 and 1")
        produce(cluster, TOPIC, values("two", 100), idempotent=True)
        reader.read(PARTITIONS * 300, 90)
        time.sleep(1)  # anything read twice would arrive now
        reader.consumer.poll(1)
        repeats = reader.repeats()
        assert not repeats, f"{len(repeats)} values read twice, first: {repeats[:10]}"
        expected = {(p, v) for phase, n in (("one", 200), ("two", 100)) for p, vs in values(phase, n).items()
                    for v in vs}
        assert set(reader.seen) == expected
        served = {b: bytes_out(cluster, b) - after[b] for b in (0, 1)}
        print(f"bytes served per surviving broker after broker 2 died: {served}")
        assert served[0] + served[1] >= PARTITIONS * 100 * 88
    finally:
        reader.close()


def test_a_mix_of_racked_and_unracked_brokers_is_refused_as_kafka_refuses_it(make_cluster, tmp_path):
    from confluent_kafka.admin import NewTopic

    cluster = make_cluster(brokers=3, config=CONFIG, racks=["r0", None, "r2"])
    with ZkView(cluster) as zk:
        data, _ = zk.client.get("/brokers/ids/1")
        assert "rack" not in json.loads(data)  # Kafka writes the field only when set
    client = admin(cluster)
    future = client.create_topics([NewTopic("mixed", 3, 2)], operation_timeout=20, request_timeout=20)["mixed"]
    with pytest.raises(Exception, match="Not all brokers have rack information") as refused:
        future.result(30)
    print(f"CreateTopics on a mixed cluster: {refused.value}")
    create_topic(cluster, "mixed", assignment=[[0, 1], [1, 2], [2, 0]])  # an explicit assignment is taken

    moving = tmp_path / "topics.json"
    moving.write_text('{"topics":[{"topic":"mixed"}],"version":1}')
    for connect in (["--bootstrap-server", cluster.bootstrap], ["--zookeeper", cluster.zk_connect]):
        generate = [sys.executable, "-m", "kavka", "reassign-partitions", *connect, "--generate",
                    "--topics-to-move-json-file", str(moving), "--broker-list", "0,1,2"]
        r = subprocess.run(generate, capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and "--disable-rack-aware" in r.stderr and "[1]" in r.stderr, r.stderr
        r = subprocess.run([*generate, "--disable-rack-aware"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert len(json.loads(r.stdout.strip().splitlines()[-1])["partitions"]) == 3


def test_a_consumer_whose_follower_stalls_out_of_the_isr_loses_and_repeats_nothing(make_cluster):
    """Broker 2 serves the r2 consumer, then stands still (SIGSTOP) until
    the leaders drop it from their ISRs and its ZooKeeper session expires;
    records produced meanwhile, it resumes: the consumer ends with every
    record exactly once, whichever replica served what."""
    cluster = make_cluster(brokers=3, config=CONFIG, racks=RACKS)
    create_topic(cluster, TOPIC, partitions=PARTITIONS, replication_factor=3)
    wait_until(lambda: in_sync(cluster), 60, "every replica of the topic in sync")
    produce(cluster, TOPIC, values("one", 100), idempotent=True)
    reader = Reader(cluster)
    try:
        reader.read(PARTITIONS * 100, 60)
        before = {b: bytes_out(cluster, b) for b in range(3)}
        cluster.pause_broker(2)
        try:
            def out_of_every_isr() -> bool:
                with ZkView(cluster) as zk:
                    return all(2 not in zk.partition_state(TOPIC, p).isr for p in range(PARTITIONS))
            wait_until(out_of_every_isr, 60, "broker 2 out of every ISR")
            produce(cluster, TOPIC, values("two", 100), idempotent=True)
        finally:
            cluster.resume_broker(2)
        reader.read(PARTITIONS * 200, 90)
        produce(cluster, TOPIC, values("three", 50), idempotent=True)
        reader.read(PARTITIONS * 250, 90)
        reader.consumer.poll(1)
        repeats = reader.repeats()
        assert not repeats, f"{len(repeats)} values read twice, first: {repeats[:10]}"
        expected = {(p, v) for phase, n in (("one", 100), ("two", 100), ("three", 50))
                    for p, vs in values(phase, n).items() for v in vs}
        assert set(reader.seen) == expected
        print("bytes served per broker after broker 2 stalled:",
              {b: bytes_out(cluster, b) - before[b] for b in range(3)})
    finally:
        reader.close()
