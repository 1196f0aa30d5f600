"""Writing a leader's ISR changes to ZooKeeper and telling the controller.

``IsrWriter`` (seam): a conditional write of the partition's state znode
``/brokers/topics/<t>/partitions/<p>/state`` on the version this leader
last saw. The new version on success; None on a version conflict, which
means the controller has moved the partition on and this broker is no
longer its leader (seed 001 #3). Any other failure raises (e.g. ZooKeeper
unreachable: the change is retried by the next check).
``ZkIsrWriter`` is the implementation over ``KavkaZkClient``. On a version
conflict it reads the znode back: if it already holds exactly the proposed
state, an earlier attempt of this same write landed (its answer was lost,
or it was retried after giving up on it) and that version is adopted, as
Kafka's leader does (``checkLeaderAndIsrZkData``); a retry never fences
its own leader.

``IsrChangeListener`` (seam): the controller and every broker learn of ISR
changes through sequential ``/isr_change_notification/isr_change_<seq>``
znodes (seed 002 §6.3 (4)); ``ZkIsrChangeNotifier`` writes them.
``IsrChangePropagation`` decides when: Kafka batches changes and writes one
notification when changes exist and either none arrived for
``blackout_ms`` (5 s) or the last write was ``max_delay_ms`` (60 s) ago;
the check runs every ``interval_ms`` (2.5 s).

``IsrWriter``/``IsrChangeListener`` are awaited on the broker's event loop;
``IsrChangePropagation`` is a plain value holder used there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kavka.common.leader_and_isr import LeaderIsrAndControllerEpoch
from kavka.common.topic_partition import TopicPartition
from kavka.zk.brokers import PartitionStateZNode
from kavka.zk.client import KavkaZkClient


class IsrWriter(Protocol):
    async def write_isr(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch, zk_version: int) -> int | None: ...


class IsrChangeListener(Protocol):
    async def isr_changed(self, partitions: list[TopicPartition]) -> None: ...


class ZkIsrWriter:
    """``IsrWriter`` over ZooKeeper: seed 000's state znode JSON, written
    conditionally on ``zk_version``."""

    def __init__(self, zk: KavkaZkClient) -> None:
        self._zk = zk

    async def write_isr(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch, zk_version: int) -> int | None:
        lai = state.leader_and_isr
        node = PartitionStateZNode(tp.topic, tp.partition, lai.leader, lai.leader_epoch, lai.isr, max(state.controller_epoch, 0))
        version = await self._zk.maybe_update_leader_and_isr(node, zk_version)
        if version is not None:
            return version
        current = (await self._zk.get_partition_states([(tp.topic, tp.partition)])).get((tp.topic, tp.partition))
        if current is not None:
            held, held_version = current
            if (held.leader, held.leader_epoch, tuple(held.isr), held.controller_epoch) == (
                    node.leader, node.leader_epoch, tuple(node.isr), node.controller_epoch):
                return held_version
        return None


class ZkIsrChangeNotifier:
    """``IsrChangeListener`` writing ``/isr_change_notification/isr_change_<seq>``."""

    def __init__(self, zk: KavkaZkClient) -> None:
        self._zk = zk

    async def isr_changed(self, partitions: list[TopicPartition]) -> None:
        await self._zk.create_isr_change_notification([(tp.topic, tp.partition) for tp in partitions])


@dataclass(frozen=True, slots=True)
class IsrPropagationConfig:
    interval_ms: int = 2_500
    blackout_ms: int = 5_000
    max_delay_ms: int = 60_000


class IsrChangePropagation:
    """Collects partitions whose ISR changed and says when to publish them
    (see the module docstring)."""

    def __init__(self, config: IsrPropagationConfig | None = None, now_ms: int = 0) -> None:
        self.config = config or IsrPropagationConfig()
        self._changed: set[TopicPartition] = set()
        self.last_change_ms = now_ms
        self.last_propagation_ms = now_ms

    def record(self, tp: TopicPartition, now_ms: int) -> None:
        self._changed.add(tp)
        self.last_change_ms = now_ms

    @property
    def pending(self) -> frozenset[TopicPartition]:
        return frozenset(self._changed)

    def due(self, now_ms: int) -> list[TopicPartition] | None:
        """The partitions to publish now (and forget), or None."""
        if not self._changed:
            return None
        quiet = now_ms - self.last_change_ms >= self.config.blackout_ms
        overdue = now_ms - self.last_propagation_ms >= self.config.max_delay_ms
        if not (quiet or overdue):
            return None
        out = sorted(self._changed)
        self._changed.clear()
        self.last_propagation_ms = now_ms
        return out

    def restore(self, partitions: list[TopicPartition]) -> None:
        """Put back partitions whose publication failed (retried next time)."""
        self._changed.update(partitions)
