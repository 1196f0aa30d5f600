"""The controller's picture of the cluster (seed 000 §Controller Failover step 7):
live brokers, replica assignments, leader/ISR per partition, epochs.

``ControllerContext`` is plain mutable data owned by the controller's single
event task: filled from ZooKeeper when a broker becomes controller, then
updated by each event the controller handles. No I/O, no locks: nothing
else may touch it. The partition and replica state tables live with their
state machines (``partition_state``, ``replica_state``).

Value types used across the controller live here too: ``PartitionReplica``
and ``ReplicaAssignment``; ``TopicPartition``, ``LeaderAndIsr`` and
``LeaderIsrAndControllerEpoch`` are the shared vocabulary of ``kavka.common``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, cast

from kavka.common.ids import BrokerEpoch, BrokerId, ControllerEpoch
from kavka.common.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kavka.common.topic_partition import TopicPartition
from kavka.zk.brokers import BrokerIdZNode


class PartitionReplica(NamedTuple):
    """One replica of one partition; the broker id is the replica id (seed 000)."""

    tp: TopicPartition
    replica: BrokerId


def as_broker_ids(replicas: tuple[int, ...]) -> tuple[BrokerId, ...]:
    """A replica list read from a znode or a request, once validated, as
    broker ids (``BrokerId`` is an ``int`` at run time: nothing is copied)."""
    return cast("tuple[BrokerId, ...]", replicas)


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's replicas (AR), with KIP-455's reassignment bookkeeping.

    During a reassignment ``replicas`` is OAR + RAR (seed 000 §Partition 重新分配
    step 1), ``adding`` = RAR - OAR and ``removing`` = OAR - RAR. Outside a
    reassignment both are empty. The first replica is the preferred one.
    """

    replicas: tuple[BrokerId, ...]
    adding: tuple[BrokerId, ...] = ()
    removing: tuple[BrokerId, ...] = ()

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target_replicas(self) -> tuple[BrokerId, ...]:
        """RAR: what the replicas will be when the reassignment completes."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def original_replicas(self) -> tuple[BrokerId, ...]:
        """OAR: the replicas before the reassignment started."""
        return tuple(r for r in self.replicas if r not in self.adding)

    @staticmethod
    def for_reassignment(original: Iterable[BrokerId], target: Iterable[BrokerId]) -> ReplicaAssignment:
        """AR = OAR + RAR, the seed's order (§Partition 重新分配 step 1 and its
        table: {1,2,3} -> {1,2,3,4,5,6}), so the preferred replica does not
        change until the reassignment completes."""
        oar, rar = tuple(original), tuple(target)
        replicas = oar + tuple(r for r in rar if r not in oar)
        return ReplicaAssignment(replicas, tuple(r for r in rar if r not in oar), tuple(r for r in oar if r not in rar))


@dataclass
class ControllerContext:
    """Cluster state as the controller knows it (see module doc).

    Invariants kept by the controller: every partition in ``leadership`` has
    an assignment; ``shutting_down`` is a subset of ``live_brokers``.
    """

    epoch: ControllerEpoch = ControllerEpoch(0)
    epoch_zk_version: int = -1
    live_brokers: dict[BrokerId, BrokerIdZNode] = field(default_factory=dict)
    # Broker epoch (czxid of /brokers/ids/<id>, KIP-380) of each live broker.
    broker_epochs: dict[BrokerId, BrokerEpoch] = field(default_factory=dict)
    shutting_down: set[BrokerId] = field(default_factory=set)
    assignments: dict[str, dict[int, ReplicaAssignment]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    topics_to_delete: set[str] = field(default_factory=set)
    topics_ineligible_for_deletion: set[str] = field(default_factory=set)
    # KIP-112: per live broker, its replicas in a failed log directory (it
    # answered KAFKA_STORAGE_ERROR for them); forgotten when the broker
    # restarts or dies (Kafka's replicasOnOfflineDirs)
    replicas_on_offline_dirs: dict[BrokerId, set[TopicPartition]] = field(default_factory=dict)

    # -- brokers -------------------------------------------------------------------------

    @property
    def live_or_shutting_down_ids(self) -> set[BrokerId]:
        return set(self.live_brokers)

    @property
    def live_broker_ids(self) -> set[BrokerId]:
        """Live brokers that are not shutting down: the ones leaders may move to."""
        return set(self.live_brokers) - self.shutting_down

    def is_replica_online(self, broker_id: int, tp: TopicPartition | None = None) -> bool:
        """On a live broker and, for ``tp``, not in a failed log directory
        of it (Kafka's isReplicaOnline)."""
        if broker_id not in self.live_brokers:
            return False
        return tp is None or tp not in self.replicas_on_offline_dirs.get(cast(BrokerId, broker_id), ())

    def online_for(self, tp: TopicPartition, brokers: Iterable[BrokerId]) -> set[BrokerId]:
        """Those of ``brokers`` whose replica of ``tp`` is not in a failed
        log directory: who may lead or be in the ISR of ``tp``."""
        return {b for b in brokers if tp not in self.replicas_on_offline_dirs.get(b, ())}

    # -- topics and assignments ------------------------------------------------------------

    @property
    def all_topics(self) -> list[str]:
        return sorted(self.assignments)

    def all_partitions(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t in sorted(self.assignments) for p in sorted(self.assignments[t])]

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return [TopicPartition(topic, p) for p in sorted(self.assignments.get(topic, {}))]

    def assignment(self, tp: TopicPartition) -> ReplicaAssignment | None:
        return self.assignments.get(tp.topic, {}).get(tp.partition)

    def partition_replicas(self, tp: TopicPartition) -> tuple[BrokerId, ...]:
        a = self.assignment(tp)
        return a.replicas if a is not None else ()

    def update_assignment(self, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
        self.assignments.setdefault(tp.topic, {})[tp.partition] = assignment

    def remove_topic(self, topic: str) -> None:
        for tp in self.partitions_for_topic(topic):
            self.leadership.pop(tp, None)
        self.assignments.pop(topic, None)
        self.topic_ids.pop(topic, None)
        self.topics_to_delete.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions() if broker_id in self.partition_replicas(tp)]

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionReplica]:
        ids = set(broker_ids)
        return [PartitionReplica(tp, r) for tp in self.all_partitions() for r in self.partition_replicas(tp) if r in ids]

    def replicas_for_topic(self, topic: str) -> list[PartitionReplica]:
        return [PartitionReplica(tp, r) for tp in self.partitions_for_topic(topic) for r in self.partition_replicas(tp)]

    def partitions_being_reassigned(self) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions() if self.assignment(tp).is_being_reassigned]  # type: ignore[union-attr]

    # -- leadership -----------------------------------------------------------------------------

    def leader_and_isr(self, tp: TopicPartition) -> LeaderAndIsr | None:
        entry = self.leadership.get(tp)
        return entry.leader_and_isr if entry is not None else None

    def put_leadership(self, tp: TopicPartition, leader_and_isr: LeaderAndIsr) -> None:
        """Record a state the controller wrote with its own epoch."""
        self.leadership[tp] = LeaderIsrAndControllerEpoch(leader_and_isr, self.epoch)

    def partitions_led_by(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, e in self.leadership.items() if e.leader_and_isr.leader == broker_id)

    def partitions_without_live_leader(self) -> list[TopicPartition]:
        """Seed 000 §Broker failover step 2's set_p: partitions whose leader
        is not a live broker (or that have none), except topics queued for
        deletion, which are not worth electing for."""
        return [
            tp
            for tp, e in sorted(self.leadership.items())
            if e.leader_and_isr.leader not in self.live_brokers and tp.topic not in self.topics_to_delete
        ]
