"""The data source's reader with ``kafka.client.rack`` (KIP-392) on a real
3-broker cluster, broker i in rack r<i>, RackAwareReplicaSelector: each
range is fetched from the replica in the reader's rack (the leader sends
it there), a PySpark batch read with the option is served by that
broker alone (bytes out per broker from the brokers' metrics), without
the option by the leaders, and a reader whose replica dies goes back to
the leader from the same position, nothing lost or read twice."""

from __future__ import annotations

import json
import time

import pytest
from kazoo.client import KazooClient

from kavka.spark.options import KavkaOptionError, parse_source_options
from kavka.spark.range_reader import RangeReader
from kavka.spark.ranges import OffsetRange
from tests.metrics.scrape import scrape
from tests.spark.conftest import create_topic, produce

pytestmark = pytest.mark.spark

TOPIC = "racked"
PARTITIONS = 3
RECORDS = 600
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"


@pytest.fixture(scope="module")
def racked(make_module_cluster):
    cluster = make_module_cluster(3, {
        "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
        "replica.lag.time.max.ms": "3000", "zookeeper.session.timeout.ms": "6000",
        "controlled.shutdown.enable": "false"}, racks=["r0", "r1", "r2"])
    create_topic(cluster, TOPIC, partitions=PARTITIONS, replication_factor=3)
    produce(cluster, TOPIC, [(b"k%d" % i, b"v%05d" % i + b"x" * 100) for i in range(RECORDS)])
    return cluster


def options(cluster, **extra):
    return parse_source_options({"kafka.bootstrap.servers": cluster.bootstrap,
                                 "assign": json.dumps({TOPIC: list(range(PARTITIONS))}), **extra}, streaming=False)


def ends(cluster) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ends"})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in range(PARTITIONS)}
    finally:
        c.close()


def bytes_out(cluster) -> dict[int, float]:
    return {b: scrape(cluster.brokers[b].metrics_url).total(BYTES_OUT, topic=TOPIC) for b in cluster.brokers
            if cluster.brokers[b].running()}


def wait_in_sync(cluster):
    zk = KazooClient(hosts=cluster.zk_connect)
    zk.start(15)
    try:
        deadline = time.monotonic() + 60
        while True:
            isrs = [json.loads(zk.get(f"/brokers/topics/{TOPIC}/partitions/{p}/state")[0])["isr"]
                    for p in range(PARTITIONS)]
            if all(len(i) == 3 for i in isrs):
                return
            assert time.monotonic() < deadline, f"ISRs {isrs}"
            time.sleep(0.2)
    finally:
        zk.stop()
        zk.close()


def test_the_option_is_checked():
    with pytest.raises(KavkaOptionError, match="kafka.client.rack"):
        parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "kafka.client.rack": "r\n1"},
                             streaming=False)
    assert parse_source_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "kafka.client.rack": "r2"},
                                streaming=False).client_rack == "r2"


def test_each_range_is_read_from_the_replica_in_the_readers_rack(racked):
    wait_in_sync(racked)
    end = ends(racked)
    for rack, expected in (("r2", {2}), ("r0", {0}), ("", None)):
        opts = options(racked, **({"kafka.client.rack": rack} if rack else {}))
        for p in range(PARTITIONS):
            reader = RangeReader(opts, OffsetRange(TOPIC, p, 0, end[p]))
            rows = sum(b.num_rows for b in reader.batches())
            assert rows == end[p]
            if expected is not None:
                assert set(reader.fetched_from) == expected, (rack, p, reader.fetched_from)
            else:
                assert len(reader.fetched_from) == 1  # the leader


def test_a_spark_read_with_client_rack_is_served_by_that_rack(spark, racked):
    wait_in_sync(racked)
    before = bytes_out(racked)
    df = (spark.read.format("kavka").option("kafka.bootstrap.servers", racked.bootstrap)
          .option("subscribe", TOPIC).option("kafka.client.rack", "r1").load())
    values = sorted(bytes(r.value)[:6] for r in df.select("value").collect())
    assert values == sorted(b"v%05d" % i for i in range(RECORDS))
    after = bytes_out(racked)
    served = {b: after[b] - before[b] for b in after}
    print(f"bytes served per broker to a Spark read with kafka.client.rack=r1: {served}")
    assert served[0] == 0 and served[2] == 0 and served[1] >= RECORDS * 100, served


def test_a_reader_whose_replica_dies_goes_back_to_the_leader(racked):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": racked.bootstrap}).list_topics(TOPIC, timeout=10)
    leader_of = {p.id: p.leader for p in md.topics[TOPIC].partitions.values()}
    p = next(p for p, leader in leader_of.items() if leader != 2)
    # many small batches, so that the range takes many fetches
    producer = Producer({"bootstrap.servers": racked.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(60):
        producer.produce(TOPIC, b"s%03d" % i + b"y" * 1000, partition=p)
        producer.flush(30)
    wait_in_sync(racked)
    end = ends(racked)
    opts = options(racked, **{"kafka.client.rack": "r2", "kafka.max.partition.fetch.bytes": "2048"})
    reader = RangeReader(opts, OffsetRange(TOPIC, p, end[p] - 60, end[p]))
    batches = reader.batches()
    first = next(batches)
    assert set(reader.fetched_from) == {2}
    racked.kill_broker(2)
    offsets = first.column("offset").to_pylist()
    for b in batches:
        offsets.extend(b.column("offset").to_pylist())
    assert offsets == list(range(end[p] - 60, end[p]))  # nothing lost, nothing twice
    assert reader.fetched_from.get(leader_of[p], 0) > 0, reader.fetched_from
