"""Cross-rack bytes of a full read with and without fetch from follower
(KIP-392), in the same run.

Two 3-broker clusters of real processes (``LocalCluster``), broker i in
rack r<i>: one with ``replica.selector.class`` RackAwareReplicaSelector,
one without (consumers read the leaders). On each, a 6-partition topic
with replication factor 3 (every broker holds every partition) gets N
records of 200 B (confluent-kafka, acks=all); then, for each rack, a
confluent-kafka consumer with ``client.rack`` set to it reads the whole
topic, and the brokers' ``kafka_server_brokertopicmetrics_bytesout_total``
before and after give the record bytes each broker served. Bytes from a
broker outside the consumer's rack are cross-rack: on a real deployment
those cross hosts or zones. Printed per side: cross-rack and same-rack
bytes summed over the three readers, records/s of the reads (loopback:
no network cost, so this only shows the redirect costs little), and the
reduction of cross-rack bytes. Goal: >= 60% fewer cross-rack bytes with
3 racks.

Run: ``.venv/bin/python bench/rack_fetch.py [--records 200000]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from kavka.tools.cluster import LocalCluster  # noqa: E402

TOPIC = "flights-like"
PARTITIONS = 6
RACKS = ["r0", "r1", "r2"]
VALUE_BYTES = 200
START = time.monotonic()
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def say(msg: str) -> None:
    print(f"[{time.monotonic() - START:7.1f}s] {msg}", file=sys.stderr, flush=True)


def bytes_out(url: str) -> float:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "kafka_server_brokertopicmetrics_bytesout_total" and s.labels.get("topic") == TOPIC:
                total += s.value
    return total


def produce(cluster: LocalCluster, records: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 20,
                  "batch.size": 1_000_000})
    value = b"x" * VALUE_BYTES
    for i in range(records):
        while True:
            try:
                p.produce(TOPIC, value, key=b"%d" % i, partition=i % PARTITIONS)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120) != 0:
        raise SystemExit("produce did not finish in 120 s")


def read_all(cluster: LocalCluster, rack: str, ends: dict[int, int]) -> float:
    """Read every partition to its end with client.rack=rack; seconds taken."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"bench-{rack}", "client.rack": rack,
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(TOPIC, p, 0) for p in ends])
    positions = dict.fromkeys(ends, 0)
    t0 = time.monotonic()
    deadline = t0 + 300
    try:
        while any(positions[p] < ends[p] for p in ends):
            if time.monotonic() > deadline:
                raise SystemExit(f"read with client.rack={rack} stuck at {positions} of {ends}")
            for m in c.consume(10_000, 0.2):
                if m.error() is None:
                    positions[m.partition()] = m.offset() + 1
        return time.monotonic() - t0
    finally:
        c.close()


def run_side(rack_aware: bool, records: int) -> tuple[float, float, float]:
    """(cross-rack bytes, same-rack bytes, records/s of the reads)."""
    config = {"replica.lag.time.max.ms": "10000", "offsets.topic.num.partitions": "3",
              "num.partitions": "1"}
    if rack_aware:
        config["replica.selector.class"] = SELECTOR
    cluster = LocalCluster(3, config=config, racks=RACKS)
    try:
        cluster.start()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)[TOPIC].result(60)
        time.sleep(2)
        produce(cluster, records)
        probe = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "ends"})
        ends = {p: probe.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in range(PARTITIONS)}
        probe.close()
        time.sleep(2)  # the followers catch up and are in the ISR
        urls = {b: cluster.brokers[b].metrics_url for b in cluster.brokers}
        cross = same = 0.0
        seconds = 0.0
        for i, rack in enumerate(RACKS):
            before = {b: bytes_out(u) for b, u in urls.items()}
            seconds += read_all(cluster, rack, ends)
            served = {b: bytes_out(u) - before[b] for b, u in urls.items()}
            say(f"{'rack-aware' if rack_aware else 'leaders   '}: client.rack={rack} served per broker {served}")
            same += served[i]
            cross += sum(v for b, v in served.items() if b != i)
        return cross, same, 3 * sum(ends.values()) / seconds
    finally:
        cluster.stop()
        cluster.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000, help="records produced (default 200000)")
    args = ap.parse_args()
    results = {}
    for rack_aware in (False, True):
        say(f"side {'rack-aware' if rack_aware else 'leaders'}: {args.records} records")
        results[rack_aware] = run_side(rack_aware, args.records)
    print(f"{'side':<12} {'cross-rack MB':>14} {'same-rack MB':>13} {'records/s':>10}")
    for rack_aware, (cross, same, rate) in results.items():
        print(f"{'rack-aware' if rack_aware else 'leaders':<12} {cross / 1e6:>14.2f} {same / 1e6:>13.2f} "
              f"{rate:>10.0f}")
    base, aware = results[False][0], results[True][0]
    reduction = 1 - aware / base if base else 0.0
    print(f"cross-rack bytes: {reduction:.0%} fewer with RackAwareReplicaSelector and client.rack "
          f"(goal >= 60%); read rate rack-aware/leaders {results[True][2] / results[False][2]:.2f}x")


if __name__ == "__main__":
    main()
