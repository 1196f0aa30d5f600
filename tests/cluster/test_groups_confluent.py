"""Committed offsets survive killing the coordinator's broker (seed 002
§6.8: the coordinator moves with the leadership of the group's
``__consumer_offsets`` partition), with confluent-kafka (librdkafka)
against a 3-broker Kavka whose ``__consumer_offsets`` has RF=3 - checked
in the metadata and in ZooKeeper before the kill.

The three-member split / leave / join checks with every client are in
test_groups_three_members.py.
"""

from __future__ import annotations

import contextlib

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from kavka.group.state import partition_for

from .cluster_helpers import ZkView, admin, create_topic, leaders, produce, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

OFFSETS_TOPIC = "__consumer_offsets"
PARTITIONS = 6
PER_PARTITION = 40
CONFIG = {"offsets.topic.num.partitions": "6", "offsets.topic.replication.factor": "3",
          "group.initial.rebalance.delay.ms": "200", "group.min.session.timeout.ms": "1000",
          "zookeeper.session.timeout.ms": "6000"}


def _member(cluster, group: str, topic: str, name: str) -> Consumer:
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": name,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": 10000, "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 100,
                  "topic.metadata.refresh.interval.ms": 1000})
    c.subscribe([topic])
    return c


def _consume_committing(consumers: list[Consumer], seen: dict, expected: set[bytes], what: str) -> None:
    """Poll every consumer, committing each record synchronously, until
    ``expected`` were all seen."""
    def step():
        for c in consumers:
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None:
                seen.setdefault(msg.value(), []).append(c.memberid())
                c.commit(message=msg, asynchronous=False)
        return expected <= set(seen)
    wait_until(step, 60, what, 0)


def _committed(c: Consumer, topic: str) -> dict[int, int] | None:
    got = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=5)
    return {tp.partition: tp.offset for tp in got} if all(tp.error is None for tp in got) else None


def test_committed_offsets_survive_coordinator_kill(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    topic, group = "groups-confluent", "g-confluent"
    create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=3)
    first = {f"one-{p}-{i}".encode() for p in range(PARTITIONS) for i in range(PER_PARTITION)}
    produce(cluster, topic, {p: [f"one-{p}-{i}".encode() for i in range(PER_PARTITION)] for p in range(PARTITIONS)})
    seen: dict[bytes, list[str]] = {}
    consumers = [_member(cluster, group, topic, f"c{i}") for i in range(2)]
    try:
        _consume_committing(consumers, seen, first, "the first records consumed and committed")
        assert wait_until(lambda: _committed(consumers[0], topic), 30, "the committed offsets") == {
            p: PER_PARTITION for p in range(PARTITIONS)}
    finally:
        for c in consumers:
            c.close()

    # RF=3 for real: three replicas of every partition of __consumer_offsets, all in sync.
    slot = partition_for(group, PARTITIONS)
    md = admin(cluster).list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC]
    assert len(md.partitions) == PARTITIONS
    assert all(sorted(p.replicas) == [0, 1, 2] for p in md.partitions.values()), md.partitions
    with ZkView(cluster) as zk:
        assert sorted(zk.partition_state(OFFSETS_TOPIC, slot).isr) == [0, 1, 2]
    coordinator = leaders(cluster, OFFSETS_TOPIC)[slot]

    cluster.kill_broker(coordinator)  # kill -9
    wait_until(lambda: leaders(cluster, OFFSETS_TOPIC)[slot] not in (coordinator, -1), 60,
               f"a new leader for {OFFSETS_TOPIC}-{slot}")
    second = {f"two-{p}-{i}".encode() for p in range(PARTITIONS) for i in range(5)}
    # Idempotent: the commits are counted exactly below, and a plain producer
    # may write a retried batch twice while leadership moves after the kill.
    produce(cluster, topic, {p: [f"two-{p}-{i}".encode() for i in range(5)] for p in range(PARTITIONS)},
            idempotent=True)
    late = _member(cluster, group, topic, "late")
    try:
        assert wait_until(lambda: _committed(late, topic), 60, "the committed offsets after the kill") == {
            p: PER_PARTITION for p in range(PARTITIONS)}
        # The group resumes from its commits: a record from before them
        # would be delivered first, and counted twice below.
        _consume_committing([late], seen, second, "the records produced after the kill")
        assert wait_until(lambda: _committed(late, topic), 30, "the final commits") == {
            p: PER_PARTITION + 5 for p in range(PARTITIONS)}
    finally:
        late.close()
    assert set(seen) == first | second
    twice = {v: who for v, who in seen.items() if len(who) > 1}
    assert not twice, f"consumed twice: {sorted(twice)[:5]}"


def test_live_group_survives_coordinator_kill(make_cluster):
    """Two members keep consuming while the coordinator's broker is killed:
    the new coordinator loads the group (Stable, same generation) from its
    replica of ``__consumer_offsets``; every record is consumed and its
    offset committed. A commit that fails during the move may repeat a
    record (at-least-once), never skip one."""
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
                with contextlib.suppress(KafkaException):  # the coordinator is moving; a later commit covers this record
                    c.commit(message=msg, asynchronous=False)

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
