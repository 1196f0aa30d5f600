"""Shared helpers for the replication tests: real logs in tmp_path, a manual
clock, an in-memory ISR znode with versions, and partition states."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from kavka.common.clock import ManualClock
from kavka.common.leader_and_isr import LeaderIsrAndControllerEpoch
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.replication.partition import Partition
from kavka.replication.state import PartitionState
from kavka.storage.log import Log
from kavka.storage.log_config import LogConfig
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig

REPLICATION_SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

T0 = 1_700_000_000_000
TP = TopicPartition("orders", 0)
LAG_MS = 10_000


def batch(count: int = 1, value: bytes = b"v" * 20) -> bytes:
    return build_batch([SimpleRecord(b"k%d" % i, value, T0 + i) for i in range(count)])


def log_config(**overrides) -> LogConfig:
    props = {"segment.bytes": 1 << 20, "file.delete.delay.ms": 0}
    props.update(overrides)
    return LogConfig.from_props(props)


def state(
    leader: int,
    leader_epoch: int,
    isr: tuple[int, ...],
    replicas: tuple[int, ...] | None = None,
    *,
    tp: TopicPartition = TP,
    zk_version: int = 0,
    controller_epoch: int = 1,
) -> PartitionState:
    return PartitionState(
        tp.topic, tp.partition, controller_epoch, leader, leader_epoch, isr, zk_version,
        replicas if replicas is not None else isr, topic_id=uuid.uuid5(uuid.NAMESPACE_URL, tp.topic),
    )


class MemoryIsrZnodes:
    """``IsrWriter`` over a dict: the version check of a ZooKeeper
    conditional set, with a switch to fail writes as if ZooKeeper were down."""

    def __init__(self) -> None:
        self.versions: dict[TopicPartition, int] = {}
        self.writes: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch]] = []
        self.unreachable = False

    async def write_isr(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch, zk_version: int) -> int | None:
        if self.unreachable:
            raise ConnectionError("zookeeper unreachable")
        current = self.versions.get(tp, 0)
        if current != zk_version:
            return None
        self.versions[tp] = current + 1
        self.writes.append((tp, state))
        return current + 1


class RecordingIsrListener:
    def __init__(self) -> None:
        self.published: list[list[TopicPartition]] = []

    async def isr_changed(self, partitions: list[TopicPartition]) -> None:
        self.published.append(list(partitions))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Log:
    opened = Log(tmp_path / "orders-0", log_config(), clock=clock)
    yield opened
    opened.close()


def make_partition(log: Log, clock: ManualClock, broker_id: int = 1) -> Partition:
    return Partition(log.topic_partition, broker_id, log, clock)


@pytest.fixture
def log_manager(tmp_path: Path, clock: ManualClock) -> LogManager:
    manager = LogManager(LogManagerConfig(log_dirs=(str(tmp_path / "data"),)), log_config(), clock=clock)
    yield manager
    manager.shutdown()
