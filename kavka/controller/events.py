"""The controller's events: everything that makes the controller act, as
frozen values on its single queue (DESIGN.md "the controller is one task
consuming one event queue").

Sources:

- the elector: ``Startup`` (this broker won an epoch), ``Resign`` (it lost
  it: session expired, ``/controller`` names someone else, or fenced);
- ZooKeeper watches, re-armed by each handler (watches are one-shot):
  ``BrokerChange`` (children of ``/brokers/ids``), ``TopicChange``
  (children of ``/brokers/topics``), ``PartitionModifications`` (data of
  ``/brokers/topics/<t>``), ``TopicDeletion`` (children of
  ``/admin/delete_topics``), ``IsrChangeNotification`` (children of
  ``/isr_change_notification``);
- the ZooKeeper session: ``WatchesLost`` (reconnected on the same session:
  every watch was dropped, re-read everything);
- the channel: ``StopReplicaResponseReceived``,
  ``LeaderAndIsrResponseReceived`` (answers from brokers);
- the controller itself: ``Reelect`` (its ZooKeeper state became uncertain:
  resign, delete ``/controller``, compete again).

Issue 5's events (reassignment, preferred election, controlled shutdown,
auto rebalance) are further classes of the same kind. Values only; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

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
