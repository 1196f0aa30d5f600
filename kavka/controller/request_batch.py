"""``ControllerBrokerRequestBatch``: the controller's requests to brokers,
collected while it handles one event and sent as ONE request per broker
and API (seed 000 §Broker failover step 4: "Controller 可以在一个 RPC 操作中发送多个命令").

Wire shapes (built once, in the grouped layout every version the
controller speaks shares — LeaderAndIsr v2+, UpdateMetadata v5+,
StopReplica v3+; the transport picks the version):

- LeaderAndIsr: per topic (name, topic id) the partitions' controller
  epoch, leader, leader epoch, ISR, partition epoch (the state znode's
  version), replicas, adding/removing replicas, ``is_new``; plus the
  leaders' inter-broker endpoints (``live_leaders``).
- UpdateMetadata: per topic the partitions' state with ``offline_replicas``
  (replicas on dead brokers or in a failed log directory, KIP-112) — leader
  -2 while the topic is being deleted —
  and every live broker with all its endpoints and rack.
- StopReplica: per topic the partitions with their leader epoch (-2 when
  deleting, KIP-570) and the delete flag.

Every request carries ``controller_id``, ``controller_epoch`` and the
target's ``broker_epoch`` (the czxid of its ``/brokers/ids`` znode, KIP-380),
so a broker that restarted in between ignores requests meant for its
previous life. On each broker's queue the order is LeaderAndIsr,
UpdateMetadata, StopReplica (Kafka's order: a broker learns leadership
before metadata, and stops replicas last).

Used only from the controller's event task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from kavka.common.ids import NO_EPOCH, BrokerId
from kavka.common.leader_and_isr import LeaderIsrAndControllerEpoch
from kavka.common.listeners import SECURITY_PROTOCOLS
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, ReplicaAssignment
from kavka.controller.state_change_log import StateChangeLogger
from kavka.protocol.messages import (
    ZERO_UUID,
    LeaderAndIsrRequest,
    Message,
    StopReplicaRequest,
    UpdateMetadataRequest,
)

# UpdateMetadata's leader for a partition whose topic is being deleted, and
# StopReplica's leader epoch meaning "delete whatever the epoch" (Kafka's values).
LEADER_DURING_DELETE = -2
EPOCH_DURING_DELETE = -2

ResponseCallback = Callable[[int, Message, Message | None], None]


class RequestSink(Protocol):
    """What the batch sends through: ``ControllerChannelManager`` satisfies it."""

    def send(self, broker_id: int, request: Message, callback: ResponseCallback | None = None) -> None: ...


@dataclass(slots=True)
class _LeaderAndIsrEntry:
    leadership: LeaderIsrAndControllerEpoch
    assignment: ReplicaAssignment
    is_new: bool


@dataclass
class _Pending:
    leader_and_isr: dict[BrokerId, dict[TopicPartition, _LeaderAndIsrEntry]] = field(default_factory=dict)
    stop_replica: dict[BrokerId, dict[TopicPartition, bool]] = field(default_factory=dict)
    update_metadata_brokers: set[BrokerId] = field(default_factory=set)
    update_metadata_partitions: set[TopicPartition] = field(default_factory=set)

    def empty(self) -> bool:
        return not (self.leader_and_isr or self.stop_replica or self.update_metadata_brokers)


class ControllerBrokerRequestBatch:
    """Collects requests for one event, then ``send_requests`` (see module doc)."""

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        sink: RequestSink,
        listener_name: str,
        state_log: StateChangeLogger,
        *,
        on_leader_and_isr_response: ResponseCallback | None = None,
        on_stop_replica_response: ResponseCallback | None = None,
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.sink = sink
        self.listener_name = listener_name
        self.state_log = state_log
        self.on_leader_and_isr_response = on_leader_and_isr_response
        self.on_stop_replica_response = on_stop_replica_response
        self._p = _Pending()

    @property
    def is_empty(self) -> bool:
        return self._p.empty()

    # -- collecting ------------------------------------------------------------------------------

    def add_leader_and_isr(self, broker_ids: Iterable[BrokerId], tp: TopicPartition, is_new: bool = False) -> None:
        """Tell ``broker_ids`` (live ones only) the partition's current
        leadership; every live broker also gets its metadata."""
        leadership = self.context.leadership.get(tp)
        assignment = self.context.assignment(tp)
        if leadership is None or assignment is None:
            return
        live = self.context.live_brokers
        pending = self._p
        for b in broker_ids:
            if b in live:
                pending.leader_and_isr.setdefault(b, {})[tp] = _LeaderAndIsrEntry(leadership, assignment, is_new)
        # Called once per replica on a failover (30,000 times for 10,000
        # partitions of RF 3): the cheap form of add_update_metadata(live, [tp]).
        pending.update_metadata_brokers.update(live)
        pending.update_metadata_partitions.add(tp)

    def add_stop_replica(self, broker_ids: Iterable[BrokerId], tp: TopicPartition, delete: bool) -> None:
        for b in broker_ids:
            if b in self.context.live_brokers:
                per = self._p.stop_replica.setdefault(b, {})
                per[tp] = per.get(tp, False) or delete  # a delete request wins over a plain stop

    def add_update_metadata(self, broker_ids: Iterable[BrokerId], partitions: Iterable[TopicPartition]) -> None:
        self._p.update_metadata_brokers.update(b for b in broker_ids if b in self.context.live_brokers)
        self._p.update_metadata_partitions.update(partitions)

    def discard(self) -> None:
        """Drop what was collected (a deposed controller must not send it)."""
        self._p = _Pending()

    # -- sending -----------------------------------------------------------------------------------

    def send_requests(self) -> None:
        """Build and queue one request per broker and API; empties the batch."""
        p, self._p = self._p, _Pending()
        epoch = self.context.epoch
        # One partition-state value per distinct entry, shared by every
        # broker's request (a failover sends each partition to all its
        # replicas: building it once keeps a third of the objects).
        shared: dict[tuple[TopicPartition, int, int, bool], LeaderAndIsrRequest.TopicStates.PartitionStates] = {}
        for broker_id, entries in sorted(p.leader_and_isr.items()):
            req = self._leader_and_isr(broker_id, epoch, entries, shared)
            self.sink.send(broker_id, req, self.on_leader_and_isr_response)
        if p.update_metadata_brokers:
            topic_states = self._update_metadata_topics(epoch, p.update_metadata_partitions)
            live = self._live_brokers()
            for broker_id in sorted(p.update_metadata_brokers):
                update = UpdateMetadataRequest(
                    controller_id=self.controller_id,
                    controller_epoch=epoch,
                    broker_epoch=self.context.broker_epochs.get(broker_id, -1),
                    topic_states=topic_states,
                    live_brokers=live,
                )
                self.sink.send(broker_id, update, None)
        for broker_id, parts in sorted(p.stop_replica.items()):
            self.sink.send(broker_id, self._stop_replica(broker_id, epoch, parts), self.on_stop_replica_response)

    def _leader_and_isr(
        self, broker_id: BrokerId, epoch: int, entries: dict[TopicPartition, _LeaderAndIsrEntry],
        shared: dict[tuple[TopicPartition, int, int, bool], LeaderAndIsrRequest.TopicStates.PartitionStates],
    ) -> LeaderAndIsrRequest:
        L = LeaderAndIsrRequest
        by_topic: dict[str, list[LeaderAndIsrRequest.TopicStates.PartitionStates]] = {}
        leaders: set[BrokerId] = set()
        logging = self.state_log.sending_enabled  # the per-partition line costs more than the entry when nobody reads it
        become_leader = 0
        for tp, e in sorted(entries.items()):
            lai = e.leadership.leader_and_isr
            key = (tp, id(e.leadership), id(e.assignment), e.is_new)  # the entries keep both objects alive
            state = shared.get(key)
            if state is None:
                state = shared[key] = L.TopicStates.PartitionStates(
                    partition_index=tp.partition,
                    controller_epoch=e.leadership.controller_epoch,
                    leader=lai.leader,
                    leader_epoch=lai.leader_epoch,
                    isr=list(lai.isr),
                    partition_epoch=lai.zk_version,
                    replicas=list(e.assignment.replicas),
                    adding_replicas=list(e.assignment.adding),
                    removing_replicas=list(e.assignment.removing),
                    is_new=e.is_new,
                )
            by_topic.setdefault(tp.topic, []).append(state)
            leaders.add(lai.leader)
            become_leader += lai.leader == broker_id
            if logging:
                self.state_log.sending(
                    "LeaderAndIsr", broker_id, tp,
                    f"leader {lai.leader}, leader epoch {lai.leader_epoch}, isr {list(lai.isr)}, replicas {list(e.assignment.replicas)}",
                )
        live_leaders = []
        for leader in sorted(leaders):
            node = self.context.live_brokers.get(leader)
            ep = node.endpoint(self.listener_name) if node is not None else None
            if ep is not None:
                live_leaders.append(L.LiveLeaders(broker_id=leader, host_name=ep.host, port=ep.port))
        self.state_log.sent("LeaderAndIsr", broker_id, len(entries),
                            f" ({become_leader} become-leader, {len(entries) - become_leader} become-follower)")
        return L(
            controller_id=self.controller_id,
            controller_epoch=epoch,
            broker_epoch=self.context.broker_epochs.get(broker_id, -1),
            topic_states=[
                L.TopicStates(topic_name=t, topic_id=self.context.topic_ids.get(t, ZERO_UUID), partition_states=ps) for t, ps in by_topic.items()
            ],
            live_leaders=live_leaders,
        )

    def _update_metadata_topics(self, epoch: int, partitions: set[TopicPartition]) -> list[UpdateMetadataRequest.TopicStates]:
        U = UpdateMetadataRequest
        by_topic: dict[str, list[UpdateMetadataRequest.TopicStates.PartitionStates]] = {}
        for tp in sorted(partitions):
            entry = self.context.leadership.get(tp)
            assignment = self.context.assignment(tp)
            if entry is None or assignment is None:
                continue
            lai = entry.leader_and_isr
            deleting = tp.topic in self.context.topics_to_delete
            by_topic.setdefault(tp.topic, []).append(
                U.TopicStates.PartitionStates(
                    partition_index=tp.partition,
                    controller_epoch=entry.controller_epoch,
                    leader=LEADER_DURING_DELETE if deleting else lai.leader,
                    leader_epoch=lai.leader_epoch,
                    isr=list(lai.isr),
                    zk_version=lai.zk_version,
                    replicas=list(assignment.replicas),
                    offline_replicas=[r for r in assignment.replicas if not self.context.is_replica_online(r, tp)],
                )
            )
        return [U.TopicStates(topic_name=t, topic_id=self.context.topic_ids.get(t, ZERO_UUID), partition_states=ps) for t, ps in by_topic.items()]

    def _live_brokers(self) -> list[UpdateMetadataRequest.LiveBrokers]:
        U = UpdateMetadataRequest
        out = []
        for broker_id, node in sorted(self.context.live_brokers.items()):
            endpoints = [
                U.LiveBrokers.Endpoints(
                    port=ep.port, host=ep.host, listener=ep.listener_name, security_protocol=SECURITY_PROTOCOLS.index(ep.security_protocol)
                )
                for ep in node.endpoints
            ]
            out.append(U.LiveBrokers(id=broker_id, endpoints=endpoints, rack=node.rack))
        return out

    def _stop_replica(self, broker_id: BrokerId, epoch: int, parts: dict[TopicPartition, bool]) -> StopReplicaRequest:
        S = StopReplicaRequest
        by_topic: dict[str, list[StopReplicaRequest.TopicStates.PartitionStates]] = {}
        for tp, delete in sorted(parts.items()):
            lai = self.context.leader_and_isr(tp)
            leader_epoch = EPOCH_DURING_DELETE if delete else (lai.leader_epoch if lai is not None else NO_EPOCH)
            by_topic.setdefault(tp.topic, []).append(S.TopicStates.PartitionStates(partition_index=tp.partition, leader_epoch=leader_epoch, delete_partition=delete))
            if self.state_log.sending_enabled:
                self.state_log.sending("StopReplica", broker_id, tp, f"delete {delete}, leader epoch {leader_epoch}")
        self.state_log.sent("StopReplica", broker_id, len(parts), "")
        return S(
            controller_id=self.controller_id,
            controller_epoch=epoch,
            broker_epoch=self.context.broker_epochs.get(broker_id, -1),
            topic_states=[S.TopicStates(topic_name=t, partition_states=ps) for t, ps in by_topic.items()],
        )
