"""Values the replica manager receives and hands out about partition leadership.

``PartitionState`` is one partition's entry of a LeaderAndIsr request (the
contents of ``/brokers/topics/<t>/partitions/<p>/state`` plus the assigned
replicas and the znode version, seed 000 §LeaderAndIsrRequest); the broker's
handler builds it from the wire message. ``isr_proposal`` checks and builds
what a leader proposes to write back to that znode when it shrinks or
expands the ISR (seed 002 §6.4): a ``LeaderIsrAndControllerEpoch`` of
``kavka.common`` with the same leader, the same leader epoch and a new ISR,
on the znode version the leader holds. ``BrokerEndPoint`` is where a
follower finds its leader (LeaderAndIsr's live leaders).

Frozen, slotted values; any thread.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kavka.common.ids import NO_LEADER, BrokerId, ControllerEpoch, LeaderEpoch
from kavka.common.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kavka.common.topic_partition import TopicPartition


def _check_replicas(what: str, ids: tuple[int, ...]) -> None:
    if len(set(ids)) != len(ids) or any(i < 0 for i in ids):
        raise ValueError(f"{what} {list(ids)} must hold distinct broker ids >= 0")


@dataclass(frozen=True, slots=True)
class BrokerEndPoint:
    """A broker's inter-broker address (LeaderAndIsr ``live_leaders``)."""

    broker_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition of a LeaderAndIsr request.

    Invariants (checked): ``replicas`` and ``isr`` hold distinct broker ids;
    ``leader`` is -1 or a member of ``isr``; epochs and ``zk_version`` are
    >= -1 (-1: unknown). ``zk_version`` is the version of the state znode the
    controller wrote: a leader's ISR write is conditional on it (seed 001 #3).
    ``topic_id``: the topic's id (LeaderAndIsr v5+, KIP-516), which a
    follower names its topics by in Fetch v13+; None from older versions.
    """

    topic: str
    partition: int
    controller_epoch: ControllerEpoch
    leader: BrokerId
    leader_epoch: LeaderEpoch
    isr: tuple[BrokerId, ...]
    zk_version: int
    replicas: tuple[BrokerId, ...]
    is_new: bool = False
    topic_id: uuid.UUID | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "isr", tuple(self.isr))
        object.__setattr__(self, "replicas", tuple(self.replicas))
        if self.partition < 0:
            raise ValueError(f"partition {self.partition} of {self.topic!r} must be >= 0")
        _check_replicas(f"isr of {self.topic}-{self.partition}", self.isr)
        _check_replicas(f"replicas of {self.topic}-{self.partition}", self.replicas)
        if self.leader != NO_LEADER and self.leader not in self.isr:
            raise ValueError(f"leader {self.leader} of {self.topic}-{self.partition} is not in its isr {list(self.isr)}")
        if min(self.controller_epoch, self.leader_epoch, self.zk_version) < -1 or self.leader < -1:
            raise ValueError(f"negative epoch, version or leader in {self}")

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def isr_proposal(
    leader: BrokerId, leader_epoch: LeaderEpoch, isr: tuple[BrokerId, ...], controller_epoch: ControllerEpoch, zk_version: int = -1
) -> LeaderIsrAndControllerEpoch:
    """A leader's proposed content of the partition state znode (leader,
    leader epoch, ISR, controller epoch), made against znode version
    ``zk_version``. Checked: the ISR holds distinct broker ids and keeps
    the leader (never empty)."""
    isr = tuple(isr)
    _check_replicas("isr", isr)
    if leader not in isr:
        raise ValueError(f"leader {leader} is not in the proposed isr {list(isr)}")
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, leader_epoch, isr, zk_version), controller_epoch)


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResult:
    """The answer to a LeaderAndIsr request: a request-level error (only
    STALE_CONTROLLER_EPOCH) and one error code per partition."""

    error: int
    partition_errors: dict[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StopReplicaResult:
    """The answer to a StopReplica request (like ``LeaderAndIsrResult``)."""

    error: int
    partition_errors: dict[TopicPartition, int] = field(default_factory=dict)
