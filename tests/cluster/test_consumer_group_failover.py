"""A consumer-protocol group (KIP-848) survives its coordinator's SIGKILL,
stable or in the middle of a reconciliation: the group lives in
``__consumer_offsets`` (Kafka 4's record types), so the broker that takes
the partition over knows its epoch, members, assignments and pending
revocations. confluent-kafka consumers (``group.protocol=consumer``) keep
heartbeating with their member epochs: ConsumerGroupDescribe on the new
coordinator shows the same group epoch and members (a rejoin would start
the epochs again and give the members new epochs), no partition is owned
twice at any sample, and the records produced after the kill are consumed
from the committed offsets, each once."""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Consumer, TopicPartition

from kavka.client.cluster import Cluster
from kavka.client.group_admin import ConsumerGroupDescription, GroupAdmin
from kavka.group.state import partition_for

from .cluster_helpers import consumer_protocol_consumer as _consumer
from .cluster_helpers import create_topic, leaders, produce, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PARTITIONS = 6
OFFSETS_PARTITIONS = 6
# the session outlasts the failover: members are kept, not fenced and rejoined
CONFIG = {"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS), "offsets.topic.replication.factor": "3",
          "group.consumer.session.timeout.ms": "45000", "group.consumer.heartbeat.interval.ms": "500",
          "zookeeper.session.timeout.ms": "6000"}


def _describe(cluster, group: str) -> ConsumerGroupDescription:
    async def go() -> ConsumerGroupDescription:
        async with Cluster(cluster.bootstrap, request_timeout_ms=10_000) as c:
            return await GroupAdmin(c, timeout_ms=30_000).describe_consumer_group(group)
    return asyncio.run(go())


class Sampler:
    """Polls the consumers, keeps what they read, and notes every sample
    in which a partition is owned by two of them (kept, not raised: the
    samples run inside ``wait_until``, which retries a probe that raises)."""

    def __init__(self, consumers: dict[str, Consumer]) -> None:
        self.consumers = consumers
        self.read: dict[str, list[bytes]] = {name: [] for name in consumers}
        self.owned_twice: list[dict[str, set[int]]] = []

    def owned(self) -> dict[str, set[int]]:
        for name, c in self.consumers.items():
            msg = c.poll(0.05)
            if msg is not None and msg.error() is None and msg.value() is not None:
                self.read[name].append(msg.value())
        out = {name: {tp.partition for tp in c.assignment()} for name, c in self.consumers.items()}
        claimed = [p for ps in out.values() for p in ps]
        if len(claimed) != len(set(claimed)):
            self.owned_twice.append(out)
        return out

    def split(self) -> dict[str, set[int]] | None:
        out = self.owned()
        everything = set().union(*out.values())
        return out if everything == set(range(PARTITIONS)) and all(out.values()) else None


