"""The broker side of the group coordinator: creating ``__consumer_offsets``
on first use (refused with fewer live brokers than its replication
factor), answering with the leader of the group's partition, and following
LeaderAndIsr / StopReplica."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.group.coordinator import GroupConfig, GroupCoordinator
from kavka.group.state import partition_for
from kavka.replication.state import PartitionState
from kavka.server.internal_topic import CoordinatorLeadership, InternalTopic, InternalTopicSettings
from kavka.server.metadata_cache import BrokerEndpoint

TOPIC = "__consumer_offsets"


@dataclass
class Meta:
    leader: int


class FakeCache:
    def __init__(self, live: int) -> None:
        self.live = live
        self.leaders: dict[int, int] = {}

    def alive_brokers(self):
        return list(range(self.live))

    def contains_topic(self, topic: str) -> bool:
        return topic == TOPIC and bool(self.leaders)

    def partition(self, topic: str, p: int):
        return Meta(self.leaders[p]) if p in self.leaders else None

    def leader_endpoint(self, topic: str, p: int, listener: str):
        return BrokerEndpoint("127.0.0.1", 9000 + self.leaders[p], listener) if p in self.leaders else None


class FakeAdmin:
    def __init__(self) -> None:
        self.created = []

    async def create_topics(self, topics):
        self.created += topics
        return []


class NoLog:
    async def append(self, partition, batch):
        return ErrorCode.NONE

    def read_all(self, partition):
        return iter(())

    async def wait_committed(self, partition, still_wanted) -> bool:
        return still_wanted()  # every append here is committed at once


CONFIG = {"offsets.topic.replication.factor": 3, "offsets.topic.num.partitions": 4,
          "offsets.topic.segment.bytes": 1 << 20}


async def test_offsets_topic_is_created_once_enough_brokers_live():
    coordinator = GroupCoordinator(0, GroupConfig(num_partitions=4), NoLog())
    cache, admin = FakeCache(live=2), FakeAdmin()
    topic = InternalTopic(InternalTopicSettings.consumer_offsets(CONFIG), coordinator.partition_of, cache, admin)
    assert (await topic.coordinator_for("g", "PLAINTEXT"))[0] is ErrorCode.COORDINATOR_NOT_AVAILABLE
    await asyncio.sleep(0)
    assert admin.created == []  # two live brokers, RF 3: nothing created
    cache.live = 3
    assert (await topic.coordinator_for("g", "PLAINTEXT"))[0] is ErrorCode.COORDINATOR_NOT_AVAILABLE
    await asyncio.sleep(0)
    [t] = admin.created
    assert (t.name, t.num_partitions, t.replication_factor, t.configs["cleanup.policy"]) == (
        TOPIC, 4, 3, "compact")
    cache.leaders = {p: p % 3 for p in range(4)}
    code, node, endpoint = await topic.coordinator_for("g", "PLAINTEXT")
    expected = partition_for("g", 4) % 3
    assert (code, node, endpoint.port) == (ErrorCode.NONE, expected, 9000 + expected)


async def test_leadership_and_stop_replica_load_and_unload():
    c = GroupCoordinator(1, GroupConfig(num_partitions=4), NoLog())
    leadership = CoordinatorLeadership(1, {TOPIC: c})
    leadership_changed, replicas_stopped = leadership.leadership_changed, leadership.replicas_stopped
    lead = PartitionState(TOPIC, 2, 1, 1, 5, (1,), 0, (1,))
    follow = PartitionState(TOPIC, 3, 1, 0, 5, (0, 1), 0, (0, 1))
    other = PartitionState("orders", 0, 1, 1, 5, (1,), 0, (1,))
    leadership_changed([lead, follow, other], {})
    await asyncio.sleep(0.05)
    assert c.owned == {2}
    leadership_changed([PartitionState(TOPIC, 2, 1, 0, 6, (0, 1), 0, (0, 1))], {})
    assert c.owned == set()
    leadership_changed([PartitionState(TOPIC, 1, 1, 1, 7, (1,), 0, (1,))],
                       {TopicPartition(TOPIC, 1): int(ErrorCode.STALE_CONTROLLER_EPOCH)})
    assert not c.loading and not c.owned  # a refused entry changes nothing
    leadership_changed([lead], {})
    await asyncio.sleep(0.05)
    replicas_stopped([TopicPartition(TOPIC, 2)])
    assert c.owned == set()


def test_transaction_state_topic_settings_follow_the_broker_config():
    s = InternalTopicSettings.transaction_state({
        "transaction.state.log.num.partitions": 50, "transaction.state.log.replication.factor": 3,
        "transaction.state.log.min.isr": 2, "transaction.state.log.segment.bytes": 1 << 20})
    assert (s.topic, s.num_partitions, s.replication_factor, s.rf_key) == (
        "__transaction_state", 50, 3, "transaction.state.log.replication.factor")
    assert dict(s.configs) == {"cleanup.policy": "compact", "min.insync.replicas": "2", "segment.bytes": str(1 << 20)}


class _Log:
    def __init__(self, hw: int, leo: int) -> None:
        self.high_watermark, self.log_end_offset = hw, leo


class _Partition:
    def __init__(self, hw: int, leo: int) -> None:
        self.log = _Log(hw, leo)


class _Replicas:
    def __init__(self, partition) -> None:
        self.partition = partition

    def get_partition(self, tp):
        return self.partition


async def test_a_load_waits_until_the_log_end_it_read_is_committed():
    """``wait_committed`` returns True once the high watermark reaches the
    log end as it was when asked (not a later one), False when the load is
    given up or the partition is replaced or gone."""
    from kavka.server.internal_topic import InternalTopicLog

    p = _Partition(hw=3, leo=5)
    replicas = _Replicas(p)
    log = InternalTopicLog(replicas, "__consumer_offsets", 1000, 1 << 16)
    waiting = asyncio.ensure_future(log.wait_committed(0, lambda: True))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    p.log.log_end_offset = 9  # appended after the load read: not waited for
    p.log.high_watermark = 5
    assert await asyncio.wait_for(waiting, 1) is True

    wanted = True
    given_up = asyncio.ensure_future(log.wait_committed(0, lambda: wanted))
    await asyncio.sleep(0.05)
    wanted = False
    assert await asyncio.wait_for(given_up, 1) is False

    replaced = asyncio.ensure_future(log.wait_committed(0, lambda: True))
    await asyncio.sleep(0.05)
    replicas.partition = _Partition(hw=9, leo=9)
    assert await asyncio.wait_for(replaced, 1) is False
    replicas.partition = None
    assert await log.wait_committed(0, lambda: True) is False
