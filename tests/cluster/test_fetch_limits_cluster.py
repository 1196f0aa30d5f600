"""``fetch.max.bytes`` on real brokers: a Fetch asking 50 MB gets at most
``fetch.max.bytes`` (or its first batch whole, KIP-74), followers
replicate through the same cap, and a real consumer (librdkafka) still
reads everything."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kavka.protocol.messages import FetchRequest
from kavka.protocol.records.batch import iter_batches

from .cluster_helpers import RawConnection, ZkView, consume, create_topic, leaders, wait_until

pytestmark = pytest.mark.cluster

FETCH_MAX = 4096


def test_fetch_max_bytes_caps_every_answer_and_clients_and_followers_keep_up(make_cluster):
    cluster = make_cluster(brokers=2, config={"fetch.max.bytes": str(FETCH_MAX)})
    create_topic(cluster, "capped", partitions=2, replication_factor=2)
    wait_until(lambda: set(leaders(cluster, "capped")) == {0, 1}, 20, "leaders for 'capped'")
    values = {p: [b"%d-%05d-" % (p, i) + b"x" * 300 for i in range(300)] for p in (0, 1)}
    # batches of ~2 KB, so that an answer can hold several; acks=all: the
    # followers fetched them all through the cap
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5,
                         "batch.size": 2000, "compression.type": "none"})
    for p, vs in values.items():
        for v in vs:
            producer.produce("capped", v, partition=p)
    assert producer.flush(30) == 0

    lead = leaders(cluster, "capped")
    Q = FetchRequest
    for partition, broker in lead.items():
        address = cluster.brokers[broker].address
        with RawConnection(address) as conn:
            offset, answers, several = 0, 0, 0
            while offset < 300:
                req = Q(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                        topics=[Q.Topics(topic="capped", partitions=[Q.Topics.Partitions(
                            partition=partition, fetch_offset=offset, partition_max_bytes=50 << 20)])])
                records = conn.request(req, 11).responses[0].partitions[0].records
                batches = [h for _, h in iter_batches(records)]
                assert batches, f"no progress at offset {offset}"
                assert len(records) <= FETCH_MAX or len(batches) == 1, (offset, len(records), len(batches))
                several += len(batches) > 1
                offset = batches[-1].last_offset + 1
                answers += 1
            assert answers > 1 and several  # ~100 KB could not come in one answer

    got = consume(cluster, "capped", [0, 1], 600, timeout=60)
    assert got == values
    with ZkView(cluster) as zk:
        assert all(len(zk.partition_state("capped", p).isr) == 2 for p in (0, 1))
