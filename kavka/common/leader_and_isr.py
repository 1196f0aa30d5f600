"""The content of a partition's state znode
(``/brokers/topics/<t>/partitions/<p>/state``, seed 000) as values.

``LeaderAndIsr`` is Kafka's value of that name: the leader (``NO_LEADER``:
none), the leader epoch, the ISR, and the znode version it was read at or
written as (Kafka's partition epoch; -1: not in ZooKeeper). Every leader
change bumps the leader epoch (``new_leader_and_isr``); a write made
conditional on ``zk_version`` is what fences two writers of one partition
(seed 001 #3: the controller, and a leader changing its ISR).

``LeaderIsrAndControllerEpoch`` pairs it with the epoch of the controller
that wrote it (the znode's ``controller_epoch``): the controller's view of
each partition, and the ISR change a leader proposes to write back (seed
002 §6.4: same leader and leader epoch, a new ISR). Converting to and from
the znode's JSON is the ``kavka.zk`` layer's (``PartitionStateZNode``).

Values are not validated here: the controller reads whatever ZooKeeper
holds, and each writer checks its own rules (``PartitionStateZNode``,
``kavka.replication.state.isr_proposal``).

Frozen, slotted values; any thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kavka.common.ids import BrokerId, ControllerEpoch, LeaderEpoch


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's leader (-1: none), leader epoch and ISR, and the version
    of its state znode this was read at / written as (-1: not in ZooKeeper)."""

    leader: BrokerId
    leader_epoch: LeaderEpoch
    isr: tuple[BrokerId, ...]
    zk_version: int = -1

    def new_leader_and_isr(self, leader: BrokerId, isr: Iterable[BrokerId]) -> LeaderAndIsr:
        """The next state after an election or ISR change: epoch + 1, on the
        same znode version (the write is conditional on it)."""
        return LeaderAndIsr(leader, LeaderEpoch(self.leader_epoch + 1), tuple(isr), self.zk_version)

    def with_isr(self, isr: Iterable[BrokerId]) -> LeaderAndIsr:
        """The same leadership (leader and epoch) with another ISR, on the
        same znode version (the write is conditional on it)."""
        return LeaderAndIsr(self.leader, self.leader_epoch, tuple(isr), self.zk_version)

    def with_zk_version(self, zk_version: int) -> LeaderAndIsr:
        """The same state as written at ``zk_version``."""
        return LeaderAndIsr(self.leader, self.leader_epoch, self.isr, zk_version)


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    """What the state znode holds: a ``LeaderAndIsr`` (with the znode's
    version) and the epoch of the controller that wrote it."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: ControllerEpoch