def test_the_group_continues_on_the_new_coordinator_with_its_epochs(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    topic, group = "kip848-failover", "g-failover"
    create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=3)
    consumers = {name: _consumer(cluster, group, topic, name) for name in ("a", "b", "c")}
    s = Sampler(consumers)
    try:
        wait_until(s.split, 60, "three consumers sharing the partitions", 0)
        # a member leaves: the epoch moves past what a fresh group of two would reach
        consumers.pop("c").close()
        s.read.pop("c")
        wait_until(s.split, 60, "two consumers sharing the partitions", 0)
        before = wait_until(lambda: (d := _describe(cluster, group)).state == "Stable" and d, 60,
                            "a stable group")
        assert before.group_epoch >= 4 and len(before.members) == 2
        epochs = {m.member_id: m.member_epoch for m in before.members}
        assert set(epochs.values()) == {before.group_epoch}

        # everything produced so far is read and committed
        produce(cluster, topic, {p: [f"old-{p}-{i}".encode() for i in range(5)] for p in range(PARTITIONS)})
        wait_until(lambda: s.owned() is not None and sum(map(len, s.read.values())) >= PARTITIONS * 5, 60,
                   "the first records consumed", 0)
        for c in consumers.values():
            c.commit(asynchronous=False)

        slot = partition_for(group, OFFSETS_PARTITIONS)
        coordinator = leaders(cluster, "__consumer_offsets")[slot]
        cluster.kill_broker(coordinator)  # SIGKILL
        wait_until(lambda: leaders(cluster, "__consumer_offsets")[slot] not in (coordinator, -1), 60,
                   "a new coordinator")
        for read in s.read.values():
            read.clear()
        # idempotent: the records are counted exactly below, after a kill
        produce(cluster, topic, {p: [f"new-{p}-{i}".encode() for i in range(5)] for p in range(PARTITIONS)},
                idempotent=True)

        def all_new_read() -> bool:
            s.owned()
            return sum(len(r) for r in s.read.values()) >= PARTITIONS * 5
        wait_until(all_new_read, 90, "the records produced after the kill consumed", 0)
        after = _describe(cluster, group)
        assert after.coordinator != coordinator
        # the same group: its epoch went on from where it was, the members kept theirs
        assert after.group_epoch == before.group_epoch, (before, after)
        assert {m.member_id: m.member_epoch for m in after.members} == epochs
        # each new record once, and none of the committed ones again
        got = sorted(v for r in s.read.values() for v in r)
        assert got == sorted(f"new-{p}-{i}".encode() for p in range(PARTITIONS) for i in range(5))
        for _ in range(20):
            s.owned()
        assert sorted(p for ps in s.owned().values() for p in ps) == list(range(PARTITIONS))
        assert not s.owned_twice, f"partitions owned twice: {s.owned_twice[:3]}"
        committed = consumers["a"].committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in committed} == {p: 5 for p in range(PARTITIONS)}
    finally:
        for c in consumers.values():
            c.close()


def test_a_failover_in_the_middle_of_a_reconciliation(make_cluster):
    """The coordinator dies while a third member's join is being reconciled
    (the others still revoking): the new coordinator has the pending
    revocations, so the group converges with no partition owned twice and
    the joiner keeps the member id and epoch it was given."""
    cluster = make_cluster(brokers=3, config=CONFIG)
    topic, group = "kip848-midway", "g-midway"
    create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=3)
    consumers = {name: _consumer(cluster, group, topic, name) for name in ("a", "b")}
    s = Sampler(consumers)
    try:
        wait_until(s.split, 60, "two consumers sharing the partitions", 0)
        stable = wait_until(lambda: (d := _describe(cluster, group)).state == "Stable" and d, 60, "a stable group")
        consumers["c"] = _consumer(cluster, group, topic, "c")
        s.read["c"] = []
        joined = wait_until(lambda: (d := _describe(cluster, group)).group_epoch > stable.group_epoch and d, 60,
                            "the third member joined")
        slot = partition_for(group, OFFSETS_PARTITIONS)
        coordinator = leaders(cluster, "__consumer_offsets")[slot]
        cluster.kill_broker(coordinator)  # SIGKILL, with the group mid-way
        wait_until(lambda: leaders(cluster, "__consumer_offsets")[slot] not in (coordinator, -1), 60,
                   "a new coordinator")
        owned = wait_until(lambda: (o := s.split()) and all(len(ps) == 2 for ps in o.values()) and o, 90,
                           "three consumers sharing the partitions on the new coordinator", 0)
        after = wait_until(lambda: (d := _describe(cluster, group)).state == "Stable" and d, 60, "a stable group")
        assert not s.owned_twice, f"partitions owned twice: {s.owned_twice[:3]}"
        assert after.coordinator != coordinator and sorted(len(ps) for ps in owned.values()) == [2, 2, 2]
        # the join was not lost and nobody rejoined: same members, the epoch went on from the join's
        assert {m.member_id for m in after.members} == {m.member_id for m in joined.members}
        assert after.group_epoch == joined.group_epoch
    finally:
        for c in consumers.values():
            c.close()
