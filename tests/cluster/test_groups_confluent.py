"""Consumer groups with confluent-kafka (librdkafka) against a 3-broker
Kavka cluster: three consumers in one group on a 6-partition topic get
disjoint assignments covering every partition; when one closes, the other
two take its partitions over; with a synchronous commit after each record,
every record is consumed exactly once (nothing twice, nothing skipped).
Then the committed offsets survive killing the coordinator's broker
(``__consumer_offsets`` has RF=3).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from kavka.group.state import partition_for

from .cluster_helpers import create_topic, leaders, produce, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TOPIC = "groups-confluent"
GROUP = "g-confluent"
PARTITIONS = 6
PER_PARTITION = 40
CONFIG = {"offsets.topic.num.partitions": "6", "offsets.topic.replication.factor": "3",
          "group.initial.rebalance.delay.ms": "200", "group.min.session.timeout.ms": "1000"}


def _consumer(cluster, name: str) -> Consumer:
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP, "client.id": name,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  "partition.assignment.strategy": "range"})
    c.subscribe([TOPIC])
    return c


def _assigned(consumers: dict[str, Consumer], seen: dict, timeout: float = 60.0) -> dict[str, set[int]]:
    """Poll every consumer until each has a non-empty assignment and the
    assignments are disjoint and cover every partition."""
    def probe():
        for name, c in consumers.items():
            _drain(name, c, seen, 0.1)
        parts = {n: {tp.partition for tp in c.assignment()} for n, c in consumers.items()}
        union = set().union(*parts.values())
        if all(parts.values()) and union == set(range(PARTITIONS)) and sum(map(len, parts.values())) == PARTITIONS:
            return parts
        return None
    return wait_until(probe, timeout, "a complete, disjoint assignment")


def _drain(name: str, c: Consumer, seen: dict, timeout: float) -> None:
    msg = c.poll(timeout)
    while msg is not None:
        if msg.error() is None:
            key = (msg.partition(), msg.offset())
            seen.setdefault(key, []).append(name)
            c.commit(message=msg, asynchronous=False)
        msg = c.poll(0)


def test_three_consumers_rebalance_and_failover(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    create_topic(cluster, TOPIC, partitions=PARTITIONS, replication_factor=3)
    produce(cluster, TOPIC, {p: [f"{p}-{i}".encode() for i in range(PER_PARTITION)] for p in range(PARTITIONS)})
    seen: dict[tuple[int, int], list[str]] = {}
    consumers = {f"c{i}": _consumer(cluster, f"c{i}") for i in range(3)}
    try:
        parts = _assigned(consumers, seen)
        assert sorted(p for ps in parts.values() for p in ps) == list(range(PARTITIONS))
        consumers.pop("c0").close()  # LeaveGroup: the other two take its partitions
        parts = _assigned(consumers, seen)
        assert set().union(*parts.values()) == set(range(PARTITIONS))
        total = PARTITIONS * PER_PARTITION
        deadline = time.monotonic() + 60
        while len(seen) < total and time.monotonic() < deadline:
            for name, c in consumers.items():
                _drain(name, c, seen, 0.1)
        assert len(seen) == total, f"consumed {len(seen)} of {total}"
        twice = {k: v for k, v in seen.items() if len(v) > 1}
        assert not twice, f"consumed twice: {sorted(twice)[:10]}"
        committed = consumers["c1"].committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == {p: PER_PARTITION for p in range(PARTITIONS)}
    finally:
        for c in consumers.values():
            c.close()
    # Kill the coordinator's broker: the offsets come back from another replica.
    coordinator = _coordinator_broker(cluster)
    cluster.kill_broker(coordinator)
    wait_until(lambda: coordinator not in leaders(cluster, "__consumer_offsets").values() or None, 60,
               "a new leader for __consumer_offsets")
    late = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        def probe():
            got = late.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=5)
            offsets = {tp.partition: tp.offset for tp in got}
            return offsets if all(tp.error is None for tp in got) else None
        assert wait_until(probe, 60, "committed offsets after failover") == {p: PER_PARTITION
                                                                           for p in range(PARTITIONS)}
    finally:
        late.close()


def _coordinator_broker(cluster) -> int:
    return leaders(cluster, "__consumer_offsets")[partition_for(GROUP, 6)]


def test_live_group_survives_coordinator_kill(make_cluster):
    """Two members keep consuming while the coordinator's broker is killed:
    the new coordinator loads the group (Stable, same generation) from its
    replica of ``__consumer_offsets``; every record is consumed and its
    offset committed. A commit that fails during the move may repeat a
    record (at-least-once), never skip one."""
    from confluent_kafka import KafkaException

    cluster = make_cluster(brokers=3, config=CONFIG)
    topic = "groups-confluent-live"
    create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=3)
    produce(cluster, topic, {p: [f"{p}-{i}".encode() for i in range(PER_PARTITION)] for p in range(PARTITIONS)})
    consumers = {}
    for name in ("x", "y"):
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "g-live", "client.id": name,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 10000,
                      "heartbeat.interval.ms": 500})
        c.subscribe([topic])
        consumers[name] = c
    seen: set[tuple[int, int]] = set()
    total = PARTITIONS * PER_PARTITION

    def step() -> None:
        for c in consumers.values():
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None:
                seen.add((msg.partition(), msg.offset()))
                try:
                    c.commit(message=msg, asynchronous=False)
                except KafkaException:
                    pass  # the coordinator is moving; a later commit covers this record

    try:
        wait_until(lambda: (step(), len(seen) >= total // 3)[1], 60, "a third of the records consumed")
        coordinator = leaders(cluster, "__consumer_offsets")[partition_for("g-live", 6)]
        cluster.kill_broker(coordinator)

        def committed_all():
            step()
            if len(seen) < total:
                return None
            got = consumers["x"].committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=5)
            return all(tp.offset == PER_PARTITION for tp in got)
        wait_until(committed_all, 90, "every record consumed and committed after the coordinator moved")
    finally:
        for c in consumers.values():
            c.close()
    assert seen == {(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)}
