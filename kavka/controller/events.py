"""The controller's events: everything that makes the controller act, as
frozen values on its single queue (docs/ARCHITECTURE.md: the controller
is one task consuming one event queue).

Sources:

- the elector: ``Startup`` (this broker won an epoch), ``Resign`` (it lost
  it: session expired, ``/controller`` names someone else, or fenced);
- ZooKeeper watches, re-armed by each handler (watches are one-shot):
  ``BrokerChange`` (children of ``/brokers/ids``), ``TopicChange``
  (children of ``/brokers/topics``), ``PartitionModifications`` (data of
  ``/brokers/topics/<t>``), ``TopicDeletion`` (children of
  ``/admin/delete_topics``), ``IsrChangeNotification`` (children of
  ``/isr_change_notification``), ``LogDirEventNotification`` (children of
  ``/log_dir_event_notification``, KIP-112);
- the ZooKeeper session: ``WatchesLost`` (reconnected on the same session:
  every watch was dropped, re-read everything);
- the channel: ``StopReplicaResponseReceived``,
  ``LeaderAndIsrResponseReceived`` (answers from brokers);
- the controller itself: ``Reelect`` (its ZooKeeper state became uncertain:
  resign, delete ``/controller``, compete again).

- ZooKeeper watches for operator requests: ``ReassignPartitions``
  (``/admin/reassign_partitions``), ``PreferredReplicaElection``
  (``/admin/preferred_replica_election``); and on the state znodes of
  partitions being reassigned: ``PartitionReassignmentIsrChange``;
- a timer: ``AutoPreferredReplicaLeaderElection``;
- the broker's API handlers, each carrying the future the answer goes to
  (``ControllerRequest``): ``ControlledShutdown``, ``ElectLeaders``,
  ``AlterPartitionReassignments``, ``ListPartitionReassignments``.

Values only (a request's future is completed on the loop); any thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kavka.protocol.messages import Message
from kavka.zk.client import ControllerClaim


@dataclass(frozen=True, slots=True)
class ControllerEvent:
    """Base class. ``name`` is what logs and metrics call the event."""

    @property
    def name(self) -> str:
        return type(self).__name__


@dataclass(frozen=True, slots=True)
class Startup(ControllerEvent):
    """This broker won controller epoch ``claim.epoch`` (seed 000 §Controller Failover)."""

    claim: ControllerClaim


@dataclass(frozen=True, slots=True)
class Resign(ControllerEvent):
    """This broker is no longer the controller; ``reason`` is for the log."""

    reason: str


@dataclass(frozen=True, slots=True)
class Reelect(ControllerEvent):
    """Give up the epoch and compete again (after an uncertain ZooKeeper write)."""

    reason: str


@dataclass(frozen=True, slots=True)
class BrokerChange(ControllerEvent):
    """``/brokers/ids`` children changed: brokers started or died (seed 000 §Broker failover step 1)."""


@dataclass(frozen=True, slots=True)
class TopicChange(ControllerEvent):
    """``/brokers/topics`` children changed: topics created (seed 000 §创建 / 删除 Topic step 1)."""


@dataclass(frozen=True, slots=True)
class PartitionModifications(ControllerEvent):
    """``/brokers/topics/<topic>`` data changed: partitions were added."""

    topic: str


@dataclass(frozen=True, slots=True)
class TopicDeletion(ControllerEvent):
    """``/admin/delete_topics`` children changed (seed 000 §创建 / 删除 Topic step 2)."""


@dataclass(frozen=True, slots=True)
class IsrChangeNotification(ControllerEvent):
    """A leader changed an ISR and wrote ``/isr_change_notification/isr_change_<seq>``."""


@dataclass(frozen=True, slots=True)
class LogDirEventNotification(ControllerEvent):
    """A broker lost a log directory and wrote
    ``/log_dir_event_notification/log_dir_event_<seq>`` (KIP-112)."""


@dataclass(frozen=True, slots=True)
class WatchesLost(ControllerEvent):
    """The ZooKeeper connection came back on the same session; watches did not."""


@dataclass(frozen=True, slots=True)
class StopReplicaResponseReceived(ControllerEvent):
    """A broker answered a StopReplica (``response`` None: it could not be sent)."""

    broker_id: int
    request: Message
    response: Message | None


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponseReceived(ControllerEvent):
    """A broker answered a LeaderAndIsr."""

    broker_id: int
    request: Message
    response: Message | None


# -- reassignment, preferred election, controlled shutdown, rebalance ---------------------------


@dataclass(frozen=True, slots=True)
class ReassignPartitions(ControllerEvent):
    """``/admin/reassign_partitions`` was created, changed or deleted (seed
    000 §Partition 重新分配: the tool writes the targets there)."""


@dataclass(frozen=True, slots=True)
class PreferredReplicaElection(ControllerEvent):
    """``/admin/preferred_replica_election`` was created, changed or deleted
    (seed 000 §Preferred Replica Leader Election Tool 原理 1-2)."""


@dataclass(frozen=True, slots=True)
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """The ``leader.imbalance.check.interval.seconds`` timer fired (seed 000
    §Preferred Replica, last paragraph: ``auto.leader.rebalance.enable``)."""


@dataclass(frozen=True, slots=True)
class ControllerRequest(ControllerEvent):
    """An event that carries a broker's API request to the controller and
    the future its answer goes to. If the controller is not (or no longer)
    active when the event is taken, the future fails with
    ``NotControllerError``; if handling raises, with that error."""

    reply: Any = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ControlledShutdown(ControllerRequest):
    """ControlledShutdown (API 7) from broker ``broker_id``; ``broker_epoch``
    is -1 for v0-1 (no epoch sent)."""

    broker_id: int = -1
    broker_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ElectLeaders(ControllerRequest):
    """ElectLeaders (API 43): ``partitions`` None means every partition;
    ``election_type`` 0 preferred, 1 unclean (KIP-460)."""

    partitions: tuple[tuple[str, int], ...] | None = None
    election_type: int = 0


@dataclass(frozen=True, slots=True)
class AlterPartitionReassignments(ControllerRequest):
    """AlterPartitionReassignments (API 45, KIP-455): per partition the
    target replicas, or None to cancel the pending reassignment."""

    reassignments: tuple[tuple[str, int, tuple[int, ...] | None], ...] = ()
    allow_replication_factor_change: bool = True


@dataclass(frozen=True, slots=True)
class ListPartitionReassignments(ControllerRequest):
    """ListPartitionReassignments (API 46): ``partitions`` None lists all."""

    partitions: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True, slots=True)
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znode of a partition being reassigned changed (Kafka's
    ReassignedPartitionsIsrChangeListener): RAR may now be in the ISR
    (seed 000 §Partition 重新分配 step 4)."""

    topic: str
    partition: int
